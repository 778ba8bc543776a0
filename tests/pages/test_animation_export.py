"""AppTest: the export buttons of the animated views (pcd.ui.animation_export) on the toy page, the
τ dial and the lesson's animated steps -- Build fills the progress bar and offers the file (read
back: frames and size), MP4 included; without PyAV the MP4 choice says so in one line and the
button is off."""
from __future__ import annotations

import io
import sys

import pytest
from PIL import Image

from tests.pages._apptest import open_page


def _build(at, key: str, fmt: str = "gif", size: str = "1280x720"):
    at.selectbox(key=f"{key}_size").set_value(size)
    at.radio(key=f"{key}_fmt").set_value(fmt)
    at.run()
    at.button(key=f"{key}_build").click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _file(at, key: str) -> bytes:
    """The built file (kept in the session) -- and its download button is on the page, labelled with its size."""
    sig, fmt, data = at.session_state[f"_pcd_anim_{key}"]
    buttons = [b for b in at.get("download_button") if b.proto.id.endswith(f"-{key}_download")]
    assert len(buttons) == 1 and buttons[0].proto.label == f"Download {fmt.upper()} ({len(data) / 1e6:.2f} MB)"
    return data


def _mp4_frames(data: bytes) -> tuple[int, tuple[int, int], str]:
    import av

    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        n = sum(1 for _ in c.decode(s))
        return n, (s.codec_context.width, s.codec_context.height), s.codec_context.pix_fmt


def test_toy_page_builds_gif_and_mp4(tmp_path, monkeypatch):
    at = open_page("02_Toy_landscapes.py", {"methods": "pcd,ws", "steps": "200"}, tmp_path, monkeypatch)
    assert not at.exception
    assert at.button(key="toy_anim_build").label == "Build animation"
    _build(at, "toy_anim", "gif")
    progress = at.get("progress")
    assert progress and progress[-1].proto.value == 100  # the bar ran to the end ("done: … MB")
    im = Image.open(io.BytesIO(_file(at, "toy_anim")))
    assert im.size == (1280, 720) and im.n_frames == 100
    pytest.importorskip("av")
    _build(at, "toy_anim", "mp4", "1920x1080")
    n, size, pix = _mp4_frames(_file(at, "toy_anim"))
    assert (n, size, pix) == (100, (1920, 1080), "yuv420p")


def test_tau_dial_builds_the_budget_curves(tmp_path, monkeypatch):
    at = open_page("05_Tau_dial.py", {"problem": "quadratic", "budgets": "100,300", "lr": "0.02"}, tmp_path,
                   monkeypatch)
    assert not at.exception
    _build(at, "td_anim", "gif")
    im = Image.open(io.BytesIO(_file(at, "td_anim")))
    assert im.size == (1280, 720) and im.n_frames == 100


@pytest.mark.parametrize("step,key", [(2, "lesson_saddle_anim"), (7, "lesson_tau_anim")])
def test_lesson_animated_steps_export(tmp_path, monkeypatch, step, key):
    at = open_page("00_Guided_lesson.py", {"step": str(step)}, tmp_path, monkeypatch)
    assert not at.exception
    _build(at, key, "gif")
    im = Image.open(io.BytesIO(_file(at, key)))
    assert im.size == (1280, 720) and im.n_frames == 100


def test_lesson_static_step_has_no_export(tmp_path, monkeypatch):
    at = open_page("00_Guided_lesson.py", {"step": "1"}, tmp_path, monkeypatch)
    assert not at.exception
    assert not [b for b in at.button if str(b.key).endswith("_build")]


def test_mp4_without_pyav_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # import av -> ImportError
    at = open_page("05_Tau_dial.py", {"problem": "quadratic", "budgets": "100", "lr": "0.02"}, tmp_path, monkeypatch)
    at.radio(key="td_anim_fmt").set_value("mp4")
    at.run()
    assert not at.exception
    assert at.button(key="td_anim_build").disabled
    lines = [c.value for c in at.caption if "PyAV" in str(c.value)]
    assert len(lines) == 1 and "\n" not in lines[0] and "pip install av" in lines[0]
