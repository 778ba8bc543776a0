"""Animations for slides from the pages: a size, a format (GIF / MP4), a **Build** button with a
progress bar fed frame by frame by the renderer (:mod:`pcd.viz.export`), then the download.

One call per page (the page keeps one line): :func:`toy_export` (Toy landscapes: the map, the
objective-space panel beside it, the gradient inset under it), :func:`tau_export` (τ dial, lesson step 7: the budget curves
played), :func:`lesson_export` (the lesson's animated steps: 2, the saddle run; 7, the τ curves). The generic widget is
:func:`animation_export`. The same files come from the command line
(``python -m pcd toy ... --gif F --mp4 F``, ``python -m pcd tau ... --gif F --mp4 F``).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import streamlit as st

from pcd.viz.export import FORMATS, SLIDE_SIZES, mp4_missing

Build = Callable[[str, tuple[int, int], Callable[[float], None]], bytes]
SIZE_LABELS = {"1280x720": "1280 × 720", "1920x1080": "1920 × 1080"}


def _signature(settings: dict[str, Any], fmt: str, size: str) -> str:
    raw = json.dumps([settings, fmt, size], sort_keys=True, default=str)
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]


def animation_export(build: Build, stem: str, *, key: str, settings: dict[str, Any],
                     cli: str | None = None, title: str = "Animation for slides") -> None:
    """The export widget: size (1280 × 720 / 1920 × 1080) and format (GIF / MP4) pickers, a
    **Build** button (key ``{key}_build``) that calls ``build(fmt, (w, h), progress)`` under an
    ``st.progress`` bar (``progress(share)`` per frame), and the file's download button (key
    ``{key}_download``, ``{stem}.gif`` / ``.mp4``), kept while the settings stay the same. MP4
    without PyAV: one line says so and the button is off. A ``ValueError`` from ``build`` is shown
    as its one line. ``settings`` are the caption strip's (they name the file's run); ``cli``: the
    command that writes the same file."""
    from pcd.ui import show_error

    box = st.container(border=True, key=f"pcd_anim_{key}")
    with box:
        st.markdown(f"**{title}** — the settings in a caption strip"
                    + (f" · same file: `{cli}`" if cli else ""))
        c_size, c_fmt, c_go = st.columns([1.2, 1.2, 1], vertical_alignment="bottom")
        with c_size:
            size = str(st.selectbox("size", list(SLIDE_SIZES.keys()), format_func=lambda k: SIZE_LABELS.get(k, k),
                                    key=f"{key}_size"))
        with c_fmt:
            fmt = str(st.radio("format", list(FORMATS.keys()), horizontal=True, format_func=lambda k: str(k).upper(),
                               key=f"{key}_fmt"))
        missing = mp4_missing() if fmt == "mp4" else None
        with c_go:
            go = st.button("Build animation", key=f"{key}_build", disabled=missing is not None, width="stretch",
                           icon=":material/movie:")
        if missing:
            st.caption(missing)
        sig = _signature(settings, fmt, size)
        store = f"_pcd_anim_{key}"
        if go:
            bar = st.progress(0.0, text="drawing frames…")
            last = [-1]

            def progress(share: float) -> None:
                pct = int(100 * min(max(share, 0.0), 1.0))
                if pct != last[0]:  # one update per percent
                    last[0] = pct
                    bar.progress(pct / 100, text=f"drawing frames… {pct} %" if pct < 100 else "encoding…")

            try:
                data = build(fmt, SLIDE_SIZES[size], progress)
            except ValueError as exc:
                bar.empty()
                show_error(exc)
                return
            bar.progress(1.0, text=f"done: {len(data) / 1e6:.2f} MB")
            st.session_state[store] = (sig, fmt, data)
        kept = st.session_state.get(store)
        if kept and kept[0] == sig:
            _, kfmt, data = kept
            st.download_button(f"Download {kfmt.upper()} ({len(data) / 1e6:.2f} MB)", data,
                               file_name=f"{stem}_{size}.{kfmt}", mime=FORMATS[kfmt], key=f"{key}_download",
                               icon=":material/download:", type="primary")


def _caption(settings: dict[str, Any]) -> dict[str, Any]:
    """The caption strip's settings: the run's (problem, methods, τ, optimizer, lr, steps), no view options."""
    return {k: v for k, v in settings.items() if k not in ("map bounds", "starts")}


def toy_export(problem: Any, res: Any, background: dict[str, Any], settings: dict[str, Any], *,
               log: bool = True, inset_start: int | None = None, inset_methods: Iterable[str] | None = None,
               key: str = "toy_anim", stem: str = "toy_landscape") -> None:
    """Toy landscapes (and the lesson's saddle): the map, the objective-space panel beside it (two
    objectives) and the gradient inset of start ``inset_start`` under it (None: no inset; for
    ``inset_methods``, default all), on the page's frames (:data:`pcd.viz.toy.TOY_FRAMES`)."""
    from pcd.experiments.toy import objective_space, trajectory_gradients
    from pcd.viz.export import toy_animation
    from pcd.viz.toy import TOY_FRAMES

    caption = _caption(settings)
    shown = None if inset_methods is None else [m for m in inset_methods if m in res.methods]

    def build(fmt: str, size: tuple[int, int], progress: Callable[[float], None]) -> bytes:
        space = objective_space(problem, res, background["grid"]) if res.losses.shape[-1] == 2 else None
        grads = None if inset_start is None else trajectory_gradients(problem, res, int(inset_start),
                                                                                methods=shown)
        return toy_animation(res, background, fmt, size=size, settings=caption, max_frames=TOY_FRAMES,
                             progress=progress, space=space, log=log, grads=grads)

    methods = ",".join(str(m) for m in res.methods)
    cli = (f"python -m pcd toy --problem {settings.get('problem')} --methods {methods} --steps {res.steps} "
           f"--lr {res.lr:g} --optimizer {res.optimizer}"
           + (f" --tau {settings['tau']:g}" if isinstance(settings.get("tau"), (int, float)) else "")
           + ("" if inset_start is None else f" --inset {int(inset_start) + 1}")
           + " --gif F.gif --mp4 F.mp4") if settings.get("problem") != "custom" else None
    animation_export(build, stem, key=key, settings=caption, cli=cli)


