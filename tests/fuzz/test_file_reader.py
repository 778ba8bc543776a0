"""Issue 24's hostile files, one test per row (cases in :mod:`tests.fuzz.file_cases`), and the one
reader's own contract (:mod:`pcd._files`)."""
from __future__ import annotations

import os

import pytest

from pcd import _files as F
from tests.fuzz import file_cases


@pytest.mark.parametrize("name", list(file_cases.CASES))
def test_hostile_file_is_refused_in_one_line(tmp_path, name):
    assert file_cases.run_case(name, tmp_path) is None


def test_regular_file_inside_its_folder_is_read(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    assert F.read_json(tmp_path / "a.json", tmp_path) == {"x": 1}
    assert F.read_json("a.json", tmp_path) == {"x": 1}  # relative to the folder
    os.symlink(tmp_path / "a.json", tmp_path / "b.json")  # a link inside the folder is fine
    assert F.read_json(tmp_path / "b.json", tmp_path) == {"x": 1}


def test_link_out_and_traversal_are_refused(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "secret").write_text("s")
    os.symlink(tmp_path / "secret", tmp_path / "in" / "x")
    for p in (tmp_path / "in" / "x", "../secret", str(tmp_path / "secret")):
        with pytest.raises(F.FileRefused, match="must be inside"):
            F.read_text(p, tmp_path / "in", kind="json")


def test_size_bound_per_kind_is_checked_before_reading(tmp_path):
    p = tmp_path / "c.json"
    with open(p, "wb") as fh:
        fh.truncate(F.MAX_BYTES["config"] + 1)
    with pytest.raises(F.FileRefused, match=r"1048576-byte limit \(1.0 MiB\) for a config file"):
        F.read_bytes(p, tmp_path, kind="config")
    assert len(F.read_bytes(p, tmp_path, kind="json")) == F.MAX_BYTES["config"] + 1


def test_tail_reads_the_end_and_drops_the_cut_line(tmp_path):
    p = tmp_path / "log"
    p.write_text("".join(f"line {i}\n" for i in range(10_000)))
    text = F.read_tail(p, tmp_path, max_bytes=100)
    lines = text.splitlines()
    assert lines[-1] == "line 9999" and all(ln.startswith("line ") for ln in lines)
    assert F.tail_lines(p, tmp_path, 3) == ["line 9997", "line 9998", "line 9999"]
    assert F.tail_lines(tmp_path / "missing", tmp_path, 3) == []


def test_unknown_kind_and_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="unknown file kind"):
        F.read_bytes(tmp_path / "x", kind="nope")
    for bad in (None, 3, "", "a\x00b"):
        with pytest.raises(F.FileRefused, match="must be a file path"):
            F.read_bytes(bad, kind="json")
    with pytest.raises(F.FileRefused, match="is a folder"):
        F.read_bytes(tmp_path, kind="json")
    with pytest.raises(F.FileRefused, match="not a regular file"):
        F.read_bytes("/dev/null", kind="json")


@pytest.mark.parametrize("name,ok", [("12", True), ("007", True), ("²", False), ("٣", False), ("1a", False),
                                     ("", False), ("1" * 19, False)])
def test_plain_run_ids(name, ok):
    assert F.is_plain_id(name) is ok


def test_run_folder_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "data" / "runs" / "3")
    with pytest.raises(F.FileRefused, match="is a link"):
        F.run_folder(tmp_path / "data", 3)
    (tmp_path / "data" / "runs" / "4").mkdir()
    assert F.run_folder(tmp_path / "data", 4) == tmp_path / "data" / "runs" / "4"
