"""Training geometry: record, every ``N`` steps of any PyTorch loop, the ``K x K`` Gram matrix of
the objectives' gradients and what *every* registry method would have done with it.

A few lines around an existing loop (the loop's own optimizer step is untouched)::

    from pcd.monitor import Recorder
    rec = Recorder("geometry.jsonl", model.parameters(), every=10)
    for x, y in batches:
        ce, gl = F.cross_entropy(model(x), y), group_lasso(model)
        rec.step([ce, gl])                  # before backward: autograd.grad(..., retain_graph=True)
        opt.zero_grad(); (ce + lam * gl).backward(); opt.step()
    rec.close()

Per recorded step ``t`` (``step`` counts calls; the gradients are read with
``torch.autograd.grad(retain_graph=True)``, which leaves ``p.grad``, the graph and the RNG as they
were, so training is bit-identical with and without the recorder -- tested) it writes

* the losses ``f_i`` and the Gram matrix ``G_ij = <g_i, g_j>`` (:func:`pcd.train.step.gram_matrix`,
  the training loop's own); norms ``||g_i|| = sqrt(G_ii)`` and ``cos(g_1, g_j)`` are derived from it
  on reading (:class:`Trace`);
* for every method of :mod:`pcd.methods` the weights ``w`` it would choose from that ``G`` (and the
  losses) and its *counterfactual* update relative to the primary's gradient,
  ``||d|| / ||g_1||`` with ``||d||^2 = w^T G w`` (:func:`update_ratio`); PCD/DBGD's ``mu`` and
  active constraints too. A method that needs the Jacobian itself (GradDrop) is skipped, with the
  reason in the header; a stochastic one (PCGrad's order, RGW) gets ``default_rng([seed, step])``;
  a stateful one (PCD's normalizer, FAMO, ...) keeps its own state, advanced on recorded steps only
  (a resumed run starts it afresh); a method that refuses a step (e.g. UW on a negative loss) has
  ``{"error": ...}`` there.

For a large network, ``rec.step([ce, gl], weights=[1, lam])`` before ``backward`` and
``rec.after_backward()`` after it read only the secondaries' gradients and take ``g_1`` from the
loop's own ``p.grad`` (no second backward; ``benchmarks/bench_monitor.py`` measures both).

The file is JSON lines, append-only: a header line ``{"format": "pcd-monitor", ...}``, then one
compact line per record, flushed as written (floats round-trip exactly). A run resumed from an
earlier step appends records from that step again; :func:`read` keeps the later ones. :func:`read`
is the one bounded reader (:mod:`pcd._files` for the file itself; record count, K, strict JSON:
one-line ``ValueError`` for a link out of its folder, a FIFO, a truncated, huge or non-finite file).

Collapse (:func:`collapsed`, the one home of the rule): a recorded step where a method's
``||d|| / ||g_1|| < COLLAPSE_RATIO`` (10 %) while ``||g_1||`` is not small: ``||g_1|| >=
G1_FLOOR * max ||g_1||`` over the last ``SCALE_WINDOW`` records (10 % of its running scale, 50
records) and ``>= G1_RUN_FLOOR * max ||g_1||`` over every record so far (0.1 %) -- the update
vanishing because the gradients cancel, not because the primary is stationary: a conflict
equilibrium (PCD paper, arXiv 2606.29521, Sec. 2) in a real network.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pcd import _files
from pcd import _validate as V
from pcd._json import jsonable

__all__ = ["Recorder", "Trace", "read", "summary", "finding", "collapsed", "stretches", "update_ratio",
           "plan_methods", "counterfactuals", "snapshot_vectors", "COLLAPSE_RATIO", "G1_FLOOR", "SCALE_WINDOW", "G1_RUN_FLOOR"]

FORMAT = "pcd-monitor"
VERSION = 1
#: A method's counterfactual update below this share of ``||g_1||`` is a collapse candidate.
COLLAPSE_RATIO = 0.1
#: ... only while ``||g_1||`` is at least this share of its running scale (see SCALE_WINDOW).
G1_FLOOR = 0.1
#: The running scale of ``||g_1||``: its maximum over the last this-many records (this one included).
SCALE_WINDOW = 50
#: ... and never below this share of its maximum over every record so far (a network whose primary
#: gradient has died, ``||g_1|| ~ 1e-8`` for a long stretch, is not "not small").
G1_RUN_FLOOR = 1e-3
MAX_BYTES = _files.MAX_BYTES["recorder"]  # a recorder file read back (the product's bound per kind of file)
MAX_RECORDS = 200_000
MAX_K = 16                       # objectives a recorder file may hold
MAX_LINE = 64 * 1024             # one record line


# --------------------------------------------------------------------------- the counterfactuals

def plan_methods(methods: Any = None, hparams: dict[str, dict] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The methods to evaluate (``None``: every registry method, display order) as instances with
    ``hparams[name]`` (defaults otherwise), and the skipped ones ``{name: reason}``: a method
    that needs the Jacobian itself cannot be evaluated on a Gram matrix."""
    import pcd.methods as registry

    names = registry.available() if methods is None else registry.parse_names(methods)
    hp = dict(hparams or {})
    for k in hp:
        if k not in names:
            raise ValueError(f"monitor: hyper-parameters given for {k!r}, which is not monitored")
    inst: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in names:
        m = registry.make(name, **hp.get(name, {}))
        try:
            registry.check_capabilities(m, ("losses",))
        except ValueError as exc:
            skipped[name] = str(exc)
            continue
        inst[name] = m
    return inst, skipped


