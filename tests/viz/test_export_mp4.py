"""Animations out, part 2 (pcd.viz.export): MP4 beside GIF, the objective-space panel beside the toy
map, the τ dial's budget curves played, the caption strip's settings, and the refusals of the
validation layer -- each file read back (Pillow for GIF, PyAV for MP4)."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from PIL import Image

import pcd.problems as problems
from pcd.cli import main
from pcd.experiments.animation import film_record, tau_budget_run
from pcd.experiments.synthetic import toy_run
from pcd.experiments.toy import objective_space
from pcd.viz import toy as toy_map
from pcd.viz.export import (
    OBJ_FRAC,
    EncoderMissing,
    _Strip,
    caption_text,
    check_export,
    mp4_missing,
    save_mp4,
    tau_animation,
    tau_colors,
    tau_frames,
    toy_animation,
    toy_frames,
    toy_map_box,
)
from pcd.viz.theme import method_color
from tests.viz._gif import gif_frames

SETTINGS = {"problem": "saddle2d", "methods": ["pcd", "ws", "mgda"], "tau": 0.02, "optimizer": "adam", "lr": 0.02,
            "steps": 600}
TAUS = [0.0, 0.02, 0.1, 0.5, 1.0]


@pytest.fixture(scope="module")
def saddle():
    prob = problems.make("saddle2d")
    res = toy_run("saddle2d", "pcd,ws,mgda", 600, 0.02, "adam", 0.02, None, record=200)
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    return prob, res, bg, objective_space(prob, res, bg["grid"])


@pytest.fixture(scope="module")
def taurun():
    return tau_budget_run("quadratic", TAUS, [50, 200], 0.02, frames=40)


def _mp4(data: bytes) -> tuple[list[np.ndarray], dict]:
    av = pytest.importorskip("av")
    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24").astype(int) for f in c.decode(s)]
        info = {"codec": s.codec_context.name, "pix_fmt": s.codec_context.pix_fmt, "fps": float(s.average_rate),
                "size": (s.codec_context.width, s.codec_context.height)}
    return frames, info


def _has(img: np.ndarray, hex_color: str, tol: int = 14, box=None) -> int:
    want = np.array([int(hex_color[i:i + 2], 16) for i in (1, 3, 5)])
    part = img if box is None else img[box[1]:box[3], box[0]:box[2]]
    return int((np.abs(part - want).max(axis=2) <= tol).sum())


def test_toy_mp4_frames_size_codec_read_back(saddle):
    _, res, bg, space = saddle
    pytest.importorskip("av")
    for size, n in (((1280, 720), 100), ((1920, 1080), 12)):
        data = toy_animation(res, bg, "mp4", size=size, settings=SETTINGS, max_frames=n, space=space)
        assert data[4:8] == b"ftyp" and len(data) <= 10_000_000
        frames, info = _mp4(data)
        assert len(frames) == n and frames[0].shape == (size[1], size[0], 3)
        assert info["codec"] == "h264" and info["pix_fmt"] == "yuv420p" and info["size"] == size
        assert info["fps"] == pytest.approx(22)
        assert np.abs(frames[0] - frames[-1]).sum() > 0  # it moves


def test_toy_gif_and_mp4_show_the_same_picture(saddle):
    """The two encoders get the same frames: a decoded MP4 frame is the GIF's within video-codec noise."""
    _, res, bg, space = saddle
    pytest.importorskip("av")
    g = gif_frames(toy_animation(res, bg, "gif", settings=SETTINGS, max_frames=20, space=space))
    m, _ = _mp4(toy_animation(res, bg, "mp4", settings=SETTINGS, max_frames=20, space=space))
    assert len(g) == len(m) == 20
    for f in (0, 10, 19):
        assert np.abs(g[f] - m[f]).mean() < 6, f


def test_objective_panel_beside_the_map(saddle):
    """With ``space`` the right OBJ_FRAC of the picture is the (f1, f2) plane: every method's
    current point is there in its colour, and PCD's moves (the symmetric methods' stall)."""
    _, res, bg, space = saddle
    frames = list(toy_frames(res, bg, size=(1280, 720), settings=SETTINGS, max_frames=10, space=space))
    panel = (int(1280 * (1 - OBJ_FRAC)), 0, 1280, 720 - 70)
    first, last = (np.asarray(f).astype(int) for f in (frames[0], frames[-1]))
    for m in res.methods:
        assert _has(last, method_color(m), box=panel) > 30, m
    assert np.linalg.norm(_centre(first, "pcd", panel) - _centre(last, "pcd", panel)) > 20
    # the map makes room for the panel: smaller, and left of it
    s_panel, ox_panel, _ = toy_map_box(res, bg["grid"], (1280, 720), objective=True)
    s_alone, ox_alone, _ = toy_map_box(res, bg["grid"], (1280, 720))
    xs = bg["grid"][0]
    assert s_panel < s_alone and ox_panel + (xs[-1] - xs[0]) * s_panel <= panel[0]


