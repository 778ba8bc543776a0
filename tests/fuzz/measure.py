"""Re-measure the hardening tables of issues 12 and 24: ``python -m tests.fuzz.measure`` (a few minutes).

Prints one row per boundary: inputs tried -> failures, using the same case generators as the
fuzz tests (tests/fuzz/*_cases.py). A failure is a traceback, a hang, a silently accepted bad
input or a non-finite / wrong answer, as each module's docstring defines.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path


def main() -> int:
    from tests.fuzz import cli_cases, config_cases, file_cases, formula_cases, method_cases, qp_cases, store_cases

    rows = []
    t = time.time()
    n, f = formula_cases.sweep()
    rows.append(("custom formulas (grammar fuzz + hand-written + random text)", n, f, time.time() - t))
    t = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        cs = cli_cases.cases(Path(tmp))
        bad = []
        for argv in cs:
            outcome, rc, msg = cli_cases.run_case(argv, timeout_s=20)
            if outcome != "ok":
                bad.append(f"{outcome} rc={rc} {[a[:30] for a in argv]}: {msg[-120:]}")
    rows.append(("python -m pcd hostile arguments (one 'error:' line, exit 2)", len(cs), bad, time.time() - t))
    t = time.time()
    n, f = config_cases.sweep()
    rows.append(("run configs: refused at submit and flagged when read back", n, f, time.time() - t))
    t = time.time()
    n, f = qp_cases.sweep()
    rows.append(("solve_qp scale invariance, K = 3..64, c = 1e-300..1e300", n, f, time.time() - t))
    t = time.time()
    n, f = method_cases.sweep()
    rows.append(("every method at 1e+-300 / subnormal / tiny (finite or ValueError)", n, f, time.time() - t))
    t = time.time()
    n, f = file_cases.sweep()
    rows.append(("files and faults: links out, FIFOs, devices, bombs, huge files, tampered checkpoints", n, f,
                 time.time() - t))
    t = time.time()
    n, f = store_cases.sweep()
    rows.append(("store faults: disk full / read-only / permission x every write, lost database, odd run "
                 "folders, bad metrics.jsonl", n, f, time.time() - t))
    print("| boundary | tried | failures | seconds |")
    print("|---|---|---|---|")
    for name, n, f, s in rows:
        print(f"| {name} | {n} | {len(f)} | {s:.0f} |")
    for name, _, f, _ in rows:
        for line in f[:10]:
            print(f"  {name.split(' (')[0]}: {line}")
    return 0 if not any(r[2] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