def update_ratio(weights: np.ndarray, gram: np.ndarray) -> float:
    """``||d|| / ||g_1||`` for ``d = w @ J``: ``sqrt(w^T G w) / sqrt(G_11)`` (NaN when ``g_1 = 0``;
    a rounding-negative ``w^T G w`` counts as 0)."""
    w = np.asarray(weights, dtype=np.float64)
    G = np.asarray(gram, dtype=np.float64)
    g11 = float(G[0, 0])
    if not g11 > 0.0:
        return math.nan
    return math.sqrt(max(float(w @ G @ w), 0.0) / g11)


def counterfactuals(gram: np.ndarray, losses: np.ndarray, methods: dict[str, Any], states: dict[str, Any],
                    seed: int, step: int) -> dict[str, dict[str, Any]]:
    """Every method's step on one Gram matrix ``[K, K]`` (losses ``[K]``): ``{name: {"w", "r",
    ["mu", "active"] | "error"}}``; ``states`` is advanced in place (name -> the method's state).
    A stochastic method draws from ``default_rng([seed, step])``."""
    G = np.asarray(gram, dtype=np.float64)[None]
    L = np.asarray(losses, dtype=np.float64)[None]
    out: dict[str, dict[str, Any]] = {}
    for name, m in methods.items():
        rng = np.random.default_rng([seed, step]) if m.stochastic else None
        try:
            st = m(G, state=states.get(name), losses=L, rng=rng)
        except ValueError as exc:
            out[name] = {"error": str(exc).splitlines()[0][:200]}
            continue
        states[name] = st.state
        w = np.asarray(st.weights, dtype=np.float64)[0]
        rec: dict[str, Any] = {"w": w.tolist(), "r": update_ratio(w, G[0])}
        if "mu" in st.info:
            rec["mu"] = np.asarray(st.info["mu"], dtype=np.float64).reshape(-1).tolist()
            if "active" in st.info:
                rec["active"] = [bool(a) for a in np.asarray(st.info["active"]).reshape(-1)]
        out[name] = rec
    return out


# --------------------------------------------------------------------------- the recorder

