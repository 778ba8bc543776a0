"""Before/after table from the outputs of ``benchmarks/ab.sh`` (the minimum over its rounds per figure).

    python benchmarks/ab_table.py [OUT_DIR]     (default /tmp/pcd-ab)

Prints one Markdown table per benchmark: bench_engine (seconds per method and in total, 15 methods x
3 starts x 3000 steps), bench_qp (median ms per solve), bench_methods (us per call) and bench_basin (s
per basin map, 100 x 100 starts x 1,000 steps), with the
after/before ratio; a ratio above 1 is slower. Minima, because these machines are noisy and noise
only ever adds time.
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path


def _matched_lines(text: str, pattern: str, key: Callable[[re.Match], str]) -> dict[str, float]:
    """``key(m) -> float(last group)`` for every line that ``pattern`` matches (``re.match``)."""
    out = {}
    for line in text.splitlines():
        m = re.match(pattern, line)
        if m:
            out[key(m)] = float(m.groups()[-1])
    return out


def _engine(text: str) -> dict[str, float]:
    return _matched_lines(text, r"\s+(\S+(?: nashmtl)?)\s+([0-9.]+) s", lambda m: m.group(1))


def _qp(text: str) -> dict[str, float]:
    return _matched_lines(text, r"\s*(\d+)\s+(full rank|rank deficient)\s+([0-9.]+)",
                          lambda m: f"K={m.group(1)} {m.group(2)}")


def _methods(text: str) -> dict[str, float]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = next((ln.split()[1:] for ln in lines if ln.startswith("method")), [])
    out = {}
    for ln in lines:
        parts = ln.split()
        if len(parts) == len(head) + 1 and re.fullmatch(r"[a-z0-9_]+", parts[0]) and parts[0] != "method":
            for col, v in zip(head, parts[1:]):
                out[f"{parts[0]} {col}"] = float(v)
    return out


def _basin(text: str) -> dict[str, float]:
    return _matched_lines(text, r"(.{52}) +\d+x\d+ +\d+ +\d+ +([0-9.]+) ", lambda m: m.group(1).strip())


PARSERS = {"engine": (_engine, "s"), "qp": (_qp, "ms"), "methods": (_methods, "us"), "basin": (_basin, "s")}


def table(out_dir: Path) -> str:
    blocks = []
    for bench, (parse, unit) in PARSERS.items():
        best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
        rounds: dict[str, int] = defaultdict(int)
        for side in ("before", "after"):
            for f in sorted(out_dir.glob(f"{bench}_{side}_*.txt")):
                rounds[side] += 1
                for k, v in parse(f.read_text()).items():
                    best[side][k] = min(v, best[side].get(k, float("inf")))
        keys = [k for k in best["before"] if k in best["after"]]
        if not keys:
            continue
        rows = [f"### bench_{bench} ({unit}, min over {rounds['before']} / {rounds['after']} rounds)", "",
                f"| figure | before ({unit}) | after ({unit}) | after / before |", "|---|---|---|---|"]
        for k in keys:
            b, a = best["before"][k], best["after"][k]
            ratio = a / b if b > 0 else float("nan")
            rows.append(f"| {k} | {b:.4g} | {a:.4g} | {ratio:.2f} |")
        blocks.append("\n".join(rows))
    first_load = out_dir / "first_load.txt"
    if first_load.is_file():  # bench_first_load.py prints its own before/after table
        blocks.append("### bench_first_load (s)\n\n" + first_load.read_text().strip())
    return "\n\n".join(blocks) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out_dir = Path(args[0] if args else "/tmp/pcd-ab")
    if not out_dir.is_dir():
        print(f"no such folder: {out_dir} (run benchmarks/ab.sh first)", file=sys.stderr)
        return 2
    print(table(out_dir), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
