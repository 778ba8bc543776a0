"""The one strict-JSON writer: NumPy arrays/scalars -> lists/numbers, NaN/inf -> null, dataclasses
-> dicts, paths -> strings, dict keys -> strings; anything else JSON cannot hold is a TypeError.

Used by the CLI (``--json``), the pruning runs' files and the run store (reading JSON is
:func:`pcd._validate.parse_json`'s job).
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any

import numpy as np

__all__ = ["jsonable", "dumps"]


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (strict: no NaN/inf; see the module docstring)."""
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, PurePath):
        return str(obj)
    raise TypeError(f"value of type {type(obj).__name__} is not JSON-serialisable")


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Strict JSON text of ``obj`` (:func:`jsonable` first; ``allow_nan=False``)."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)