class Recorder:
    """Records the training geometry of a loop into ``path`` (JSON lines, see the module docstring).

    ``params``: the model's parameters (the gradients' coordinates); ``every``: record every N-th
    call of :meth:`step` (the first call is recorded); ``methods`` / ``hparams``: which methods and
    their hyper-parameters (default: all, defaults); ``objectives``: display names; ``seed``: the
    stochastic methods' draws. An existing recorder file is appended to (its header is kept) when
    ``append`` is True, else replaced.
    """

    def __init__(self, path: str | os.PathLike, params: Iterable[Any] = (), *, every: int = 10,
                 methods: Any = None, hparams: dict[str, dict] | None = None,
                 objectives: Sequence[str] | None = None, seed: int = 0, append: bool = False) -> None:
        self.path = Path(path)
        self.params = [p for p in params if getattr(p, "requires_grad", True)]
        self.every = V.integer(every, "every", low=1, high=V.LIMITS["steps"])
        self.seed = V.integer(seed, "seed", low=0, high=2**32 - 1)
        self.methods, self.skipped = plan_methods(methods, hparams)
        self.objectives = None if objectives is None else [str(o)[:80] for o in objectives]
        self.states: dict[str, Any] = {}
        self.calls = 0
        self._pending: Any = None
        self.K: int | None = None
        self._append = bool(append) and self.path.exists() and self.path.stat().st_size > 0

    # -- what the loop calls --
    def step(self, losses: Sequence[Any], grads: Sequence[Sequence[Any]] | None = None, *,
             weights: Sequence[float] | None = None) -> dict | None:
        """Call once per training step, before ``backward``. ``losses``: the K per-objective losses
        (tensors with their graph); on a recorded step each one's gradient is read with
        ``torch.autograd.grad(retain_graph=True)``. ``grads``: the per-objective gradients the loop
        already has (a list per objective, one tensor -- or None -- per parameter); ``losses`` may
        then be plain numbers. ``weights``: the loop backpropagates ``sum_i w_i f_i`` (``w_1 != 0``):
        only the secondaries' gradients are read here, and :meth:`after_backward` (call it after
        ``backward``) takes ``g_1 = (p.grad - sum_{i>=2} w_i g_i) / w_1`` from the loop's own
        gradient -- no second backward through the network (exact up to rounding, ~1e-7 of
        ``||w_i g_i||``). Returns the record on recorded steps (None with ``weights``, or unrecorded)."""
        t = self.calls
        self.calls += 1
        if t % self.every:
            return None
        import torch

        vals = np.array([float(f.detach()) if isinstance(f, torch.Tensor) else float(f) for f in losses])
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64).reshape(-1)
            if w.shape != (len(losses),) or not np.isfinite(w).all() or w[0] == 0.0:
                raise ValueError(f"monitor: weights must be {len(losses)} finite numbers with w_1 != 0, got {list(w)}")
            sec = [torch.autograd.grad(f, self.params, retain_graph=True, allow_unused=True) for f in losses[1:]]
            self._pending = (t, w, vals, sec)
            return None
        if grads is None:
            grads = [torch.autograd.grad(f, self.params, retain_graph=True, allow_unused=True) for f in losses]
        return self._record_grads(grads, vals, t)

    def after_backward(self) -> dict | None:
        """Finish the record :meth:`step` started with ``weights`` (a no-op otherwise): the primary's
        gradient is the loop's ``p.grad`` less the weighted secondaries'."""
        if self._pending is None:
            return None
        t, w, vals, sec = self._pending
        self._pending = None
        g1: list[Any] = []
        for k, p in enumerate(self.params):
            if p.grad is None:
                g1.append(None)
                continue
            d = p.grad.detach().clone()
            for wi, gs in zip(w[1:], sec):
                if gs[k] is not None and wi != 0.0:
                    d.sub_(gs[k], alpha=float(wi))
            if w[0] != 1.0:
                d.div_(float(w[0]))
            g1.append(d)
        return self._record_grads([g1] + [list(gs) for gs in sec], vals, t)

    def _record_grads(self, grads: Sequence[Sequence[Any]], vals: np.ndarray, t: int) -> dict | None:
        from pcd.train.step import gram_matrix

        pairs = [[(k, g.detach()) for k, g in enumerate(gs) if g is not None] for gs in grads]
        return self.record_gram(gram_matrix(pairs), vals, step=t)

    def record_gram(self, gram: Any, losses: Any, *, step: int) -> dict | None:
        """Write one record from a Gram matrix ``[K, K]`` and the losses ``[K]`` the caller already
        has (the pruning runs' :class:`pcd.train.step.GramStep` computes both anyway). A non-finite
        Gram matrix or loss (a diverging step) is not recorded (None)."""
        G = np.asarray(gram, dtype=np.float64)
        L = np.asarray(losses, dtype=np.float64).reshape(-1)
        if G.ndim != 2 or G.shape[0] != G.shape[1] or L.shape != (G.shape[0],) or not 1 <= G.shape[0] <= MAX_K:
            raise ValueError(f"monitor: need a [K, K] Gram matrix and K losses with 1 <= K <= {MAX_K}, "
                             f"got {list(G.shape)} and {list(L.shape)}")
        if self.K is None:
            self.K = G.shape[0]
        elif G.shape[0] != self.K:
            raise ValueError(f"monitor: this recorder holds K = {self.K} objectives, got {G.shape[0]}")
        if not (np.isfinite(G).all() and np.isfinite(L).all()):
            return None
        rec: dict[str, Any] = {"step": int(step), "loss": L.tolist(), "gram": G.tolist(),
                               "m": counterfactuals(G, L, self.methods, self.states, self.seed, int(step))}
        self._write(rec)
        return rec

    # -- the file --
    def header(self) -> dict:
        K = self.K or 0
        names = self.objectives or ["f1 (primary)"] + [f"f{i + 1}" for i in range(1, K)]
        return {"format": FORMAT, "version": VERSION, "K": K, "objectives": names[:K], "every": self.every,
                "seed": self.seed, "methods": {n: m.hparams for n, m in self.methods.items()},
                "skipped": self.skipped, "rule": rule()}

    def _write(self, rec: dict) -> None:
        """Append one line (opened per record: nothing stays open if the loop stops anywhere)."""
        text = _line(rec)
        if not self._append:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            text = _line(self.header()) + text
        with open(self.path, "a" if self._append else "w", encoding="utf-8") as fh:
            fh.write(text)
        self._append = True

    def close(self) -> None:
        """Nothing to release (each record is appended and closed as written); kept for ``with``."""

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _line(obj: dict) -> str:
    return json.dumps(jsonable(obj), allow_nan=False, separators=(",", ":")) + "\n"