def lesson_saddle_export(problem: Any, res: Any, key: str = "lesson_saddle_anim") -> None:
    """Lesson step 2: the saddle run it animates (its map's view box: the problem's, grown to the
    paths) with the step's gradient inset (start S1; PCD, weighted sum, MGDA)."""
    bg = _lesson_background(problem, res)
    settings = {"problem": res.problem, "methods": list(res.methods), "tau": _tau_of(res), "optimizer": res.optimizer,
                "lr": res.lr, "steps": res.steps}
    toy_export(problem, res, bg, settings, key=key, stem="lesson_saddle", inset_start=0,
               inset_methods=("pcd", "ws", "mgda"))  # the step's figure: the inset of S1 for these three


def lesson_export(step: str, saddle: Callable[[], tuple[Any, Any]], tau: tuple[str, Any, Any, float]) -> None:
    """The lesson's animated steps: ``"saddle"`` (``saddle()`` -> (problem, run), the step's own
    cached run) and ``"tau"`` (``tau`` = (problem, taus, budgets, lr) of the step's figure); other
    steps have no animation and show nothing."""
    if step == "saddle":
        lesson_saddle_export(*saddle())
    elif step == "tau":
        problem, taus, budgets, lr = tau
        tau_export(problem, taus, budgets, lr, key="lesson_tau_anim", stem="lesson_tau")


@st.cache_resource(show_spinner=False, max_entries=4)
def _lesson_background(_problem: Any, _res: Any) -> dict[str, Any]:
    from pcd.viz import toy as toy_map

    return toy_map.toy_background(_problem, toy_map.fit_bounds(_res, _problem.bounds))


def _tau_of(res: Any) -> Any:
    return (res.method_params or {}).get("pcd", {}).get("tau")


def tau_export(problem: str, taus: Iterable[float], budgets: Iterable[int], lr: float, *,
               key: str = "td_anim", stem: str = "tau_dial", log: bool | None = None) -> None:
    """τ dial (and lesson step 7): the budget curves played from step 0 to the largest budget --
    PCD for every τ (one batched run, :func:`pcd.experiments.animation.tau_budget_run`, run on the
    click), the mean losses over the problem's starts, each budget's curve left behind."""
    taus = [float(t) for t in taus]
    budgets = sorted(int(b) for b in budgets)
    log = problem == "saddle2d" if log is None else log  # as the page's chart
    settings = {"problem": problem, "method": "pcd", "τ": taus, "optimizer": "adam", "lr": lr, "steps": budgets}

    def build(fmt: str, size: tuple[int, int], progress: Callable[[float], None]) -> bytes:
        import pcd.problems as problems
        from pcd.experiments.animation import tau_budget_run
        from pcd.viz.export import tau_animation

        res = tau_budget_run(problem, taus, budgets, lr, frames=100)
        prob = problems.named(problem)
        front = prob.pareto_front(200)
        return tau_animation(res, taus, budgets, fmt, front=None if front is None else np.asarray(front), log=log,
                             size=size, settings=settings, max_frames=100, progress=progress)

    cli = (f"python -m pcd tau --problem {problem} --taus {','.join(f'{t:g}' for t in taus)} "
           f"--budgets {','.join(map(str, budgets))} --lr {lr:g} --gif F.gif --mp4 F.mp4")
    animation_export(build, stem, key=key, settings=settings, cli=cli, title="Budget curves, animated, for slides")