def _centre(img: np.ndarray, method: str, box) -> np.ndarray:
    want = np.array([int(method_color(method)[i:i + 2], 16) for i in (1, 3, 5)])
    part = img[box[1]:box[3], box[0]:box[2]]
    return np.argwhere(np.abs(part - want).max(axis=2) <= 14).mean(axis=0)


def test_tau_curves_frames_and_every_tau_drawn(taurun):
    frames = gif_frames(tau_animation(taurun, TAUS, [50, 200], "gif", front=None, max_frames=40,
                                settings={"problem": "quadratic", "τ": TAUS}))
    assert len(frames) == 40 and frames[0].shape == (720, 1280, 3)
    plot = frames[-1][:600, :1100]
    for c in tau_colors(TAUS):  # one point per τ, in its colour
        assert _has(plot, "#{:02x}{:02x}{:02x}".format(*c), tol=10) > 20, c
    assert np.abs(frames[0] - frames[-1]).sum() > 0


def test_tau_mp4_read_back(taurun):
    pytest.importorskip("av")
    frames, info = _mp4(tau_animation(taurun, TAUS, [50, 200], "mp4", size="1920x1080", max_frames=40))
    assert len(frames) == 40 and info["size"] == (1920, 1080) and info["pix_fmt"] == "yuv420p"


def test_tau_budget_run_records_the_frames_and_the_budgets(taurun):
    rec = [int(r) for r in taurun.record]
    assert rec == film_record(200, 40, [50, 200]) and 50 in rec and rec[0] == 0 and rec[-1] == 200
    assert taurun.losses.shape[:3] == (len(TAUS), taurun.losses.shape[1], len(rec))
    with pytest.raises(ValueError, match="the run has 5 instances"):
        list(tau_frames(taurun, TAUS[:3], [50]))


def test_caption_strip_carries_the_settings(saddle):
    """Every setting is in the strip's text (one line, or two split between settings), and the
    pixels of the strip change with the settings and only there."""
    _, res, bg, _ = saddle
    text = caption_text(SETTINGS)
    for part in ("problem saddle2d", "methods PCD, Weighted sum, MGDA", "tau 0.02", "optimizer adam", "lr 0.02",
                 "steps 600"):
        assert part in text
    for w, h in ((1280, 720), (1920, 1080), (640, 360)):
        strip = _Strip(w, h, SETTINGS, "step 600 / 600")
        assert "  ·  ".join(strip.lines) == text and len(strip.lines) <= 2
        assert max(strip.small.getlength(t) for t in strip.lines) <= w - 3 * strip.pad - strip.font.getlength(
            "step 600 / 600")
    a = np.asarray(next(iter(toy_frames(res, bg, settings=SETTINGS, max_frames=5)))).astype(int)
    b = np.asarray(next(iter(toy_frames(res, bg, settings={**SETTINGS, "lr": 0.05}, max_frames=5)))).astype(int)
    top = 720 - _Strip(1280, 720, SETTINGS, "").strip
    diff = np.abs(a - b).sum(axis=2)
    assert diff[top:].sum() > 0 and diff[:top].sum() == 0
    blank = np.asarray(next(iter(toy_frames(res, bg, max_frames=5)))).astype(int)
    assert (blank[top:, 640:].sum(axis=2) < 500).sum() == 0  # no settings: no text on the strip's right
    assert (a[top:, 640:].sum(axis=2) < 500).sum() > 200


@pytest.mark.parametrize("size,frames,match", [
    ("801x600", 10, "size must be 'WxH' with even W"),
    ((100, 100), 10, "size must be"),
    ("1280x720x2", 10, "size must be"),
    ("4000x2000", 10, "size must be"),
    ("1280x720", 1, r"frames must be in \[2, 1000\]"),
    ("1280x720", 1001, r"frames must be in \[2, 1000\]"),
    ("1280x720", "10", "frames must be an integer"),
    ("1280x720", 2.5, "frames must be an integer"),
])
def test_bad_sizes_and_frame_counts_refused_in_one_line(saddle, size, frames, match):
    _, res, bg, _ = saddle
    with pytest.raises(ValueError, match=match) as exc:
        check_export(size, frames)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match=match):
        toy_animation(res, bg, "gif", size=size, max_frames=frames)