def rule() -> dict[str, float]:
    """The collapse rule's numbers (written into every file's header and every summary)."""
    return {"collapse_ratio": COLLAPSE_RATIO, "g1_floor": G1_FLOOR, "scale_window": SCALE_WINDOW,
            "g1_run_floor": G1_RUN_FLOOR}


# --------------------------------------------------------------------------- reading

@dataclass
class Trace:
    """A recorder file as arrays: ``steps [T]``, ``losses [T, K]``, ``gram [T, K, K]``, per method
    ``ratio[name] [T]`` and ``weights[name] [T, K]`` (NaN where it failed), ``mu[name] [T, K-1]``
    and ``active[name] [T, K-1]`` for methods that report them, the header's fields."""

    header: dict
    steps: np.ndarray
    losses: np.ndarray
    gram: np.ndarray
    ratio: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]
    mu: dict[str, np.ndarray] = field(default_factory=dict)
    active: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def K(self) -> int:
        return int(self.gram.shape[-1])

    @property
    def methods(self) -> list[str]:
        return list(self.ratio)

    @property
    def norms(self) -> np.ndarray:
        """``||g_i|| [T, K]`` from the Gram diagonal."""
        return np.sqrt(np.clip(np.diagonal(self.gram, axis1=1, axis2=2), 0.0, None))

    @property
    def cosines(self) -> np.ndarray:
        """``cos(g_1, g_j) [T, K-1]`` (NaN where a gradient is zero)."""
        n = self.norms
        with np.errstate(invalid="ignore", divide="ignore"):
            c = self.gram[:, 0, 1:] / (n[:, :1] * n[:, 1:])
        return np.where((n[:, :1] > 0) & (n[:, 1:] > 0), np.clip(c, -1.0, 1.0), np.nan)


