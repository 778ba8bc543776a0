"""The PCD paper's synthetic experiments as functions returning plain data (CLI, pages, tests).

* :func:`toy`   -- 2-D landscapes (default ``saddle2d``, the paper's Fig. 1): one record per
  (method, start) with end point, losses, residuals and a one-word diagnosis. Claim (paper):
  PCD crosses the barrier to (2, 0) from all three starts; WS, MGDA, PCGrad, CAGrad, FAMO stop
  at a conflict equilibrium in the left valley with L2 > 0.
* :func:`kdw`   -- the K-objective double well from ``x_j = -0.6``: final primary-gradient
  residual per (K, method) next to the law ``1.536 sqrt(K-1)`` (MGDA / CAGrad in the paper) and
  PCD's ~1e-15.
* :func:`scale` -- scale invariance: the secondary of ``scale`` multiplied by ``10^k``,
  k = -6..7; operating point per scale and the *drift* (max pairwise distance between operating
  points) over the scales where PCD's normalizer is scale-free (``10^{2k} >= 100 eps``: ten orders,
  k = -3..7, with the default eps = 1e-8), plus ``drift_all`` over every scale, including the
  eps-dominated ones. Paper: PCD drifts by 0.0075, WS slides along the whole front.
* :func:`tau_sweep` -- PCD's tau trade-off curve on a 2-D problem.

Defaults follow the issue's protocol: Adam, lr 0.01, tau = 0.3, equal-weight WS, 3000 steps.
``tau`` is applied to every method that has a ``tau`` hyper-parameter unless ``method_params``
says otherwise.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np

from pcd.engine import RunResult, run, run_budgets
from pcd.problems import make as make_problem
from pcd.problems.base import check_float, check_int
from pcd.problems.double_well import MAX_K, DoubleWell

TOY_METHODS = ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")
KDW_METHODS = ("pcd", "mgda", "cagrad", "ws", "upgrad")
KDW_KS = (2, 3, 5, 9, 17, 33, 65)
SCALE_EXPONENTS = tuple(range(-6, 8))
SCALE_METHODS = ("ws", "pcd")
SCALE_STEPS = 1000      # the page's and the CLI's default: PCD has reached its operating point (300 had not)
SCALE_EPS_MARGIN = 0.01  # a scale is "scale-free" for PCD when eps <= 1 % of the secondary's ||g||^2
TAUS = tuple(np.round(np.concatenate([[0.0], np.arange(0.01, 0.1, 0.01), np.arange(0.1, 1.0001, 0.1)]), 4))

__all__ = ["toy", "toy_run", "kdw", "scale", "tau_sweep", "tau_references", "parse_methods", "parse_floats", "TOY_METHODS",
           "KDW_METHODS", "KDW_KS", "SCALE_EXPONENTS", "SCALE_STEPS", "TAUS"]


def parse_methods(methods: str | Iterable[str]) -> list[str]:
    """``"pcd, ws"`` or a list -> validated lower-case registry names: :func:`pcd.methods.parse_names`."""
    import pcd.methods as registry

    return registry.parse_names(methods)


def parse_floats(text: str | Iterable[float], name: str = "values") -> list[float]:
    """``"0,0.1,0.2"`` or a list -> floats; also accepts ``"a:b:step"`` ranges (inclusive)."""
    if isinstance(text, str):
        out: list[float] = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            if ":" in part:
                bits = part.split(":")
                if len(bits) != 3:
                    raise ValueError(f"{name}: range must be start:stop:step, got {part!r}")
                a, b, st = (check_float(v, name) for v in bits)
                if st <= 0 or b < a or (b - a) / st > 10_000:
                    raise ValueError(f"{name}: bad range {part!r} (need start <= stop, 0 < step, <= 10000 values)")
                out.extend(np.round(np.arange(a, b + st / 2, st), 12).tolist())
            else:
                out.append(check_float(part, name))
    else:
        out = [check_float(v, name) for v in text]
    if not out:
        raise ValueError(f"{name}: give at least one number")
    return out


def _method_params(names: Sequence[str], tau: float | None, extra: dict | None) -> dict[str, dict]:
    import pcd.methods as registry

    out: dict[str, dict] = {}
    for n in names:
        hp: dict[str, Any] = {}
        knob = registry.get(n).primary_knob  # the share of the secondaries (PCD: tau)
        if tau is not None and knob is not None:
            hp[knob] = tau
        hp.update((extra or {}).get(n, {}) or {})
        if hp:
            out[n] = hp
    unknown = sorted(set(extra or {}) - set(names))
    if unknown:
        raise ValueError(f"method_params given for method(s) not run: {unknown}")
    return out


def toy_run(problem: str = "saddle2d", methods: str | Iterable[str] = TOY_METHODS, steps: int = 3000,
            lr: float = 0.01, optimizer: str = "adam", tau: float | None = 0.3, starts: Any = None,
            method_params: dict | None = None, problem_params: dict | None = None, seed: int = 0,
            record: Any = None, optimizer_params: dict | None = None) -> RunResult:
    """The full engine result of :func:`toy` (positions etc. for plotting)."""
    names = parse_methods(methods)
    if tau is not None:
        tau = check_float(tau, "tau", 0.0, 1.0)
    return run(problem, names, starts=starts, steps=steps, optimizer=optimizer, lr=lr,
               method_params=_method_params(names, tau, method_params), problem_params=problem_params,
               seed=seed, record=record, optimizer_params=optimizer_params)


def toy(problem: str = "saddle2d", methods: str | Iterable[str] = TOY_METHODS, steps: int = 3000,
        lr: float = 0.01, optimizer: str = "adam", tau: float | None = 0.3, starts: Any = None,
        method_params: dict | None = None, problem_params: dict | None = None, seed: int = 0,
        optimizer_params: dict | None = None) -> list[dict[str, Any]]:
    """One JSON-able record per (method, start): ``method``, ``start``, ``end``, ``losses``,
    ``primary_grad_norm``, ``cms_residual``, ``pareto_residual``, ``stalled``, ``diverged``,
    ``diverged_step``, ``diagnosis`` (see :mod:`pcd.engine`). Records only the end points."""
    steps_i = check_int(steps, "steps", 1, 1_000_000)
    res = toy_run(problem, methods, steps_i, lr, optimizer, tau, starts, method_params, problem_params,
                  seed, record=[0, steps_i], optimizer_params=optimizer_params)
    return res.to_records()


def kdw(Ks: Iterable[int] = KDW_KS, methods: str | Iterable[str] = KDW_METHODS, steps: int = 3000,
        lr: float = 0.01, optimizer: str = "adam", tau: float | None = 0.3, start: float = -0.6,
        method_params: dict | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """K-objective double well (:mod:`pcd.problems.double_well`), all methods from ``x_j = start``.

    One record per (K, method): ``K``, ``method``, ``primary_grad_norm`` (final ``||grad f_1||``),
    ``losses`` (final), ``law`` (= 1.536 sqrt(K-1), the conflict-equilibrium residual at the
    start), ``ratio`` (= primary_grad_norm / law), ``stalled``, ``cms_residual``,
    ``pareto_residual``, ``diagnosis``, ``end_mean`` (mean coordinate at the end: -0.6 = never
    moved, 1 = the CMS point).
    """
    Ks, names, mp = _kdw_args(Ks, methods, tau, method_params)
    steps = check_int(steps, "steps", 1)
    out = []
    for K in Ks:
        res = run("double_well", names, steps=steps, optimizer=optimizer, lr=lr, method_params=mp,
                  problem_params={"K": K, "start": start}, seed=seed, record=[0, steps])
        out += _kdw_records(res, K, names, start)
    return out


def kdw_budgets(Ks: Iterable[int] = KDW_KS, methods: str | Iterable[str] = KDW_METHODS,
                budgets: Iterable[int] = (3000,), lr: float = 0.01, optimizer: str = "adam",
                tau: float | None = 0.3, start: float = -0.6, method_params: dict | None = None,
                seed: int = 0, progress: Any = None) -> dict[int, list[dict[str, Any]]]:
    """``{b: kdw(..., steps=b)}`` for every step budget ``b``, from one run of the longest budget per K
    (:func:`pcd.engine.run_budgets`): the same records, bit for bit, for the cost of the longest run.
    ``progress(fraction, message)``: :func:`pcd.engine.run`'s, called along each K's run (it may block:
    the run pauses there and goes on with the same numbers)."""
    Ks, names, mp = _kdw_args(Ks, methods, tau, method_params)
    out: dict[int, list[dict[str, Any]]] = {}
    for K in Ks:
        runs = run_budgets("double_well", names, budgets, record=lambda b: [0, b], optimizer=optimizer, lr=lr,
                           method_params=mp, problem_params={"K": K, "start": start}, seed=seed,
                           progress=progress)
        for b, res in runs.items():
            out.setdefault(b, []).extend(_kdw_records(res, K, names, start))
    return out


def _kdw_args(Ks: Iterable[int], methods: str | Iterable[str], tau: float | None,
              method_params: dict | None) -> tuple[list[int], list[str], dict]:
    Ks = [check_int(k, "K", 2, MAX_K) for k in Ks]
    if not Ks:
        raise ValueError("give at least one K (K >= 2)")
    names = parse_methods(methods)
    return Ks, names, _method_params(names, None if tau is None else check_float(tau, "tau", 0.0, 1.0), method_params)


def _kdw_records(res: RunResult, K: int, names: list[str], start: float) -> list[dict[str, Any]]:
    """:func:`kdw`'s records of one K's run."""
    law = cast(DoubleWell, make_problem("double_well", K=K, start=start)).residual_law()
    out = []
    for m, name in enumerate(names):
        g = float(res.primary_grad_norm[m, 0])
        out.append({
            "K": K, "method": name, "primary_grad_norm": g,
            "losses": res.end_losses[m, 0].tolist(), "law": law,
            "ratio": g / law if law > 0 else math.nan,
            "stalled": bool(res.stalled[m, 0]), "cms_residual": float(res.cms_residual[m, 0]),
            "pareto_residual": float(res.pareto_residual[m, 0]),
            "diagnosis": str(res.diagnosis[m, 0]), "diverged": bool(res.diverged[m, 0]),
            "end_mean": float(np.mean(res.end[m, 0])),
        })
    return out


def scale(exponents: Iterable[float] = SCALE_EXPONENTS, methods: str | Iterable[str] = SCALE_METHODS,
          steps: int = SCALE_STEPS, lr: float = 0.01, optimizer: str = "adam", tau: float | None = 0.3,
          average_last: float = 0.2, method_params: dict | None = None, seed: int = 0) -> dict[str, Any]:
    """Scale invariance on :mod:`pcd.problems.scale` (secondary x 10^k).

    For every method and scale the *operating point* is the mean position over the last
    ``average_last`` fraction of the steps (methods that chatter on the box's kinks oscillate
    with an amplitude ~ lr; the time average is the point they operate at).

    Where PCD's normalizer stops being scale-free: outside the box the secondary's squared
    gradient norm is ``10^{2k}`` (one active side) or ``2 * 10^{2k}``; ``s = 1/sqrt(v + eps)``
    makes ``||g~_2|| = sqrt(v / (v + eps))``, which is 1 only while ``v >> eps``. A scale is
    ``scale_free`` when ``eps / 10^{2k} <= SCALE_EPS_MARGIN`` (``||g~_2||`` within 0.5 % of 1);
    ``eps`` is PCD's (its default 1e-8 when PCD runs with its own), and every scale is scale-free
    when PCD is not run. ``drift`` = max pairwise distance between the operating points over the
    scale-free scales (all scales when fewer than two are), ``drift_all`` over every scale,
    ``drift_final`` the same as ``drift`` for the raw final iterates. Returns ``{"scales",
    "exponents", "eps", "eps_ratio", "scale_free", "methods": {name: {"endpoints", "final_points",
    "drift", "drift_all", "drift_final", "losses"}}, "pareto_set", "ws_theory",
    "constrained_optimum", "settings"}``.
    """
    import pcd.methods as registry
    from pcd.problems.scale import Scale

    exps = [check_float(k, "exponent", -12.0, 12.0) for k in exponents]
    if len(exps) < 2:
        raise ValueError("give at least two scale exponents")
    steps = check_int(steps, "steps", 1, 1_000_000)
    average_last = check_float(average_last, "average_last", 0.0, 1.0, strict_low=True)
    names = parse_methods(methods)
    mp = _method_params(names, None if tau is None else check_float(tau, "tau", 0.0, 1.0), method_params)
    eps = None
    if "pcd" in names:
        eps = float(mp.get("pcd", {}).get("eps", next(p.default for p in registry.get("pcd").params
                                                      if p.name == "eps")))
    eps_ratio = [0.0 if eps is None else eps / 10.0 ** (2 * k) for k in exps]
    free = np.array([r <= SCALE_EPS_MARGIN * (1 + 1e-9) for r in eps_ratio])
    window = free if free.sum() >= 2 else np.ones(len(exps), dtype=bool)
    first = max(0, steps - int(round(average_last * steps)))
    record = np.arange(first, steps + 1)
    pts: dict[str, list] = {n: [] for n in names}
    fin: dict[str, list] = {n: [] for n in names}
    losses: dict[str, list] = {n: [] for n in names}
    for k in exps:
        res = run("scale", names, steps=steps, optimizer=optimizer, lr=lr, method_params=mp,
                  problem_params={"k": k}, seed=seed, record=record)
        for m, n in enumerate(names):
            with np.errstate(all="ignore"):
                pts[n].append(np.nanmean(res.positions[m, 0], axis=0))
            fin[n].append(res.end[m, 0])
            losses[n].append(res.end_losses[m, 0])

    def drift(P: list[np.ndarray], mask: np.ndarray) -> float:
        A = np.asarray(P)[mask]
        return float(np.nanmax(np.linalg.norm(A[:, None] - A[None], axis=-1)))

    every = np.ones(len(exps), dtype=bool)
    return {
        "scales": [10.0 ** k for k in exps],
        "exponents": exps,
        "eps": eps,
        "eps_ratio": eps_ratio,
        "scale_free": free.tolist(),
        "methods": {n: {"endpoints": np.asarray(pts[n]).tolist(), "final_points": np.asarray(fin[n]).tolist(),
                        "drift": drift(pts[n], window), "drift_all": drift(pts[n], every),
                        "drift_final": drift(fin[n], window),
                        "losses": np.asarray(losses[n]).tolist()} for n in names},
        "pareto_set": Scale().pareto_set(100).tolist(),
        "ws_theory": [Scale.ws_endpoint(10.0 ** k).tolist() for k in exps],
        "constrained_optimum": Scale.constrained_optimum().tolist(),
        "settings": {"steps": steps, "lr": lr, "optimizer": optimizer, "tau": tau, "average_last": average_last,
                     "eps": eps, "methods": names},
    }


def tau_sweep(problem: str = "saddle2d", taus: Iterable[float] = TAUS, steps: int = 3000, lr: float = 0.01,
              optimizer: str = "adam", method: str = "pcd", starts: Any = None,
              problem_params: dict | None = None, method_params: dict | None = None,
              seed: int = 0, budgets: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """PCD's tau trade-off: one record per tau with the mean final losses over the starts,
    per-start end points / losses / diagnosis, and ``cms_fraction`` (share of starts ending at a
    CMS point, e.g. (2, 0) on saddle2d).

    ``budgets`` (step counts, e.g. ``[100, 300, 1000, 3000]``): one run of ``max(budgets)`` steps
    per tau (``steps`` is ignored) and, per budget ``b``, the same record fields as if the run had
    stopped at ``b`` -- ``record["budgets"][b] = {"losses", "start_losses", "ends", "diagnosis",
    "cms_fraction", "moving_fraction"}``, the diagnosis by :func:`pcd.engine.diagnose` with the
    speed over the budget's last tenth, exactly as a run of ``b`` steps would report it. On a
    genuine trade-off PCD has no end point for tau > 0 (it keeps trading primary for secondary),
    so the curve depends on the budget; ``moving_fraction`` says which points are not ends.
    """
    from pcd.engine import diagnose

    taus = [check_float(t, "tau", 0.0, 1.0) for t in taus]
    if not taus:
        raise ValueError("give at least one tau in [0, 1]")
    name = parse_methods([method])[0]
    import pcd.methods as registry

    if not any(p.name == "tau" for p in registry.get(name).params):
        raise ValueError(f"method {name!r} has no tau hyper-parameter")
    if budgets is not None:
        bl = sorted({check_int(b, "budget", 1, 1_000_000) for b in budgets})
        if not bl:
            raise ValueError("give at least one step budget")
        steps = bl[-1]
    else:
        bl = []
        steps = check_int(steps, "steps", 1, 1_000_000)
    lr = check_float(lr, "lr", 0.0, strict_low=True)
    windows = {b: max(1, b // 10) for b in bl}
    record = sorted({0, steps} | set(bl) | {b - w for b, w in windows.items()})
    # every tau in one batched run (one labelled instance per tau): identical trajectories, ~2x faster
    insts = []
    for t in taus:
        hp = dict(method_params or {})
        hp["tau"] = t
        insts.append((f"{name} tau={t!r}", registry.make(name, **hp)))
    if len({lab for lab, _ in insts}) != len(insts):
        raise ValueError(f"a tau is listed twice: {taus}")
    res = run(problem, insts, starts=starts, steps=steps, optimizer=optimizer, lr=lr,
              problem_params=problem_params, seed=seed, record=record)
    idx = {int(s): i for i, s in enumerate(res.record)}
    out = []
    for m, t in enumerate(taus):
        diag = [str(d) for d in res.diagnosis[m]]
        with np.errstate(all="ignore"):
            mean_losses = np.nanmean(res.end_losses[m], axis=0)
        rec: dict[str, Any] = {
            "tau": t, "method": name, "losses": mean_losses.tolist(),
            "ends": res.end[m].tolist(), "start_losses": res.end_losses[m].tolist(),
            "diagnosis": diag, "cms_fraction": float(np.mean([d == "cms" for d in diag])),
            "primary_grad_norm": res.primary_grad_norm[m].tolist(),
        }
        if bl:
            per: dict[int, dict[str, Any]] = {}
            for b in bl:
                if b == steps:
                    d_b, L_b, X_b = diag, res.end_losses[m], res.end[m]
                else:
                    i, j = idx[b], idx[b - windows[b]]
                    X_b = res.positions[m, :, i]
                    L_b = res.losses[m, :, i]
                    alive = np.isfinite(X_b).all(axis=1) & np.isfinite(L_b).all(axis=1)
                    with np.errstate(all="ignore"):
                        speed = np.linalg.norm(X_b - res.positions[m, :, j], axis=1) / (lr * windows[b])
                    d_b = [str(d) for d in diagnose(res.grad_norms[m, :, i], speed, alive, np.zeros_like(alive),
                                                    res.optimizer, res.tolerances["grad_tol"],
                                                    res.tolerances["stall_tol"])[3]]
                with np.errstate(all="ignore"):
                    m_b = np.nanmean(L_b, axis=0)
                per[b] = {"losses": m_b.tolist(), "start_losses": np.asarray(L_b).tolist(),
                          "ends": np.asarray(X_b).tolist(), "diagnosis": d_b,
                          "cms_fraction": float(np.mean([d == "cms" for d in d_b])),
                          "moving_fraction": float(np.mean([d == "moving" for d in d_b]))}
            rec["budgets"] = per
        out.append(rec)
    return out


def tau_references(problem: str, methods: str | Iterable[str], steps: int, lr: float = 0.01,
                   optimizer: str = "adam", starts: Any = None, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Where other methods end on the tau dial's problem, for comparison with PCD's curve: every
    method from the same starts (the problem's, as :func:`tau_sweep`) with its own defaults, after
    ``steps``. ``{method: {"losses": mean final losses over the starts, "diagnosis": [...], "error":
    the method's one-line refusal or None}}`` (a method that fails -- e.g. a loss-weighting one on
    negative losses -- keeps its message, the others still run)."""
    names = parse_methods(methods)
    steps = check_int(steps, "steps", 1, 1_000_000)
    res = run(problem, names, starts=starts, steps=steps, optimizer=optimizer, lr=check_float(lr, "lr", 0.0,
              strict_low=True), seed=seed, record=[0, steps])
    out: dict[str, dict[str, Any]] = {}
    for m, name in enumerate(names):
        err = res.errors.get(name)
        with np.errstate(all="ignore"):
            mean = np.nanmean(res.end_losses[m], axis=0)
        out[name] = {"losses": None if err else mean.tolist(), "diagnosis": [str(d) for d in res.diagnosis[m]],
                     "error": err}
    return out