def test_odd_frames_refused_by_the_mp4_encoder():
    pytest.importorskip("av")
    with pytest.raises(ValueError, match="frame size must be 'WxH' with even"):
        save_mp4([Image.new("RGB", (641, 360))])
    with pytest.raises(ValueError, match="no frames"):
        save_mp4([])


def test_without_pyav_mp4_says_so_in_one_line(saddle, monkeypatch, tmp_path, capsys):
    _, res, bg, _ = saddle
    monkeypatch.setitem(sys.modules, "av", None)  # import av -> ImportError
    line = mp4_missing()
    assert line and "\n" not in line and "pip install av" in line
    with pytest.raises(EncoderMissing, match="pip install av"):
        toy_animation(res, bg, "mp4", max_frames=5)
    assert toy_animation(res, bg, "gif", max_frames=5)[:6] == b"GIF89a"  # GIF still works
    rc = main(["toy", "--steps", "20", "--mp4", str(tmp_path / "x.mp4"), "--json", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--mp4: MP4 export needs PyAV" in err
    assert not (tmp_path / "x.json").exists()  # refused before the run


def test_cli_toy_writes_gif_and_mp4(tmp_path):
    pytest.importorskip("av")
    gif, mp4 = tmp_path / "toy.gif", tmp_path / "toy.mp4"
    rc = main(["toy", "--methods", "pcd,ws", "--steps", "300", "--lr", "0.02", "--tau", "0.02", "--frames", "30",
               "--gif", str(gif), "--mp4", str(mp4), "--size", "1920x1080", "--json", str(tmp_path / "t.json")])
    assert rc == 0
    im = Image.open(gif)
    assert im.size == (1920, 1080) and im.n_frames == 30
    frames, info = _mp4(mp4.read_bytes())
    assert len(frames) == 30 and info["size"] == (1920, 1080)


def test_cli_tau_writes_the_budget_curves(tmp_path):
    pytest.importorskip("av")
    gif, mp4 = tmp_path / "tau.gif", tmp_path / "tau.mp4"
    rc = main(["tau", "--problem", "quadratic", "--taus", "0,0.1,1", "--budgets", "50,200", "--lr", "0.02",
               "--frames", "25", "--gif", str(gif), "--mp4", str(mp4), "--json", str(tmp_path / "t.json")])
    assert rc == 0
    assert Image.open(gif).n_frames == 25 and Image.open(gif).size == (1280, 720)
    assert len(_mp4(mp4.read_bytes())[0]) == 25


@pytest.mark.parametrize("args,needle", [
    (["--size", "801x600"], "error: --size must be 'WxH'"),
    (["--frames", "1"], "error: --frames must be in [2, 1000], got 1"),
    (["--frames", "many"], "error: --frames must be an integer"),
])
def test_cli_refuses_bad_size_or_frames_in_one_line(tmp_path, capsys, args, needle):
    for cmd in (["toy", "--steps", "20"], ["tau", "--taus", "0,1", "--budgets", "20"]):
        rc = main(cmd + ["--gif", str(tmp_path / "x.gif"), *args, "--json", str(tmp_path / "x.json")])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and needle in err, (cmd, err)


def test_gradient_inset_under_the_map(saddle):
    """With ``grads`` (pcd.experiments.toy.trajectory_gradients of one start) a row of panels sits under the
    map -- the map gives up INSET_FRAC of the height for it -- and its arrows move with the frames."""
    from pcd.experiments.toy import trajectory_gradients
    from pcd.viz.export import INSET_FRAC
    from pcd.viz.theme import objective_color

    prob, res, bg, space = saddle
    grads = trajectory_gradients(prob, res, 0)
    frames = [np.asarray(f).astype(int) for f in toy_frames(res, bg, settings=SETTINGS, max_frames=10, space=space,
                                                            grads=grads)]
    s_in, _, oy_in = toy_map_box(res, bg["grid"], (1280, 720), objective=True, inset=True)
    s_out, _, _ = toy_map_box(res, bg["grid"], (1280, 720), objective=True)
    ys = bg["grid"][1]
    map_bottom = oy_in + (ys[-1] - ys[0]) * s_in
    strip_top = 720 - _Strip(1280, 720, SETTINGS, "").strip
    row = (0, int(strip_top - 720 * INSET_FRAC), int(1280 * (1 - OBJ_FRAC)), strip_top)
    assert s_in <= s_out and map_bottom <= row[1] + 1
    # g1 (the primary's colour) is drawn in the row at the first frame, and the row changes as it plays
    assert _has(frames[0], objective_color(0), tol=20, box=row) > 20
    assert np.abs(frames[0][row[1]:row[3], :row[2]] - frames[5][row[1]:row[3], :row[2]]).sum() > 0
    for m in res.methods:  # each panel's title in its method's colour
        assert _has(frames[0], method_color(m), tol=20, box=row) > 10, m


def _boxes(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[str, int, int]]:
    """The ISO-BMFF boxes between ``start`` and ``end``: ``(type, payload start, box end)``."""
    out, i, end = [], start, len(data) if end is None else end
    while i + 8 <= end:
        n = int.from_bytes(data[i:i + 4], "big")
        kind = data[i + 4:i + 8].decode("latin-1")
        head = 8
        if n == 1:
            n, head = int.from_bytes(data[i + 8:i + 16], "big"), 16
        elif n == 0:
            n = end - i
        assert n >= head, (kind, n)
        out.append((kind, i + head, i + n))
        i += n
    return out


def _find(data: bytes, path: list[str]) -> tuple[int, int]:
    """Payload range of the box at ``path`` (``["moov", "trak", "mdia", ...]``, first match each level)."""
    lo, hi = 0, len(data)
    for kind in path:
        lo, hi = next((a, b) for k, a, b in _boxes(data, lo, hi) if k == kind)
        if kind == "stsd":
            lo += 8  # version/flags + entry count
        elif kind == "avc1":
            lo += 78  # the visual sample entry's fixed fields
    return lo, hi


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_mp4_is_what_powerpoint_and_keynote_play(saddle, size):
    """What PowerPoint (Windows/Mac) and Keynote accept, checked on the bytes and by PyAV reading back
    (neither is run here): H.264 High (or Main) at level <= 4.2, yuv420p, even sides, the index (moov)
    before the media (mdat: faststart, it plays while it loads), one constant frame duration, no B-frames
    (decode order = display order: no composition offsets, no negative start), and a sync sample first."""
    av = pytest.importorskip("av")
    _, res, bg, space = saddle
    data = toy_animation(res, bg, "mp4", size=size, settings=SETTINGS, max_frames=40, space=space)
    top = [k for k, _, _ in _boxes(data)]
    assert top[0] == "ftyp" and "moov" in top and "mdat" in top
    assert top.index("moov") < top.index("mdat"), top  # faststart
    lo, hi = _find(data, ["moov", "trak", "mdia", "minf", "stbl", "stsd", "avc1", "avcC"])
    version, profile, _compat, level = data[lo:lo + 4]
    assert version == 1 and profile in (100, 77), profile  # 100 = High, 77 = Main
    assert level <= 42, level
    stbl = _find(data, ["moov", "trak", "mdia", "minf", "stbl"])
    inside = [k for k, _, _ in _boxes(data, *stbl)]
    assert "ctts" not in inside, inside  # no composition offsets: no B-frames
    lo, hi = _find(data, ["moov", "trak", "mdia", "minf", "stbl", "stts"])
    assert int.from_bytes(data[lo + 4:lo + 8], "big") == 1  # one (count, duration) run: constant frame rate
    assert int.from_bytes(data[lo + 8:lo + 12], "big") == 40
    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        cc = s.codec_context
        assert cc.name == "h264" and cc.profile in ("High", "Main") and cc.pix_fmt == "yuv420p"
        assert (cc.width, cc.height) == size and cc.width % 2 == 0 and cc.height % 2 == 0
        assert not cc.has_b_frames
        packets = [p for p in c.demux(s) if p.size]
        assert len(packets) == 40 and packets[0].is_keyframe
        assert all(p.pts == p.dts for p in packets)  # decode order is display order
        assert packets[0].pts == 0
        steps = {b.pts - a.pts for a, b in zip(packets, packets[1:])}
        assert len(steps) == 1 and {p.duration for p in packets} == steps  # constant frame rate
        assert float(1 / (next(iter(steps)) * s.time_base)) == pytest.approx(float(s.average_rate))