def _number_list(v: Any, n: int, what: str) -> list[float]:
    if not isinstance(v, list) or len(v) != n:
        raise V.Invalid(f"{what}: expected a list of {n} numbers")
    out = []
    for x in v:
        if x is None:
            out.append(math.nan)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            out.append(float(x))
        else:
            raise V.Invalid(f"{what}: expected numbers, got {V.show(x, 40)}")
    return out


def read(path: str | os.PathLike, name: str = "recorder file", folder: Any = None) -> Trace:
    """Read a recorder file through the product's one file reader (:func:`pcd._files.read_text`,
    kind ``"recorder"``: a regular file, at most :data:`MAX_BYTES`, with ``folder`` no link out of
    it) and :func:`parse` it: one-line ``ValueError`` for anything else than a complete, finite
    pcd-monitor file. A run resumed from an earlier step wrote those steps again: the later records
    win."""
    text = _files.read_text(path, folder, kind="recorder", max_bytes=MAX_BYTES, name=name)
    return parse(text, f"{name} {path}")


def parse(text: str, name: str = "recorder file") -> Trace:
    """:func:`read` on text already in memory (an upload)."""
    if not text.strip():
        raise V.Invalid(f"{name}: empty file")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    elif len(lines) > 1:
        raise V.Invalid(f"{name}: truncated (the last record, line {len(lines)}, is incomplete)")
    if len(lines) - 1 > MAX_RECORDS:
        raise V.Invalid(f"{name}: more than {MAX_RECORDS} records")
    head = _json_line(lines[0], f"{name}, line 1")
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise V.Invalid(f"{name}: not a pcd-monitor recorder file (its first line has no \"format\": \"{FORMAT}\")")
    if head.get("version") != VERSION:
        raise V.Invalid(f"{name}: recorder format version {V.show(head.get('version'), 20)}, this reader knows {VERSION}")
    K = head.get("K")
    if not isinstance(K, int) or isinstance(K, bool) or not 1 <= K <= MAX_K:
        raise V.Invalid(f"{name}: K must be an integer in [1, {MAX_K}], got {V.show(K, 20)}")
    declared = head.get("methods")
    if not isinstance(declared, dict) or not all(isinstance(k, str) for k in declared):
        raise V.Invalid(f"{name}: the header's \"methods\" must be an object")
    methods = list(declared)
    recs: list[dict] = []
    for i, ln in enumerate(lines[1:], start=2):
        if len(ln) > MAX_LINE:
            raise V.Invalid(f"{name}, line {i}: longer than {MAX_LINE} characters")
        r = _json_line(ln, f"{name}, line {i}")
        where = f"{name}, line {i}"
        if not isinstance(r, dict) or not isinstance(r.get("step"), int) or isinstance(r.get("step"), bool) \
                or not 0 <= r["step"] <= 10**12:
            raise V.Invalid(f"{where}: a record needs an integer \"step\" >= 0")
        loss = _number_list(r.get("loss"), K, f"{where}, loss")
        g = r.get("gram")
        if not isinstance(g, list) or len(g) != K:
            raise V.Invalid(f"{where}, gram: expected {K} rows of {K} numbers")
        rows = [_number_list(row, K, f"{where}, gram") for row in g]
        m = r.get("m")
        if not isinstance(m, dict):
            raise V.Invalid(f"{where}: \"m\" must be an object")
        while recs and recs[-1]["step"] >= r["step"]:  # a resumed run wrote these steps again
            recs.pop()
        recs.append({"step": r["step"], "loss": loss, "gram": rows, "m": m, "where": where})
    if not recs:
        raise V.Invalid(f"{name}: no records yet (header only)")
    T = len(recs)
    steps = np.array([r["step"] for r in recs], dtype=np.int64)
    losses = np.array([r["loss"] for r in recs], dtype=np.float64)
    gram = np.array([r["gram"] for r in recs], dtype=np.float64)
    if not (np.isfinite(gram).all() and np.isfinite(losses).all()):
        bad = int(np.flatnonzero(~(np.isfinite(gram).all(axis=(1, 2)) & np.isfinite(losses).all(axis=1)))[0])
        raise V.Invalid(f"{recs[bad]['where']}: non-finite loss or Gram matrix (null)")
    ratio = {n: np.full(T, np.nan) for n in methods}
    weights = {n: np.full((T, K), np.nan) for n in methods}
    mu: dict[str, np.ndarray] = {}
    active: dict[str, np.ndarray] = {}
    for t, r in enumerate(recs):
        for n, v in r["m"].items():
            if n not in ratio:
                raise V.Invalid(f"{r['where']}: method {V.show(n, 40)} is not in the header")
            if not isinstance(v, dict) or "error" in v:
                continue
            weights[n][t] = _number_list(v.get("w"), K, f"{r['where']}, {n} weights")
            ratio[n][t] = _number_list([v.get("r")], 1, f"{r['where']}, {n} ratio")[0]
            if "mu" in v:
                mu.setdefault(n, np.full((T, K - 1), np.nan))[t] = _number_list(v["mu"], K - 1, f"{r['where']}, {n} mu")
                act = v.get("active")
                if isinstance(act, list) and len(act) in (K - 1, K):
                    active.setdefault(n, np.zeros((T, K - 1), dtype=bool))[t] = [bool(a) for a in act[len(act) - K + 1:]]
    return Trace(header=head, steps=steps, losses=losses, gram=gram, ratio=ratio, weights=weights, mu=mu,
                 active=active)


