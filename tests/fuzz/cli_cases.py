"""The CLI hostile-argument table: every call must print one line ``error: ...`` and exit 2.

``cases(tmp)`` builds the table (argv lists, ``{tmp}`` a scratch folder with a few prepared
files); :func:`run_case` calls ``pcd.cli.main`` in-process and classifies the outcome. Used by
``tests/fuzz/test_cli_hostile.py`` and by ``python -m tests.fuzz.measure``.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import traceback
from pathlib import Path

BIG = "9" * 400
DEEP = "[" * 5000 + "]" * 5000
ID20 = "12345678901234567890"


def prepare(tmp: Path) -> dict[str, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    files = {
        "deep": DEEP,
        "bigtau": '{"gram": [[1, 0], [0, 1]], "tau": ' + BIG + "}",
        "nan": "[[NaN, 0], [0, 1]]",
        "notjson": "this is not json",
        "cfg_epochs": json.dumps({"dataset": "digits", "epochs": 10**9}),
        "cfg_seed": json.dumps({"dataset": "digits", "seed": 10**30}),
        "cfg_deep": '{"method_params": ' + "[" * 5000 + "]" * 5000 + "}",
        "cfg_bigint": '{"tau": ' + BIG + "}",
        "cfg_tau_str": json.dumps({"tau": "0.1"}),
        "cfg_list_bad": json.dumps([{"dataset": "digits"}, 5]),
        "binary": None,
    }
    out = {}
    for name, body in files.items():
        p = tmp / f"{name}.json"
        if body is None:
            p.write_bytes(b"\xff\xfe\x00\x01" * 10)
        else:
            p.write_text(body)
        out[name] = str(p)
    (tmp / "afile").write_text("x")
    out["afile"] = str(tmp / "afile")
    out["data"] = str(tmp / "data")
    return out


def cases(tmp: Path) -> list[list[str]]:
    f = prepare(tmp)
    d = ["--data-dir", f["data"]]
    G = "[[1,0.5],[0.5,1]]"
    c: list[list[str]] = []
    # solve
    c += [["solve", "--gram", x] for x in (
        f["deep"], DEEP, f["bigtau"], "/proc/self/mem", "/dev/zero", "/sys/kernel", f["notjson"], f["binary"],
        "[[" + BIG + ",0],[0,1]]", "[[1e400,0],[0,1]]", f["nan"], "[[1,2],[3]]", '{"tau": 0.1}', "[]",
        "[[[1]]]", "[[-1,0],[0,1]]", "[[1,0],[5,1]]", "[[1,0],[0,1]]x", tmp.as_posix(), "\x00")]
    c += [["solve", "--gram", G, "--tau", x] for x in (BIG, "nan", "inf", "-1", "2", "x")]
    c += [["solve", "--gram", G, "--tau-json", x] for x in (DEEP, "[" + BIG + "]", '"0.1"', "[0.1, 0.2, 0.3]", "{}")]
    c += [["solve", "--gram", G, "--json", x] for x in ("/dev/full", "/sys/x", "/proc/1/x", f"{tmp}/no/x.json",
                                                           str(tmp), "/dev/zero")]
    # toy / kdw / tau / scale / geometry
    c += [["toy", "--steps", x] for x in (BIG, "0", "-5", "1e30", "nan", "x", str(10**12))]
    c += [["toy", "--lr", x] for x in (BIG, "nan", "0", "-1", "1e400")]
    c += [["toy", "--tau", x] for x in (BIG, "nan", "2")]
    c += [["toy", "--seed", x] for x in (BIG, ID20, "-1", "x")]
    c += [["toy", "--starts", x] for x in (BIG + "," + BIG, "nan,nan", "1", ";;;", "1,2,3", "inf,0")]
    c += [["toy", "--problem", x] for x in ("nope", "", "\x00", "x" * 10000)]
    c += [["toy", "--methods", x] for x in ("nope", "", ",,,", "pcd," * 1000)]
    c += [["toy", "--optimizer", "rmsprop"], ["toy", "--json", "/dev/full"], ["toy", "--json", "/sys/x"]]
    c += [["kdw", "--K", x] for x in (BIG, "1", "0", "-3", "2,1e30", "x", str(10**6), "2," + ID20)]
    c += [["kdw", "--steps", BIG], ["kdw", "--methods", "nope"]]
    c += [["tau", "--taus", x] for x in (BIG, "nan", "0:1:0", "0:1:-1", "0:1:1e-300", "2", "x")]
    c += [["tau", "--problem", "nope"], ["tau", "--method", "ws"], ["tau", "--starts", "nan,1"]]
    c += [["scale", "--exponents", x] for x in (BIG, "0:1e30:1", "0:5:0", "x", "-400:400:1", "1e400")]
    c += [["scale", "--average-last", x] for x in (BIG, "nan", "2", "-1", "x")]
    c += [["scale", "--methods", "nope"]]
    c += [["geometry", "--angle", x] for x in (BIG, "nan", "-1", "181")]
    c += [["geometry", "--norm2", x] for x in (BIG, "inf", "-1")]
    c += [["geometry", "--g3", x] for x in (BIG + "," + BIG, "1", "x,y", "nan,1", "1,2,3")]
    c += [["geometry", "--tau", BIG], ["geometry", "--methods", "nope"], ["geometry", "--json", "/dev/full"]]
    # constrained / jd
    c += [["constrained", "--eps", x] for x in (BIG, "nan", "-1")]
    c += [["constrained", "--c", BIG], ["constrained", "--x0", BIG], ["constrained", "--tau", BIG],
          ["constrained", "--toy-steps", BIG], ["constrained", "--rate-steps", str(10**12)],
          ["constrained", "--json", "/dev/full"]]
    c += [["jd", "--samples", x] for x in (BIG, "0", str(10**9))]
    c += [["jd", "--seed", BIG], ["jd", "--seed", ID20], ["jd", "--tau", BIG], ["jd", "--methods", "nope"],
          ["jd", "--no-properties", "--seeds", BIG], ["jd", "--no-properties", "--steps", str(10**12)],
          ["jd", "--no-properties", "--batch-size", BIG], ["jd", "--no-properties", "--n-train", "0"],
          ["jd", "--no-properties", "--no-iwrm", "--memory", "--batch-sizes", BIG],
          ["jd", "--no-properties", "--no-iwrm", "--memory", "--width", str(10**9)],
          ["jd", "--no-properties", "--no-iwrm", "--memory", "--repeats", str(10**9)],
          ["jd", "--json", "/dev/full"]]
    # prune (fails in validation before any training)
    p = ["prune", "--out", f"{tmp}/out"]
    c += [p + ["--epochs", x] for x in (str(10**9), BIG, "0")]
    c += [p + ["--seed", x] for x in (str(10**30), "-1")]
    c += [p + ["--batch-size", str(10**12)], p + ["--lr", "1e-300"], p + ["--lr", BIG], p + ["--tau", BIG],
          p + ["--latency-repeats", str(10**9)], p + ["--threads", str(10**6)], p + ["--data-dir", "/etc"],
          p + ["--data-dir", "/proc/1"], p + ["--method-params", DEEP], p + ["--method-params", '{"tau": "0.1"}'],
          p + ["--method-params", "[1]"], p + ["--method", "nope"], p + ["--max-train-samples", BIG],
          p + ["--target-reduction", BIG], p + ["--export-threshold", "nan"], p + ["--device", "tpu"]]
    c += [["prune", "--out", x, "--epochs", "1", "--max-train-samples", "64", "--max-test-samples", "64"]
          for x in (f["afile"], "/sys/x", "/proc/1/x", f"{f['afile']}/sub")]
    c += [["prune", "--out", f"{tmp}/out2", "--json", x] for x in ("/dev/full", "/sys/x")]
    # runs
    c += [["runs", "submit", *d, "--config", x] for x in (
        "/dev/zero", "/proc/self/mem", "/sys/kernel", f["deep"], f["cfg_deep"], f["cfg_epochs"], f["cfg_seed"],
        f["cfg_bigint"], f["cfg_tau_str"], f["cfg_list_bad"], f["notjson"], f["binary"], f"{tmp}/missing",
        str(tmp))]
    c += [["runs", "submit", *d, "--config", f["cfg_tau_str"], "--priority", x] for x in (BIG, ID20)]
    c += [["runs", "submit", *d, "--config", f["cfg_tau_str"], "--max-attempts", x] for x in (BIG, "0")]
    for action in ("show", "cancel", "retry", "delete"):
        c += [["runs", action, *d, x] for x in (ID20, BIG, "-1", "0", "x", "1e3", "nan")]
    c += [["runs", "list", "--data-dir", x] for x in ("/proc/1", "/sys", "/dev/full", f["afile"], "/etc", "\x00")]
    c += [["runs", "list", *d, "--json", x] for x in ("/dev/full", "/sys/x")]
    c += [["runs", "show", *d, "1", "--json", "/dev/full"]]
    # worker (fails before serving)
    c += [["worker", *d, "--slots", x] for x in (BIG, "0", str(10**6))]
    c += [["worker", *d, "--poll", x] for x in (BIG, "nan", "-1", "inf")]
    c += [["worker", *d, "--stall-timeout", "nan"], ["worker", *d, "--idle-exit", "nan"],
          ["worker", *d, "--cancel-grace", "-1"],
          ["worker", "--data-dir", "/proc/1"], ["worker", "--data-dir", f["afile"]]]
    return c


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_case(argv: list[str], timeout_s: int = 20) -> tuple[str, int | None, str]:
    """Call ``pcd.cli.main(argv)``; returns (outcome, exit code, stderr). ``outcome`` is ``ok``
    (one ``error:`` line and exit 2), ``accepted`` (exit 0: the bad input went through), ``bad``
    (another exit code / several lines), ``traceback`` (an exception escaped) or ``hang``
    (still running after ``timeout_s``: a hostile value was accepted and started work)."""
    import signal

    from pcd.cli import main

    err, out = io.StringIO(), io.StringIO()
    env_before = os.environ.get("PCD_NO_AUTOSTART")
    os.environ["PCD_NO_AUTOSTART"] = "1"
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
    except _Timeout:
        return "hang", None, err.getvalue()[-300:]
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return "traceback", None, "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        if env_before is None:
            os.environ.pop("PCD_NO_AUTOSTART", None)
    text = err.getvalue().strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("epoch ")]
    if rc == 2 and len(lines) == 1 and lines[0].startswith("error: "):
        return "ok", rc, text
    if rc == 0:
        return "accepted", rc, text
    return "bad", rc, text
