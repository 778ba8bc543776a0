"""Page 02, Toy landscapes: its defaults and choices (problems, formula presets, learning rates,
step budgets), start-point parsing, the hyper-parameters of a shared link, the tables under the map,
the objective-space data, and its cached runs and figures."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import streamlit as st

import pcd.methods as registry
import pcd.problems as problems
from pcd import _validate as V
from pcd.experiments.toy import objective_space, trajectory_gradients
from pcd.studio import available
from pcd.viz.theme import outcome_label
from pcd.viz.toy import fit_bounds

# the page's problems (keys of pcd.problems.NAMED; the menu shows each one's display_name)
PROBLEMS = ("saddle2d", "double_well", "two_task", "quadratic", "quadratic_torchjd", "custom")
PROBLEM, METHODS = "saddle2d", ("pcd", "ws", "mgda", "pcgrad", "cagrad", "famo")
TAU, OPT, LR, STEPS = 0.02, "adam", 0.02, 1000
INSET_START, WIDTH = 0, "medium"  # the inset at S1; the map laid out for a 1280-1440 px window
OBJ_LOG = True  # the objective-space panel on log axes (exact zeros drawn at the floor)
OBJ_SIDE_PX = 400.0  # the panel's width beside the map (presenter mode: pcd.ui.figure_row)


def make_problem(name: str, primary: str | None = None, secondary: str | None = None,
                 bounds: Sequence[Sequence[float]] | None = None, starts: Any = None):
    """The 2-D problem of the toy page (:func:`pcd.problems.named`); for ``custom``, the formula
    pair (the parser's ValueError names the bad token and its position)."""
    key = str(name).strip().lower()
    if key not in PROBLEMS:
        raise ValueError(f"unknown toy problem {name!r}; allowed: {', '.join(PROBLEMS)}")
    kwargs: dict[str, Any] = {}
    if key == "custom":
        if primary is not None:
            kwargs["primary"] = primary
        if secondary is not None:
            kwargs["secondaries"] = [secondary]
        if bounds is not None:
            kwargs["bounds"] = bounds
        if starts is not None:
            kwargs["starts"] = starts
    return problems.named(key, **kwargs)


def map_figure(problem: Any, res: Any, background: Any = None, *, inset_start: int | None = 0, **kw: Any) -> Any:
    """:func:`pcd.viz.toy.toy_map_figure` with the gradient inset of start ``inset_start`` (its
    gradients at every recorded frame: :func:`pcd.experiments.toy.trajectory_gradients`)."""
    from pcd.viz.toy import toy_map_figure

    inset = None if inset_start is None else trajectory_gradients(problem, res, int(inset_start))
    return toy_map_figure(problem, res, background, inset=inset, **kw)


MAX_STARTS = 64


def parse_starts(text: str, dim: int = 2) -> np.ndarray:
    """Typed start points ``"x, y; x, y"`` (or one point per line) -> ``[S, dim]``.

    Raises ValueError naming the bad entry; at most ``MAX_STARTS`` points.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("type at least one start point as 'x, y' (separate points with ';' or new lines)")
    parts = [p.strip() for p in text.replace("\n", ";").split(";") if p.strip()]
    if len(parts) > MAX_STARTS:
        raise ValueError(f"at most {MAX_STARTS} start points, got {len(parts)}")
    pts = []
    for i, part in enumerate(parts):
        vals = [v for v in part.replace("(", " ").replace(")", " ").replace(",", " ").split() if v]
        if len(vals) != dim:
            raise ValueError(f"start point {i + 1} ({part!r}) must have {dim} numbers")
        try:
            p = [float(v) for v in vals]
        except ValueError:
            raise ValueError(f"start point {i + 1} ({part!r}) must contain numbers only") from None
        if not all(math.isfinite(v) for v in p):
            raise ValueError(f"start point {i + 1} ({part!r}) must be finite")
        pts.append(p)
    return np.array(pts, dtype=np.float64)


def grid_starts(bounds: Sequence[Sequence[float]], n: int = 3, margin: float = 0.12) -> np.ndarray:
    """An ``n x n`` grid of start points inside 2-D ``bounds`` (``margin`` = fraction left at each edge)."""
    n = int(n)
    if not 1 <= n <= 8:
        raise ValueError(f"grid size must be in [1, 8] (at most 64 starts), got {n}")
    margin = V.number(margin, "margin", low=0.0, high=0.49, strict=False)
    try:
        (a0, a1), (b0, b1) = bounds
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be ((xmin, xmax), (ymin, ymax)), got {bounds!r}") from None
    def axis(lo, hi):
        w = hi - lo
        return np.array([(lo + hi) / 2]) if n == 1 else np.linspace(lo + margin * w, hi - margin * w, n)
    X, Y = np.meshgrid(axis(float(a0), float(a1)), axis(float(b0), float(b1)))
    return np.stack([X.ravel(), Y.ravel()], axis=1)


def endpoint_table(res: Any, objective_names: Sequence[str] | None = None):
    """One row per trajectory: method, start, end point, final losses, ``||grad f_1||``, CMS
    residual and the engine's diagnosis in words (with the step for divergence)."""
    import pandas as pd

    K = res.end_losses.shape[-1]
    names = list(objective_names) if objective_names is not None else [f"f{k + 1}" for k in range(K)]
    recs = []
    for m, name in enumerate(res.methods):
        label = registry.get(name).display_name if name in registry.available() else name
        for s in range(res.S):
            diag = str(res.diagnosis[m, s])
            text = outcome_label(diag, name, short=True)
            if diag == "diverged" and res.diverged_step[m, s] == 0 \
                    and not np.isfinite(np.asarray(res.losses)[m, s, 0]).all():
                text = "start is where the formula is undefined"
            elif diag in ("diverged", "error") and res.diverged_step[m, s] >= 0:
                text += f" at step {int(res.diverged_step[m, s])}"
            if diag == "error" and name in res.errors:
                text += f" ({res.errors[name]})"
            rec = {"method": label, "start": f"S{s + 1} ({', '.join(f'{v:.2f}' for v in res.starts[s])})",
                   "end": "(" + ", ".join(f"{v:.3f}" for v in res.end[m, s]) + ")"}
            for k in range(K):
                rec[f"final {names[k]}"] = float(res.end_losses[m, s, k])
            rec["‖∇f₁‖"] = float(res.primary_grad_norm[m, s])
            rec["CMS residual"] = float(res.cms_residual[m, s])
            rec["diagnosis"] = text
            recs.append(rec)
    return pd.DataFrame.from_records(recs)


def trajectories_table(res: Any):
    """Long table of every recorded point: method, start, step, coordinates, losses (for CSV)."""
    import pandas as pd

    M, S, T, n = res.positions.shape
    K = res.losses.shape[-1]
    cols: dict[str, Any] = {
        "method": np.repeat(np.asarray(res.methods, dtype=object), S * T),
        "start": np.tile(np.repeat(np.arange(1, S + 1), T), M),
        "step": np.tile(np.asarray(res.record), M * S),
    }
    for i in range(n):
        cols[f"x{i + 1}"] = res.positions[..., i].reshape(-1)
    for k in range(K):
        cols[f"f{k + 1}"] = res.losses[..., k].reshape(-1)
    cols["update_norm"] = res.update_norms.reshape(-1)
    return pd.DataFrame(cols)


# Named formula pairs for the custom problem (primary, secondary, the map's box): typed into the
# formula boxes by the page's preset selector, editable from there.
FORMULAS: dict[str, dict[str, Any]] = {
    "valleys": {"label": "Two valleys, box secondary (the default)", "f1": "(x**2-4)**2/4 + y**2/2",
                "f2": "relu(abs(x-2)-0.5) + relu(abs(y)-0.5)", "bounds": ((-3.5, 3.5), (-2.0, 2.0))},
    "himmelblau": {"label": "Himmelblau: four minima, the secondary picks (3, 2)",
                   "f1": "((x**2+y-11)**2 + (x+y**2-7)**2)/10",
                   "f2": "relu(abs(x-3)-0.3) + relu(abs(y-2)-0.3)", "bounds": ((-5.0, 5.0), (-5.0, 5.0))},
    "rosenbrock": {"label": "Rosenbrock-style pair: one curved valley, minima at (±1, 1)",
                   "f1": "(1-x)**2 + 5*(y-x**2)**2", "f2": "(1+x)**2 + 5*(y-x**2)**2",
                   "bounds": ((-2.0, 2.0), (-1.0, 3.0))},
    "camel": {"label": "Three-hump camel: the secondary wants the side hump (-1.75, 0.87)",
              "f1": "2*x**2 - 1.05*x**4 + x**6/6 + x*y + y**2",
              "f2": "relu(abs(x+1.75)-0.3) + relu(abs(y-0.87)-0.3)", "bounds": ((-2.5, 2.5), (-2.0, 2.0))},
    "log_barrier": {"label": "Log barrier: f1 undefined for x <= 0",
                    "f1": "x - log(x) + (y-1)**2/2", "f2": "abs(y)", "bounds": ((-1.0, 3.0), (-1.5, 2.5)),
                    "starts": ((2.6, 2.0), (0.4, -1.0), (2.2, -1.2))},
}


def formula_caret(exc: BaseException) -> str | None:
    """For a formula error of the custom problem: the formula with a caret under the position
    the parser names (``"x**2 + foo(y)\n       ^"``), or None when the error has no position."""
    text, pos = getattr(exc, "formula", None), getattr(exc, "position", None)
    if not isinstance(text, str) or not isinstance(pos, int) or "\n" in text:
        return None
    return f"{text}\n{' ' * max(0, min(pos, len(text)))}^"


def hparam_values(method: str, values: dict[str, Any] | None) -> dict[str, Any]:
    """Keep only a method's known hyper-parameters that differ from their defaults (validated)."""
    cls = registry.get(method)
    out = {}
    known = {p.name: p for p in cls.params}
    for k, v in (values or {}).items():
        if k not in known:
            raise ValueError(f"{method}: unknown hyper-parameter {k!r}; allowed: {', '.join(known) or 'none'}")
        v = known[k].validate(v, method)
        if v != known[k].default:
            out[k] = v
    return out


def url_hparams(obj: Any) -> dict[str, dict[str, Any]]:
    """Hyper-parameters from a shared link (``{"method": {"param": value}}``), every value
    validated by its :class:`~pcd.methods.base.Param`; anything else (unknown methods or names,
    ``{"pcd": 5}``, ``null``, lists where a number goes, 400-digit numbers) is dropped."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(obj, dict):
        return out
    names = set(registry.available())
    for m, vals in obj.items():
        if m not in names or not isinstance(vals, dict):
            continue
        known = {p.name: p for p in registry.get(m).params}
        good = {}
        for k, v in vals.items():
            if k not in known or isinstance(v, (list, dict)) or v is None:
                continue
            try:
                good[k] = known[k].validate(v, m)
            except ValueError:
                continue
        if good:
            out[m] = good
    return out


LRS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
STEP_CHOICES = (200, 500, 1000, 1500, 2000, 3000, 5000)


def toy_query(problem: str, method: str, start: Sequence[float], *, tau: float, optimizer: str, lr: float,
              steps: int, f1: str | None = None, f2: str | None = None) -> dict[str, str]:
    """Query parameters that open the toy page on ONE start point and one method (the basin map's
    click): ``problem``, ``methods``, ``tau``, ``opt``, ``lr``, ``steps``, ``starts=typed``, ``typed``
    (and ``f1``/``f2`` for a custom pair). ``lr``/``steps`` must be among the toy page's choices
    (:data:`LRS`, :data:`STEP_CHOICES`), else that page would fall back to its defaults."""
    key = str(problem).strip().lower()
    if key not in PROBLEMS:
        raise ValueError(f"unknown toy problem {problem!r}; allowed: {', '.join(PROBLEMS)}")
    registry.get(method)
    if float(lr) not in LRS or int(steps) not in STEP_CHOICES:
        raise ValueError(f"the toy page offers lr in {list(LRS)} and steps in {list(STEP_CHOICES)}; "
                         f"got lr {lr}, steps {steps}")
    x, y = (float(v) for v in start)
    q = {"problem": key, "methods": method, "tau": f"{float(tau):g}", "opt": str(optimizer), "lr": f"{float(lr):g}",
         "steps": str(int(steps)), "starts": "typed", "typed": f"{x:.3f}, {y:.3f}"}
    if key == "custom":
        q.update({"f1": str(f1 or ""), "f2": str(f2 or "")})
    return q


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_problem(name: str, f1: str | None, f2: str | None, bounds: Any, starts: Any = None) -> Any:
    """The problem (a custom formula pair parsed once per text)."""
    return make_problem(name, f1, f2, bounds=bounds, starts=starts)


@st.cache_resource(show_spinner=False, max_entries=16)
def toy_background(name: str, f1: str | None, f2: str | None, pbounds: Any, view: Any) -> dict[str, Any]:
    """The landscape under the map (grid, PNG image, Pareto set, optima), once per problem and box."""
    from pcd.viz import toy as toy_map

    return toy_map.toy_background(toy_problem(name, f1, f2, pbounds), view)


MAX_METHOD_RUNS = 256  # one method's runs from the page's starts, kept per settings (least recently used go)


class _MethodRuns:
    """``key -> one method's RunResult`` (:func:`pcd.experiments.toy.select_methods`), least recently
    used first out; thread-safe (every session of the server shares it)."""

    def __init__(self, max_entries: int = MAX_METHOD_RUNS) -> None:
        import threading
        from collections import OrderedDict

        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple, Any] = OrderedDict()

    def get(self, key: tuple) -> Any:
        with self._lock:
            hit = self._runs.get(key)
            if hit is not None:
                self._runs.move_to_end(key)
            return hit

    def put(self, key: tuple, res: Any) -> None:
        with self._lock:
            self._runs[key] = res
            self._runs.move_to_end(key)
            while len(self._runs) > self.max_entries:
                self._runs.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _method_runs() -> _MethodRuns:
    """The one store per server process (cleared with Streamlit's resource cache)."""
    return _MethodRuns()


@st.cache_data(show_spinner=False, max_entries=128)
def toy_run_set(name: str, f1: str | None, f2: str | None, pbounds: Any, methods: tuple[str, ...], hp_json: str,
                tau: float, opt: str, lr: float, steps: int, starts: tuple) -> Any:
    """Every chosen method from every start; ``hp_json``: each method's own settings, ``tau`` given
    to the methods with a primary knob. A method's path does not depend on the others run beside it
    (:func:`pcd.engine.run` seeds each method's generator from its name), so each method's runs are
    kept on their own (:class:`_MethodRuns`): a method added to the set runs alone, one taken out
    runs nothing, and the methods not run yet run together in ONE engine call (~75 ms for the
    default six methods x 1000 steps, against ~250 ms one method at a time)."""
    import json

    from pcd.engine import run
    from pcd.experiments.toy import merge_results, select_methods

    hp = json.loads(hp_json)
    params = method_params(methods, hp, tau) or {}
    store = _method_runs()

    def key(m: str) -> tuple:
        return (name, f1, f2, pbounds, m, json.dumps(params.get(m), sort_keys=True), opt, lr, steps, starts)

    have = {m: store.get(key(m)) for m in methods}
    missing = [m for m in methods if have[m] is None]
    if missing:
        fresh = run(toy_problem(name, f1, f2, pbounds), missing, starts=np.array(starts), steps=steps, optimizer=opt,
                    lr=lr, method_params={m: params[m] for m in missing if m in params} or None, record=LIVE_RECORD)
        for m in missing:
            have[m] = select_methods(fresh, [m])
            store.put(key(m), have[m])
    return merge_results([have[m] for m in methods])


def method_params(methods: Sequence[str], hparams: dict[str, dict[str, Any]], tau: float) -> dict | None:
    """The engine's ``method_params`` for the page's settings: each method's own hyper-parameters, with
    τ on its primary knob (PCD's ``tau``); None when no method has any."""
    params: dict[str, dict[str, Any]] = {}
    for m in methods:
        hp = dict(hparams.get(m, {}))
        knob = registry.get(m).primary_knob
        if knob is not None:
            hp[knob] = tau
        if hp:
            params[m] = hp
    return params or None


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_map(key: tuple, _prob: Any, _res: Any, _bg: Any, inset_start: int | None, width: str,
            controls: bool = False, animate: bool = True, text_scale: float = 1.0) -> Any:
    """The page's map (:func:`pcd.viz.toy.toy_map_figure`) with the gradient inset of start
    ``inset_start`` (None: no inset), serialized once from its spec (:class:`pcd.viz.theme.FrozenFigure`)."""
    from pcd.viz.theme import FrozenFigure

    return FrozenFigure(map_figure(_prob, _res, _bg, inset_start=inset_start, width=width, controls=controls,
                                   animate=animate, spec_only=True,
                                   text_scale=text_scale))  # text_scale: presenter mode's labels


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_objective(key: tuple, _prob: Any, _res: Any, _bg: Any, log: bool, width: str, legend: bool = True,
                  text_scale: float = 1.0) -> Any:
    """The page's objective-space panel (:func:`pcd.viz.objective.objective_space_figure` of
    :func:`objective_space`), on the map's frames, its legend laid out for the page's
    width class (as the map's; ``legend=False``: none, beside the map), serialized once."""
    from pcd.viz.objective import objective_space_figure
    from pcd.viz.theme import FrozenFigure
    from pcd.viz.toy import TOY_CHART_PX, TOY_FRAMES

    space = objective_space(_prob, _res, _bg["grid"])
    return FrozenFigure(objective_space_figure(space, log=log, max_frames=TOY_FRAMES, legend=legend, spec_only=True,
                                               width_px=TOY_CHART_PX[width] if legend else OBJ_SIDE_PX,
                                               text_scale=text_scale))  # presenter mode's labels


@st.cache_resource(show_spinner=False, max_entries=8)
def toy_inset(key: tuple, _prob: Any, _res: Any, start: int, frames: tuple[str, ...], text_scale: float = 1.2,
              width_px: float = 1200.0) -> Any:
    """The gradient inset of start ``start`` as a chart of its own under the map (the map beside its
    objective space; :func:`pcd.viz.teaching.inset_figure`, up to six panels a row -- fifteen methods
    in one row crushed the panels and ran their numbers into each other --, as tall as its rows need
    with text ``text_scale`` times its size: 1.2 on a projector) laid out for a chart ``width_px`` wide, on
    the map's ``frames``, serialized once."""
    from pcd.viz.teaching import below_inset_height_px, inset_figure
    from pcd.viz.theme import FrozenFigure

    cols = max(1, min(len(_res.methods), 6))
    height = max(280, int(text_scale * below_inset_height_px(len(_res.methods), cols)) + 50)  # + the margins
    return FrozenFigure(inset_figure(trajectory_gradients(_prob, _res, int(start)), list(frames), width_px=width_px,
                                     height=height, cols=cols, text_scale=text_scale, spec_only=True))


@st.cache_resource(show_spinner=False, max_entries=32)
def toy_loss(key: tuple, _res: Any, names: tuple[str, ...]) -> Any:
    """The page's loss-vs-step figure with its step cursor at 0, serialized once."""
    from pcd.viz.landscape import loss_figure
    from pcd.viz.teaching import add_step_cursor
    from pcd.viz.theme import FrozenFigure

    return FrozenFigure(add_step_cursor(loss_figure(_res, names, spec_only=True), 0))


def toy_figures(problem: Any, res: Any, bg: dict[str, Any], key: tuple, inset_start: int | None, width: str,
                present: bool = False, obj_log: bool = OBJ_LOG, present_font: float = 1.2,
                text_scale: float = 1.0) -> dict[str, Any]:
    """The page's figures for its runs (:func:`toy_runs`) and layout, each cached: ``map``, ``loss``,
    ``objective`` (None unless two objectives), ``inset`` (its own chart, or None) and ``side`` (the
    map beside its objective space). ``width``: the page's width class (the frame controls report it).
    Beside the objective space -- any window wider than ~800 px, presenter mode too -- the map is laid
    out for its cell (~640 px in a 1440-px window; presenter mode: the ~830-px cell of a 1280-px
    projector) and the gradient inset of start ``inset_start`` is a chart of its own under the
    controls (on a projector its text ``present_font`` times larger, as presenter mode's other type:
    ``pcd.ui.chart.PRESENT_FIT``); an 800-px window ("narrow") has the map with its inset and the
    objective space under them. ``text_scale``: the map's end labels and the objective space's verdicts that
    much larger (presenter mode: :func:`pcd.ui.presenter.text_scale`)."""
    from pcd.viz.toy import TOY_CHART_PX

    two = res.losses.shape[-1] == 2
    side = two and (present or width != "narrow")
    map_class = width if present or not side else "narrow"
    fig = toy_map(key + (None if side else inset_start, map_class), problem, res, bg,
                  None if side else inset_start, map_class, text_scale=text_scale)
    inset = None
    if side and inset_start is not None:
        scale, px = (float(present_font), 1200.0) if present else (1.0, TOY_CHART_PX[width])
        inset = toy_inset(key + (inset_start, scale, px), problem, res, inset_start, tuple(fig.frame_names), scale, px)
    return {"map": fig, "loss": toy_loss(key, res, tuple(bg["names"])), "inset": inset, "side": side,
            "objective": toy_objective(key, problem, res, bg, obj_log, width, legend=not side, text_scale=text_scale)
            if two else None}


def toy_runs(name: str, f1: str | None, f2: str | None, pbounds: Any, pstarts: Any, methods: Sequence[str],
             hparams: dict[str, dict[str, Any]], tau: float, opt: str, lr: float, steps: int, starts: Any,
             bounds_text: str | None = None) -> tuple[Any, Any, Any, dict[str, Any], tuple]:
    """The page's runs for its settings: ``(problem, results, view box, background, key)``. The view
    box is ``bounds_text`` (typed "x min, x max, y min, y max") or the problem's box grown to cover
    every trajectory; ``key`` is what the figures depend on (:func:`toy_map`, :func:`toy_loss`)."""
    import json

    problem = toy_problem(name, f1, f2, pbounds, pstarts)
    starts_key = tuple(map(tuple, np.round(np.asarray(starts, dtype=float), 10).tolist()))
    res = toy_run_set(name, f1, f2, pbounds, tuple(methods), json.dumps(hparams, sort_keys=True), tau, opt, lr, steps,
                      starts_key)
    box = V.box(bounds_text, "map bounds") if bounds_text and bounds_text.strip() else fit_bounds(res, problem.bounds)
    view = tuple(tuple(round(v, 6) for v in b) for b in box)
    bg = toy_background(name, f1, f2, pbounds, view)
    key = (name, f1, f2, pbounds, tuple(methods), json.dumps(hparams, sort_keys=True), tau, opt, lr, steps,
           starts_key, view)
    return problem, res, view, bg, key


# ---------------------------------------------------------------------------------------------
# Prefetch (pcd.studio.prefetch): after the page has drawn a view, the settings one click away are
# computed into the same caches by a background thread, while no page computes.
PREFETCH_CPU_S = 4.0  # the toy prefetch's own CPU per view, at most (the default view's 5 neighbours: ~1-1.5 s)


class ToyView(NamedTuple):
    """One view of the page, hashable: what :func:`toy_runs` and :func:`toy_figures` take."""

    name: str
    f1: str | None
    f2: str | None
    pbounds: Any
    pstarts: Any
    methods: tuple[str, ...]
    hp_json: str
    tau: float
    opt: str
    lr: float
    steps: int
    starts: tuple
    bounds_text: str | None
    inset_start: int | None
    width: str
    present: bool
    obj_log: bool
    present_font: float
    text_scale: float


def view_setting(name: str, f1: str | None, f2: str | None, pbounds: Any, pstarts: Any, methods: Sequence[str],
                 hparams: dict[str, dict[str, Any]], tau: float, opt: str, lr: float, steps: int, starts: Any,
                 bounds_text: str | None, inset_start: int | None, width: str, present: bool, obj_log: bool,
                 present_font: float, text_scale: float = 1.0) -> ToyView:
    """The page's settings as a :class:`ToyView` (the hyper-parameters as sorted JSON, starts as tuples)."""
    import json

    starts_t = tuple(map(tuple, np.asarray(starts, dtype=float).tolist()))
    return ToyView(name, f1, f2, pbounds, pstarts, tuple(methods), json.dumps(hparams, sort_keys=True), float(tau),
                   str(opt), float(lr), int(steps), starts_t, bounds_text, inset_start, str(width), bool(present),
                   bool(obj_log), float(present_font), float(text_scale))


def neighbours(view: ToyView) -> list[ToyView]:
    """The views one click away from ``view``, likeliest first: the other optimizer, the learning rate
    one notch down and up (:data:`LRS`), the steps one notch down and up (:data:`STEP_CHOICES`). τ
    moves redraw through the live path; a method taken out runs nothing."""
    out = [view._replace(opt=o) for o in ("adam", "sgd") if o != view.opt]
    if view.lr in LRS:
        j = LRS.index(view.lr)
        out += [view._replace(lr=LRS[k]) for k in (j - 1, j + 1) if 0 <= k < len(LRS)]
    if view.steps in STEP_CHOICES:
        j = STEP_CHOICES.index(view.steps)
        out += [view._replace(steps=STEP_CHOICES[k]) for k in (j - 1, j + 1) if 0 <= k < len(STEP_CHOICES)]
    return out


def compute_view(view: ToyView, _unit: Any = None, _progress: Any = None) -> None:
    """The runs and figures of one view into the page's caches (the prefetch's unit of work)."""
    import json

    problem, res, _view, bg, key = toy_runs(view.name, view.f1, view.f2, view.pbounds, view.pstarts, list(view.methods),
                                            json.loads(view.hp_json), view.tau, view.opt, view.lr, view.steps,
                                            np.array(view.starts), view.bounds_text)
    toy_figures(problem, res, bg, key, view.inset_start, view.width, view.present, view.obj_log, view.present_font,
                view.text_scale)


@st.cache_resource(show_spinner=False)
def _prefetcher() -> Any:
    """The page's prefetcher, one per server process (its thread starts on the first ask)."""
    from pcd.studio.prefetch import Prefetcher

    return Prefetcher(compute_view, max_settings=5, cpu_s=PREFETCH_CPU_S, later_cpu_s=0.0, name="pcd-toy-prefetch")


def prefetch(setting: ToyView) -> bool:
    """Ask the prefetch thread for the :func:`neighbours` of the view just drawn (replacing an earlier
    view's); False when the prefetch is off (``PCD_NO_PREFETCH=1``). Never blocks beyond a lock."""
    from pcd.studio.prefetch import enabled

    if not enabled():
        return False
    _prefetcher().ask(neighbours(setting))
    return True


def warm() -> None:
    """The page's default view: its runs and figures (:func:`toy_figures`)."""
    methods = available(METHODS)
    problem = toy_problem(PROBLEM, None, None, None)
    prob, res, _view, bg, key = toy_runs(PROBLEM, None, None, None, None, methods, {}, TAU, OPT, LR, STEPS,
                                         problem.default_starts())
    toy_figures(prob, res, bg, key, INSET_START, WIDTH)


# ---------------------------------------------------------------------------------------------
# Direct manipulation (issue 28 part 4): while a start point is dragged on the map, or the τ / lr
# slider moves, the page's live component (pcd.ui.live) asks for the new trajectories of every
# chosen method; they are computed here, by the engine, in ONE run call (all methods together:
# ~3x faster than one call per method), never cached (each drag position is new).

LIVE_RECORD = 200  # recorded steps of a live path: the page's runs' (toy_run_set), so frames line up
LIVE_DECIMALS = 5  # coordinates sent to the browser, rounded (1e-5 of a map unit: far below a pixel)
LIVE_KINDS = ("start", "tau", "lr")


def live_request(raw: Any, *, n_starts: int, view: Any) -> dict[str, Any]:
    """A live request from the browser, validated (:mod:`pcd._validate`): ``{"kind", "seq", "tau",
    "lr", "obj"}`` plus ``"s", "x", "y"`` for ``kind="start"`` (start index ``s`` of ``n_starts``, the new
    point inside the map's ``view`` box). τ in [0, 1], lr one of :data:`LRS`, ``seq`` an integer >= 0,
    ``obj`` true or false (whether the objective panel's points are wanted; true when absent).
    Raises ``ValueError`` (one line) for anything else."""
    if not isinstance(raw, dict):
        raise V.Invalid(f"live request must be an object, got {V.show(raw)}")
    kind = V.choice(raw.get("kind"), "live request kind", LIVE_KINDS)
    out: dict[str, Any] = {"kind": kind, "seq": V.integer(raw.get("seq"), "live request seq", low=0, high=V.INT64_MAX),
                           "tau": V.number(raw.get("tau"), "τ", low=0.0, high=1.0)}
    lr = V.number(raw.get("lr"), "learning rate", low=0.0, open_low=True)
    match = [c for c in LRS if abs(c - lr) <= 1e-9 * c]
    if not match:
        raise V.Invalid(f"learning rate must be one of {', '.join(f'{c:g}' for c in LRS)}, got {V.show(lr)}")
    out["lr"] = match[0]
    out["obj"] = V.boolean(raw.get("obj", True), "live request obj")
    if kind == "start":
        (x0, x1), (y0, y1) = V.box(view)
        out["s"] = V.integer(raw.get("s"), "start index", low=0, high=max(0, int(n_starts) - 1))
        out["x"] = _inside(raw.get("x"), "start x", x0, x1)
        out["y"] = _inside(raw.get("y"), "start y", y0, y1)
    return out


def _inside(value: Any, name: str, lo: float, hi: float) -> float:
    """A coordinate inside ``[lo, hi]``; one on the edge up to 1e-6 of the span outside (the browser's
    axis range vs the view box rounded to 6 decimals) is put on the edge."""
    tol = 1e-6 * (hi - lo)
    return min(hi, max(lo, V.number(value, name, low=lo - tol, high=hi + tol)))


def live_methods(kind: str, methods: Sequence[str]) -> list[str]:
    """The methods a live change moves: every one for a start point or the learning rate; for τ only
    those τ is a knob of (PCD's ``primary_knob``; the others' paths do not depend on it)."""
    return [m for m in methods if kind != "tau" or registry.get(m).primary_knob is not None]


def live_run(problem: Any, methods: Sequence[str], hparams: dict[str, dict[str, Any]], tau: float, opt: str,
             lr: float, steps: int, starts: Any) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The trajectories of ``methods`` from ``starts`` in ONE engine call (:func:`pcd.engine.run_paths`:
    the compiled path where it covers the run; positions and losses exactly :func:`pcd.engine.run`'s),
    with the page's settings (each method's hyper-parameters, τ for the methods it is a knob of),
    recorded at the page's steps (:data:`LIVE_RECORD`): ``(methods, record [T], positions [M, S, T, 2],
    losses [M, S, T, K])`` -- the losses evaluated by the problem in the engine's own steps. Not cached."""
    from pcd.engine import run_paths

    return run_paths(problem, list(methods), starts=np.asarray(starts, dtype=np.float64), steps=steps, optimizer=opt,
                     lr=lr, method_params=method_params(methods, hparams, tau), record=LIVE_RECORD, losses=True)


def live_paths(problem: Any, methods: Sequence[str], hparams: dict[str, dict[str, Any]], tau: float, opt: str,
               lr: float, steps: int, starts: Any, objective: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`live_run` as compact plain data for the map: ``{"methods", "record" (recorded steps),
    "x", "y" ([method][start][step], rounded to :data:`LIVE_DECIMALS`, None where not finite)}`` --
    the engine's positions at every recorded step (what the map draws at its last frame). With the
    objective-space panel's axes (``objective``: its figure's ``layout.meta``, ``{"log", "shifts",
    "floor"}``, :func:`pcd.viz.objective.objective_space_figure`) also ``"ox", "oy"``: the losses at
    those points as that panel plots them (:func:`pcd.viz.objective.shown_losses`: its log floor and
    shift), to float32 -- the precision the panel's own points are drawn with -- (None where not finite)."""
    names, record, positions, losses = live_run(problem, methods, hparams, tau, opt, lr, steps, starts)
    pos = np.round(np.asarray(positions, dtype=np.float64)[..., :2], LIVE_DECIMALS)

    def lists(a: np.ndarray) -> list:
        return [[[v if math.isfinite(v) else None for v in row] for row in per_m] for per_m in a.tolist()]

    out = {"methods": list(names), "record": [int(k) for k in record], "x": lists(pos[..., 0]),
           "y": lists(pos[..., 1])}
    if objective is not None and np.shape(losses)[-1] == 2:
        from pcd.viz.objective import FLOOR, shown_losses

        shown = shown_losses(losses, objective["shifts"], bool(objective["log"]), objective.get("floor", FLOOR))
        # 9 significant digits give back each float32 exactly (about half the characters of a float64)
        f32 = np.asarray(shown, dtype=np.float32).astype(np.float64)

        def short(a: np.ndarray) -> list:
            return [[[float(f"{v:.9g}") if math.isfinite(v) else None for v in row] for row in per_m]
                    for per_m in a.tolist()]

        out["ox"], out["oy"] = short(f32[..., 0]), short(f32[..., 1])
    return out


def live_answer(raw: Any, problem: Any, methods: Sequence[str], hparams: dict[str, dict[str, Any]], opt: str,
                steps: int, starts: Any, view: Any, objective: dict[str, Any] | None = None) -> dict[str, Any]:
    """The page's reply to a live request ``raw`` (:func:`live_request`): ``{"seq", "kind", "s",
    **live_paths}`` -- the moved start's trajectories for every method (``kind="start"``), or every
    start's for the methods the slider moves (``"tau"``/``"lr"``, :func:`live_methods`), with their
    points in the objective-space panel when ``objective`` (that panel's axes) is given and the request
    asks for them (``"obj"``: the browser skips them for a panel out of view, but once a second) -- or
    ``{"seq", "error"}`` (one line) for a request the validation refuses. Never raises ValueError."""
    seq = raw.get("seq") if isinstance(raw, dict) else None
    try:
        pts = np.asarray(starts, dtype=np.float64).reshape(-1, 2)
        q = live_request(raw, n_starts=len(pts), view=view)
        if q["kind"] == "start":
            pts = np.array([[q["x"], q["y"]]])
        moved = live_methods(q["kind"], methods)
        paths = live_paths(problem, moved, hparams, q["tau"], opt, q["lr"], steps, pts, objective if q["obj"] else None)
    except ValueError as exc:
        return {"seq": seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
                "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    return {"seq": q["seq"], "kind": q["kind"], "s": q.get("s"), **paths}


def moved_start(lines: str, s: Any, x: Any, y: Any, view: Any) -> str:
    """The typed start points ``lines`` ("x, y" a line, the page's starts) with line ``s`` moved to
    ``(x, y)`` (validated: an index of ``lines``, inside the map's ``view`` box), 3 decimals."""
    rows = [r for r in str(lines).splitlines() if r.strip()]
    (x0, x1), (y0, y1) = V.box(view)
    i = V.integer(s, "start index", low=0, high=max(0, len(rows) - 1))
    if not rows:
        raise V.Invalid("no start points to move")
    rows[i] = f"{_inside(x, 'start x', x0, x1):.3f}, {_inside(y, 'start y', y0, y1):.3f}"
    return "\n".join(rows)