def _json_line(line: str, where: str) -> Any:
    return V.parse_json(line, where, max_bytes=MAX_LINE, max_depth=6)


# --------------------------------------------------------------------------- the collapse rule

def g1_not_small(g1: np.ndarray) -> np.ndarray:
    """``||g_1||_t >= G1_FLOOR * max(||g_1||_{t-W+1..t})``, ``>= G1_RUN_FLOOR * max(||g_1||_{0..t})``
    and ``> 0`` (W = SCALE_WINDOW) ``[T]``."""
    g1 = np.asarray(g1, dtype=np.float64)
    T = g1.shape[0]
    if T == 0:
        return np.zeros(0, dtype=bool)
    from numpy.lib.stride_tricks import sliding_window_view

    padded = np.concatenate([np.zeros(SCALE_WINDOW - 1), g1])
    scale = sliding_window_view(padded, SCALE_WINDOW).max(axis=1)
    return (g1 > 0.0) & (g1 >= G1_FLOOR * scale) & (g1 >= G1_RUN_FLOOR * np.maximum.accumulate(g1))


def collapsed(trace: Trace) -> dict[str, np.ndarray]:
    """Per method ``[T]`` bool: the recorded steps in collapse (module docstring: the one rule)."""
    ok = g1_not_small(trace.norms[:, 0])
    with np.errstate(invalid="ignore"):
        return {n: ok & (r < COLLAPSE_RATIO) for n, r in trace.ratio.items()}


