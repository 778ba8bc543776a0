"""``python -m pcd solve``: PCD's QP for one Gram matrix (JSON in, JSON out)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from pcd.cli import UsageError, write_json
from pcd.qp import solve_qp


def _load_json(text_or_path: str, what: str):
    if text_or_path == "-":
        text = sys.stdin.read()
    elif text_or_path.lstrip().startswith(("[", "{")) or text_or_path.strip().replace(".", "", 1).isdigit():
        text = text_or_path
    else:
        path = Path(text_or_path)
        if not path.is_file():
            raise UsageError(f"{what}: no such file {text_or_path!r} (give a JSON file, inline JSON, or - for stdin)")
        text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _run(args) -> int:
    data = _load_json(args.gram, "--gram")
    if isinstance(data, dict):
        if "gram" not in data:
            raise UsageError("--gram: a JSON object must have a 'gram' key (and optionally 'tau')")
        tau = data.get("tau", args.tau)
        data = data["gram"]
    else:
        tau = args.tau
    if args.tau_json is not None:
        tau = _load_json(args.tau_json, "--tau")
    try:
        G = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError("--gram must be a K x K array of numbers") from None
    if G.ndim != 2:
        raise UsageError(f"--gram must be a single K x K matrix, got shape {list(G.shape)}")
    res = solve_qp(G, tau)
    write_json({"K": int(G.shape[0]), "tau": tau, "weights": res.weights, "mu": res.mu,
                "active": list(res.active), "feasible": bool(res.feasible)}, args.json)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "solve",
        help="solve PCD's QP for a Gram matrix (JSON) and print weights / active set / feasibility",
        description=("Solve min ||d - g1||^2 s.t. gj.d >= tau_j ||gj||^2 from the Gram matrix G = J J^T "
                     "(primary first). Prints JSON: weights (weights[0] = 1, d = weights @ J), mu, "
                     "active (secondary indices >= 1 whose constraint binds), feasible."),
    )
    p.add_argument("--gram", required=True,
                   help="K x K Gram matrix as inline JSON, a JSON file, or - for stdin; an object "
                        "{\"gram\": [...], \"tau\": ...} is accepted too")
    p.add_argument("--tau", type=float, default=0.02, help="tolerance in [0, 1] (default 0.02)")
    p.add_argument("--tau-json", default=None, metavar="JSON",
                   help="one tau per secondary as a JSON list (overrides --tau)")
    p.add_argument("--json", default="-", metavar="FILE", help="output file (default: stdout)")
    p.set_defaults(func=_run)
