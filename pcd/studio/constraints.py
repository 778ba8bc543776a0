"""Page 07, Constraints vs fixed penalties: its defaults and cached computations (plain data,
keyed by the settings)."""
from __future__ import annotations

from typing import Any

import streamlit as st

# re-exported for the page: what it shows from the experiment as it is
from pcd.experiments.constraints import (  # noqa: F401
    DEFAULT_TAUS,
    PAPER_C,
    PAPER_EPS,
    PAPER_ETA,
    PAPER_LAGRANGIAN_ACC,
    PAPER_LAGRANGIAN_RATE,
    PAPER_PENALTY_ACC,
    PAPER_PENALTY_RATE,
    check_c,
    check_eps,
    epsilon_table,
    toy_solution,
)

EPS_GRID = tuple(round(0.05 * k, 2) for k in range(1, 19))  # 0.05 ... 0.90: the 1-D example's ε grid
LAG_METHODS = ("gda", "auglag", "nupi", "pcd")
EPS, PENALTY_C, X0, TOY_STEPS, TOL = 0.5, 0.5, 0.6, 500, 1.0


@st.cache_data(show_spinner="Running the 1-D example (Cooper + PCD)…", max_entries=32)
def cp_toy(eps: tuple, x0: float, steps: int) -> Any:
    """The Lagrangian methods and PCD on the 1-D example for every ε in ``eps``."""
    from pcd.experiments import constraints as C

    return C.run_toy(list(eps), 0.0, LAG_METHODS, x0=x0, steps=steps)


@st.cache_data(show_spinner=False, max_entries=256)
def cp_toy_penalty(eps: tuple, c: float, x0: float, steps: int) -> Any:
    """The fixed penalty c on the 1-D example."""
    from pcd.experiments import constraints as C

    return C.run_toy(list(eps), c, ("penalty",), x0=x0, steps=steps)[0]


def cp_toy_runs(eps: float, c: float, x0: float, steps: int) -> tuple[list, list, tuple]:
    """``(shown, grid runs, grid)``: the penalty run and the Lagrangian/PCD runs at ``eps``
    (read off the cached grid when ``eps`` is on it), the grid's runs and the grid."""
    from pcd.experiments import constraints as C

    grid = tuple(sorted(set(EPS_GRID) | set(C.PAPER_EPS)))
    if round(eps, 2) in grid and abs(eps - round(eps, 2)) < 1e-12:
        runs, idx = cp_toy(grid, x0, steps), grid.index(round(eps, 2))
    else:
        runs, idx = cp_toy((eps,), x0, steps), 0
    pen = cp_toy_penalty((eps,), c, x0, steps)
    pick = [C.ToyRun(r.method, r.family, r.param, r.eps[idx:idx + 1], r.x[:, idx:idx + 1], r.lam[:, idx:idx + 1],
                     r.settings) for r in runs]
    return [pen] + pick, runs, grid


@st.cache_data(show_spinner="Training the rate-constrained classifiers…", max_entries=4)
def cp_sweep() -> Any:
    """The rate-constrained classifiers (penalty, Lagrangian and PCD sweeps)."""
    from pcd.experiments import constraints as C

    return C.rate_sweep()


@st.cache_data(show_spinner="Bisection on the penalty coefficient…", max_entries=4)
def cp_bisection(tol: float) -> Any:
    """Bisection on the penalty coefficient to the rate target."""
    from pcd.experiments import constraints as C

    return C.penalty_bisection(tol=tol)


@st.cache_data(show_spinner="Timing both loops…", max_entries=4)
def cp_cost(steps: int, repeats: int) -> Any:
    """The constrained loop's cost over the penalty loop (timed when asked, never warmed)."""
    from pcd.experiments import constraints as C

    return C.rate_cost(steps=steps, repeats=repeats)


def warm() -> None:
    """The page's default view: torch + Cooper, the most expensive one (~10 s of CPU; warmed last)."""
    from pcd.experiments import constraints as C

    cp_toy_runs(EPS, PENALTY_C, X0, TOY_STEPS)
    cp_toy_penalty(tuple(C.PAPER_EPS), PENALTY_C, X0, TOY_STEPS)
    cp_sweep()
    cp_bisection(TOL)
