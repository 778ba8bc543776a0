"""Reading an exported GIF back (``tests/viz/test_export.py``, ``tests/viz/test_export_mp4.py``)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image


def gif_frames(data: bytes) -> list[np.ndarray]:
    """Every frame of the GIF ``data`` as an RGB integer array ``[H, W, 3]``."""
    im = Image.open(io.BytesIO(data))
    out = []
    for i in range(im.n_frames):
        im.seek(i)
        out.append(np.asarray(im.convert("RGB")).astype(int))
    return out