def stretches(mask: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of True in ``mask`` as ``(first, last)`` record indices, in order."""
    m = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    edges = np.flatnonzero(np.diff(m.astype(np.int8)))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def _longest(mask: np.ndarray) -> tuple[int, int] | None:
    runs = stretches(mask)
    return max(runs, key=lambda ab: (ab[1] - ab[0], -ab[0])) if runs else None


def summary(trace: Trace) -> dict[str, Any]:
    """Per method: fraction of recorded steps in collapse, the longest stretch (steps A-B and its
    number of records), the median ``||d|| / ||g_1||``; the rule's numbers; skipped methods."""
    col = collapsed(trace)
    per: dict[str, Any] = {}
    for n in trace.methods:
        r = trace.ratio[n]
        fin = r[np.isfinite(r)]
        lg = _longest(col[n])
        per[n] = {"collapsed_fraction": float(col[n].mean()) if len(r) else 0.0,
                  "longest": None if lg is None else {"from_step": int(trace.steps[lg[0]]),
                                                      "to_step": int(trace.steps[lg[1]]),
                                                      "records": lg[1] - lg[0] + 1},
                  "median_ratio": float(np.median(fin)) if fin.size else None}
    return {"records": int(len(trace.steps)), "steps": [int(trace.steps[0]), int(trace.steps[-1])],
            "K": trace.K, "every": trace.header.get("every"), "rule": rule(), "methods": per,
            "skipped": trace.header.get("skipped", {}), "finding": finding(trace)}


def finding(trace: Trace, min_records: int = 2) -> str | None:
    """The plain-words finding, computed: the longest collapse stretch of a symmetric
    (non-hierarchical) method, the other symmetric methods collapsed over all of it, and what PCD
    did there. None when no symmetric method collapsed for ``min_records`` records in a row."""
    import pcd.methods as registry

    col = collapsed(trace)
    sym = [n for n in trace.methods if not registry.get(n).hierarchical] if trace.methods else []
    best: tuple[int, int, str] | None = None
    for n in sym:
        lg = _longest(col[n])
        if lg and lg[1] - lg[0] + 1 >= min_records and (best is None or lg[1] - lg[0] > best[1] - best[0]):
            best = (lg[0], lg[1], n)
    if best is None:
        return None
    a, b, top = best
    who = [top] + [n for n in sym if n != top and col[n][a:b + 1].all()]
    x = max(float(np.nanmax(trace.ratio[n][a:b + 1])) for n in who)
    g1 = float(np.median(trace.norms[a:b + 1, 0]))
    labels = [registry.get(n).display_name for n in who]
    names = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    plural = "updates" if len(labels) > 1 else "update"
    text = (f"Over steps {trace.steps[a]}–{trace.steps[b]}, {names}'s {plural} fell below {_pct(x)} of ‖g₁‖ "
            f"while ‖g₁‖ stayed at {g1:.3g}")
    if "pcd" in trace.ratio:
        hit = int(col["pcd"][a:b + 1].sum())
        pr = trace.ratio["pcd"][a:b + 1]
        text += "; PCD's did not" + (f" (its ‖d‖/‖g₁‖ stayed at {np.nanmin(pr):.2g} or more)." if np.isfinite(pr).any()
                                     else ".") if hit == 0 else f"; PCD's also did on {hit} of those records."
    else:
        text += "."
    return text


def _pct(x: float) -> str:
    """The smallest "round" percentage above ``x`` (a share), e.g. 0.0123 -> "2 %"."""
    p = 100.0 * x
    for step in (0.001, 0.01, 0.1, 1.0):
        if p < 100 * step:
            return f"{math.floor(p / step + 1) * step:.{max(0, -int(math.floor(math.log10(step))))}f} %"
    return f"{math.floor(p) + 1:.0f} %"


# --------------------------------------------------------------------------- snapshot -> page 01

def snapshot_vectors(gram: Any) -> dict[str, Any]:
    """The Gradient geometry page's view of one recorded Gram matrix: ``g_1`` along x with length
    1, ``g_2`` at its angle, and (K >= 3) ``g_3`` projected onto the plane of ``g_1, g_2`` (its
    in-plane part; ``g3_out`` = the share of ``||g_3||`` out of that plane). Returns ``{"angle",
    "norm2", ["angle3", "norm3", "g3_out"]}`` in the page's units (degrees, ``||g_1|| = 1``)."""
    G = np.asarray(gram, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] < 2 or G.shape != (G.shape[0], G.shape[0]) or not np.isfinite(G).all():
        raise ValueError("snapshot: need a finite [K, K] Gram matrix with K >= 2")
    if not G[0, 0] > 0:
        raise ValueError("snapshot: g1 = 0 at this step; there is no direction to draw against")
    n1 = math.sqrt(G[0, 0])
    n2 = math.sqrt(max(G[1, 1], 0.0))
    x2 = G[0, 1] / n1                      # g2's component along g1
    y2 = math.sqrt(max(G[1, 1] - x2 * x2, 0.0))
    out: dict[str, Any] = {"angle": math.degrees(math.atan2(y2, x2)), "norm2": n2 / n1}
    if G.shape[0] >= 3:
        x3 = G[0, 2] / n1
        y3 = (G[1, 2] - x2 * x3) / y2 if y2 > 0 else 0.0
        n3 = math.sqrt(max(G[2, 2], 0.0))
        inplane = math.hypot(x3, y3)
        out.update(angle3=math.degrees(math.atan2(y3, x3)), norm3=inplane / n1,
                   g3_out=math.sqrt(max(n3 * n3 - inplane * inplane, 0.0)) / n3 if n3 > 0 else 0.0)
    return out


def snapshot_query(trace: Trace, index: int) -> dict[str, Any]:
    """The Gradient geometry page's URL settings for record ``index`` (:func:`snapshot_vectors`,
    rounded and clipped into the page's slider ranges: angle 0..180 degrees, norms 0.1..3 of
    ``||g_1||``), the monitored PCD's tau when it is one number, and ``clipped`` (True when a norm
    was outside the page's range, so the picture is not to scale)."""
    T = len(trace.steps)
    if not 0 <= int(index) < T:
        raise ValueError(f"snapshot: record index must be in [0, {T - 1}], got {index}")
    v = snapshot_vectors(trace.gram[int(index)])

    def norm(x: float) -> float:
        return round(min(max(round(x / 0.05) * 0.05, 0.1), 3.0), 2)

    q: dict[str, Any] = {"angle": int(round(v["angle"])), "norm2": norm(v["norm2"])}
    clipped = not 0.1 <= v["norm2"] <= 3.0
    if "angle3" in v:
        q.update(g3="true", angle3=int(round(v["angle3"])), norm3=norm(v["norm3"]))
        clipped = clipped or not 0.1 <= v["norm3"] <= 3.0
    tau = (trace.header.get("methods") or {}).get("pcd", {}).get("tau")
    if isinstance(tau, (int, float)) and not isinstance(tau, bool) and 0.0 <= tau <= 1.0:
        q["tau"] = round(float(tau), 2)
    return {"query": q, "clipped": clipped, "g3_out": v.get("g3_out", 0.0)}


def summary_rows(trace: Trace) -> list[dict[str, Any]]:
    """:func:`summary`'s per-method figures as table rows (display names, steps A-B)."""
    import pcd.methods as registry

    s = summary(trace)["methods"]
    rows = []
    for n, v in s.items():
        lg = v["longest"]
        rows.append({"method": registry.get(n).display_name, "collapsed (% of records)": 100 * v["collapsed_fraction"],
                     "longest collapse (steps)": "—" if lg is None else f"{lg['from_step']}–{lg['to_step']}",
                     "median ‖d‖/‖g₁‖": v["median_ratio"]})
    return rows
