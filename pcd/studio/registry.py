"""The Studio's one page registry: every page's script, title, icon and one-line blurb, in menu order.

The router (``app.py``: its ``st.navigation`` menu), the home page's list of pages and the server
warm-up (:mod:`pcd.studio.warmup`) all read :data:`PAGES`; no page source is parsed. A page script
reads its own entry (:func:`this_page`) for the title and icon it passes to ``setup_page``.

The list lives here rather than in ``app.py`` because ``app.py`` is a Streamlit script (importing
it would draw the home page and start the router); the warm-up and the tests need the list
without running the app.

Adding a page: its script in ``pages/``, one :class:`Page` line here, and (when it caches or warms
anything) its module ``pcd/studio/<module>.py`` with a ``warm()`` function.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGES_DIR = ROOT / "pages"
APP = ROOT / "app.py"
HOME_TITLE = "PCD Studio"
HOME_ICON = ":material/flag:"


@dataclass(frozen=True)
class Page:
    """One Studio page.

    ``script``: its file in ``pages/`` (``NN_Name.py``: NN sets the menu order); ``title`` and
    ``icon``: the menu label and the page's heading; ``blurb``: its line on the home page;
    ``module``: its data module in :mod:`pcd.studio` (defaults, cached computations and ``warm()``),
    None for a page that has none; ``full_plotly``: the page draws ``st.plotly_chart`` figures
    (Streamlit's full Plotly.js is preloaded, see :func:`pcd.ui.preload_plotly`).
    """

    script: str
    title: str
    icon: str
    blurb: str
    module: str | None = None
    full_plotly: bool = False

    @property
    def path(self) -> Path:
        return PAGES_DIR / self.script

    @property
    def setup(self) -> dict[str, Any]:
        """What the page passes to :func:`pcd.ui.setup_page`: ``title``, ``icon``, ``full_plotly``."""
        return {"title": self.title, "icon": self.icon, "full_plotly": self.full_plotly}

    @property
    def link(self) -> str:
        """The script's path relative to ``app.py`` (what ``st.page_link`` / ``st.switch_page`` take)."""
        return f"{PAGES_DIR.name}/{self.script}"

    @property
    def url_path(self) -> str:
        """``Name`` for ``NN_Name.py``: the URL Streamlit's automatic multipage menu gave the file
        before the registry existed, so shared links keep working."""
        return re.sub(r"^\d+_", "", Path(self.script).stem)


PAGES: tuple[Page, ...] = (
    Page("00_Guided_lesson.py", "Guided lesson", ":material/school:",
         "the argument in seven steps, one figure each (presenter mode)", module="lesson"),
    Page("01_Gradient_geometry.py", "Gradient geometry", ":material/explore:",
         "every method's update for two or three gradients", module="geometry"),
    Page("02_Toy_landscapes.py", "Toy landscapes", ":material/landscape:",
         "animated trajectories: who stalls at a conflict equilibrium", module="toy"),
    Page("03_K_objective_benchmark.py", "K-objective benchmark", ":material/stacked_line_chart:",
         "the 1.536·√(K−1) law of the symmetric methods", module="kbench"),
    Page("04_Scale_invariance.py", "Scale invariance", ":material/straighten:",
         "rescale the secondary over ten orders of magnitude", module="scale"),
    Page("05_Tau_dial.py", "τ dial", ":material/tune:",
         "what τ sets: the trade-off after 100, 300, 1000 steps", module="tau"),
    Page("06_Jacobian_descent.py", "Jacobian descent", ":material/grid_on:",
         "aggregator properties, IWRM, Gramian memory (TorchJD)", module="jd", full_plotly=True),
    Page("07_Constraints_vs_penalties.py", "Constraints vs fixed penalties", ":material/rule:",
         "Lagrangian methods vs fixed penalties vs PCD", module="constraints"),
    Page("08_Pruning_lab.py", "Pruning lab", ":material/content_cut:",
         "queue CIFAR / digits pruning runs and compare the results", module="pruning_lab"),
    Page("09_Basin_maps.py", "Basin maps", ":material/grid_view:",
         "which start leads where: outcome maps per method", module="basin", full_plotly=True),
    Page("10_Training_geometry.py", "Training geometry", ":material/monitoring:",
         "a real training run's gradient conflict: which methods would have stalled", module="training_geometry"),
)


def page(script: str | Path) -> Page:
    """The registry entry of a page script (a path or its file name)."""
    name = Path(script).name
    for p in PAGES:
        if p.script == name:
            return p
    raise ValueError(f"{name!r} is not a registered page; registered: {', '.join(p.script for p in PAGES)}")


def this_page(script: str | Path) -> Page:
    """A page script's own entry (call it with ``__file__``), after making sure the router ran.

    Streamlit runs a script of a ``pages/`` folder *directly* in the first session a server serves
    (its folder-based multipage mode, decided once per process before any script ran): ``app.py``
    then never runs, so neither its menu nor its warm-up would exist in that session. In that case
    this runs ``app.py`` in its place -- its ``st.navigation`` switches Streamlit to the registry's
    menu for good and runs this very page -- and stops the outer run. Elsewhere (every later
    session, AppTest) it only looks the page up.
    """
    entry = page(script)
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without it has no folder mode either
        return entry
    if PagesManager.uses_pages_directory and APP.is_file():
        import runpy

        import streamlit as st

        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
    return entry
