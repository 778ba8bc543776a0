"""pcd._validate: the one validation layer (typed checks, bounds, bounded reads, strict JSON, paths)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from pcd import _validate as V


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 300, msg
    return msg


@pytest.mark.parametrize("bad", ["3", True, 3.5, None, [3], float("nan"), 1e30])
def test_integer_is_typed(bad):
    with pytest.raises(V.Invalid) as e:
        V.integer(bad, "epochs", low=1)
    assert one_line(e).startswith("epochs must be")


def test_integer_accepts_numpy_and_bounds():
    assert V.integer(np.int64(5), "k", low=1, high=9) == 5
    with pytest.raises(V.Invalid, match=r"k must be in \[1, 9\], got 10"):
        V.integer(10, "k", low=1, high=9)
    assert V.integer(None, "k", allow_none=True) is None


def test_integer_text_mode():
    assert V.integer("1e3", "n", strict=False) == 1000
    assert V.integer(" 7 ", "n", strict=False) == 7
    with pytest.raises(V.Invalid, match="at most 100 characters"):
        V.integer("9" * 400, "n", strict=False)
    with pytest.raises(V.Invalid):
        V.integer("1.5", "n", strict=False)


@pytest.mark.parametrize("bad", ["0.1", True, None, float("inf"), float("nan"), 10**400, "x", [0.1]])
def test_number_is_typed_and_finite(bad):
    with pytest.raises(V.Invalid) as e:
        V.number(bad, "tau", low=0, high=1)
    assert one_line(e).startswith("tau must be")


def test_number_bounds_open_and_closed():
    assert V.number(np.float32(0.5), "lr", low=0, high=1, open_low=True) == 0.5
    with pytest.raises(V.Invalid, match=r"lr must be in \(0, 1\], got 0.0"):
        V.number(0.0, "lr", low=0, high=1, open_low=True)
    assert V.number("2.5", "x", strict=False) == 2.5
    with pytest.raises(V.Invalid):
        V.number("1e400", "x", strict=False)


def test_boolean_choice_text_seed_limit():
    assert V.boolean(np.bool_(True), "b") is True
    with pytest.raises(V.Invalid):
        V.boolean(1, "b")
    assert V.boolean("on", "b", strict=False) is True
    assert V.choice("sgd", "optimizer", ["adam", "sgd"]) == "sgd"
    with pytest.raises(V.Invalid, match="optimizer must be one of adam, sgd, got 'rms'"):
        V.choice("rms", "optimizer", ["adam", "sgd"])
    with pytest.raises(V.Invalid):
        V.choice(True, "x", [1, 2])
    with pytest.raises(V.Invalid):
        V.text("a\x00b", "name")
    with pytest.raises(V.Invalid, match="at most 5"):
        V.text("abcdefg", "name", max_len=5)
    assert V.seed(2**63 - 1) == 2**63 - 1
    with pytest.raises(V.Invalid):
        V.seed(2**63)
    with pytest.raises(V.Invalid):
        V.seed(10**30)
    assert V.limit("epochs", 3) == 3
    with pytest.raises(V.Invalid, match=r"epochs must be in \[1, 10000\]"):
        V.limit("epochs", 10**9)


def test_show_is_short_and_one_line():
    s = V.show("x\n" * 1000)
    assert "\n" not in s and len(s) <= 60


def test_parse_json_limits():
    assert V.parse_json('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    for bad, pat in [("[" * 5000 + "]" * 5000, "nest at most"), ("NaN", "NaN"), ("[Infinity]", "Infinity"),
                     ("9" * 400, "at most 100"), ("1e400", "float range"), ("{", "not valid JSON"),
                     ("x" * 100, "not valid JSON")]:
        with pytest.raises(V.Invalid, match=pat) as e:
            V.parse_json(bad, "config")
        one_line(e)
    with pytest.raises(V.Invalid, match="at most 10 bytes"):
        V.parse_json(" " * 11, max_bytes=10)
    assert V.json_depth('{"a": "[[[[", "b": [[1]]}') == 3


def test_read_bytes_refuses_special_files(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"x": 1}))
    assert V.load_json(f) == {"x": 1}
    big = tmp_path / "big"
    big.write_bytes(b"0" * 1001)
    with pytest.raises(V.Invalid, match="1000-byte limit"):
        V.read_bytes(big, max_bytes=1000)
    for special in ("/dev/zero", "/proc/self/mem", "/dev/full"):
        if os.path.exists(special):
            with pytest.raises(V.Invalid) as e:
                V.read_bytes(special)
            one_line(e)
    with pytest.raises(V.Invalid, match="is a folder"):
        V.read_bytes(tmp_path)
    with pytest.raises(V.Invalid, match="no such file"):
        V.read_bytes(tmp_path / "nope")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(V.Invalid, match="UTF-8"):
        V.read_text(tmp_path / "bin")


def test_inside(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "m.pt").write_bytes(b"x")
    assert V.inside("m.pt", tmp_path / "run") == (tmp_path / "run" / "m.pt").resolve()
    for bad in ("/etc/passwd", "../x", str(tmp_path / "run" / ".." / "other")):
        with pytest.raises(V.Invalid, match="must be inside"):
            V.inside(bad, tmp_path / "run")
    os.symlink("/etc/passwd", tmp_path / "run" / "link")
    with pytest.raises(V.Invalid, match="must be inside"):
        V.inside(tmp_path / "run" / "link", tmp_path / "run")
    for bad in (None, 5, "", "a\x00b"):
        with pytest.raises(V.Invalid):
            V.inside(bad, tmp_path)


def test_writable_targets(tmp_path):
    assert V.writable_file(tmp_path / "out.json") == tmp_path / "out.json"
    for bad in ("/dev/full", "/sys/x", "/proc/1/x", str(tmp_path / "nofolder" / "x.json"), str(tmp_path)):
        with pytest.raises(V.Invalid) as e:
            V.writable_file(bad)
        assert one_line(e).startswith("cannot write")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(V.Invalid, match="not a folder"):
        V.writable_dir(f)
    with pytest.raises(V.Invalid, match="cannot create"):
        V.writable_dir(f / "sub")
    with pytest.raises(V.Invalid):
        V.writable_dir("/sys/pcd-test")
    assert V.writable_dir(tmp_path / "new" / "deep").is_dir()


# ---- query parameters (shared links) ---------------------------------------------------------

@pytest.mark.parametrize("raw,default,kw,want", [
    ("3", 1, {}, 3), ("1e3", 1, {}, 1000), ("150", 0, {"low": 0, "high": 180}, 150),
    ("0.25", 0.5, {"low": 0.0, "high": 1.0}, 0.25), ("1e-20", 1e-8, {"allowed": [1e-8, 1e-16, 1e-20]}, 1e-20),
    ("on", False, {}, True), ("0", True, {}, False), ("", True, {}, False),
    ("sgd", "adam", {"allowed": ["adam", "sgd"]}, "sgd"),
    ("pcd,nope,ws", ["pcd"], {"allowed": ["pcd", "ws", "mgda"]}, ["pcd", "ws"]),
    ("8,32", [8, 16], {"allowed": [8, 16, 32, 64]}, [8, 32]),   # list items take the default's item type
    ("1", 0.5, {"allowed": [0, 0.5, 1]}, 1.0),                  # a float matches an allowed integer
    ("x**2", "y", {}, "x**2"),
])
def test_query_value_reads_good_links(raw, default, kw, want):
    got = V.query_value(raw, default, "p", **kw)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("raw,default,kw", [
    ("abc", 1, {}), ("1.5", 1, {}), ("nan", 0.1, {}), ("inf", 0.1, {}), ("-1e309", 1.0, {}), ("1e999", 0, {}),
    ("7", 0.3, {"low": 0.0, "high": 1.0}), ("-5", 1000, {"low": 1}), ("200", 100, {"allowed": [25, 50, 100]}),
    ("0.03", 0.02, {"allowed": [0.01, 0.02]}), ("rmsprop", "adam", {"allowed": ["adam", "sgd"]}),
    ("maybe", False, {}), ("9" * 101, 1, {}), ("nope,__import__('os')", ["pcd"], {"allowed": ["pcd", "ws"]}),
    ("a,b", [8], {"allowed": [8, 16]}), ("x\x00", "y", {}), ("x" * 20_000, "y", {}),
    (["not", "text"], 1, {}),
])
def test_query_value_refuses_hostile_links_in_one_line(raw, default, kw):
    with pytest.raises(V.Invalid) as e:
        V.query_value(raw, default, "p", **kw)
    msg = str(e.value)
    assert msg.startswith("p ") and "\n" not in msg and len(msg) < 400


def test_query_json_limits():
    assert V.query_json('{"pcd": {"tau": 0.1}}', "hp") == {"pcd": {"tau": 0.1}}
    for bad in ("[" * 9 + "]" * 9, "x" * (V.MAX_QUERY_JSON_BYTES + 1), '{"a": NaN}', "{", "1" * 120):
        with pytest.raises(V.Invalid):
            V.query_json(bad, "hp")


def test_box():
    assert V.box("-3.5, 3.5, -2, 2") == ((-3.5, 3.5), (-2.0, 2.0))
    assert V.box([[-1, 1], [0, 2]]) == ((-1.0, 1.0), (0.0, 2.0))
    for bad in ("1, -1, 0, 2", "1,2,3", "a, 1, 0, 1", "0, 1e9, 0, 1", "nan, 1, 0, 1", [[0, 1]], 5):
        with pytest.raises(V.Invalid) as info:
            V.box(bad)
        assert "\n" not in str(info.value) and "xmin, xmax, ymin, ymax" in str(info.value) or "map bounds" in str(info.value)
