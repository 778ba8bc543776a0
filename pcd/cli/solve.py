"""``python -m pcd solve``: PCD's QP for one Gram matrix (JSON in, JSON out)."""
from __future__ import annotations

import numpy as np

from pcd.cli import UsageError, read_json, write_json
from pcd.qp import solve_qp


def _load_json(text_or_path: str, what: str):
    """Inline JSON, a JSON file or ``-`` (stdin), size- and nesting-limited (:func:`pcd.cli.read_json`)."""
    if not text_or_path.strip():
        raise UsageError(f"{what}: give a JSON file, inline JSON, or - for stdin")
    return read_json(text_or_path, what, inline=True)


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
