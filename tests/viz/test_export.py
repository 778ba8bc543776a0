"""Animations out (pcd.viz.export): the toy GIF has the requested frames and size (read back), shows
the run (each head where the engine put it, in its method's colour), carries the settings in its
caption strip, stays small; the CLI writes it."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import pcd.problems as problems
from pcd.cli import main
from pcd.engine import run
from pcd.experiments import toy as xtoy
from pcd.viz import toy as toy_map
from pcd.viz.export import SLIDE_SIZES, caption_text, toy_gif, toy_map_box
from pcd.viz.landscape import frame_index
from pcd.viz.theme import method_color
from tests.viz._gif import gif_frames


@pytest.fixture(scope="module")
def saddle():
    prob = problems.make("saddle2d")
    res = xtoy.merge_results([run(prob, [m], steps=1000, lr=0.02, method_params={"pcd": {"tau": 0.02}}
                                    if m == "pcd" else None) for m in ("pcd", "ws", "mgda")])
    return prob, res, toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))


def test_gif_frames_size_heads_and_caption(saddle):
    prob, res, bg = saddle
    settings = {"problem": "saddle2d", "methods": res.methods, "tau": 0.02, "optimizer": "adam", "lr": 0.02,
                "steps": 1000}
    data = toy_gif(res, bg, size=SLIDE_SIZES["1280x720"], settings=settings, max_frames=40)
    assert data[:6] == b"GIF89a" and len(data) <= 10_000_000
    frames = gif_frames(data)
    idx = frame_index(len(res.record), 40)
    assert len(frames) == len(idx) == 40 and frames[0].shape == (720, 1280, 3)
    assert np.abs(frames[0] - frames[-1]).sum() > 0
    # where the engine put each head, the frame shows that method's colour (the view box of the map,
    # 1:1 units, centred above the caption strip)
    xs, ys = bg["grid"][0], bg["grid"][1]
    h, w, strip = 720, 1280, max(28, round(720 * 0.085))
    scale, ox, oy = toy_map_box(res, bg["grid"], (w, h))
    assert scale > 0 and 0 <= ox < w // 2 and 0 < oy < h // 2
    for f in (0, 20, 39):
        m = 0  # PCD, drawn on top
        for s in range(res.S):
            x, y = res.positions[m, s, idx[f]]
            col = frames[f][int(round(oy + (ys[-1] - y) * scale)), int(round(ox + (x - xs[0]) * scale))]
            want = np.array([int(method_color("pcd")[i:i + 2], 16) for i in (1, 3, 5)])
            assert np.abs(col - want).max() <= 12, (f, s, col, want)
    # the caption strip says the settings (dark text pixels on its light background)
    strip_px = frames[-1][h - strip + 4:h - 4]
    assert (strip_px.sum(axis=2) < 400).sum() > 500
    assert caption_text(settings).startswith("problem saddle2d  ·  methods PCD, Weighted sum, MGDA")


def test_gif_slide_size_1920(saddle):
    _, res, bg = saddle
    frames = gif_frames(toy_gif(res, bg, size=SLIDE_SIZES["1920x1080"], max_frames=5))
    assert len(frames) == 5 and frames[0].shape == (1080, 1920, 3)
    with pytest.raises(ValueError, match="size"):
        toy_gif(res, bg, size=(100, 100))


def test_cli_writes_the_gif(tmp_path, capsys):
    out = tmp_path / "toy.gif"
    rc = main(["toy", "--methods", "pcd,ws", "--steps", "200", "--lr", "0.02", "--tau", "0.02",
               "--gif", str(out), "--json", str(tmp_path / "toy.json")])
    assert rc == 0
    im = Image.open(out)
    assert im.size == (1280, 720) and im.n_frames == toy_map.TOY_FRAMES
    assert main(["toy", "--steps", "20", "--gif", str(out), "--size", "801x600",
                 "--json", str(tmp_path / "t.json")]) == 2
    assert "--size" in capsys.readouterr().err
