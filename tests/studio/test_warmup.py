"""The server warm-up (pcd.studio.warmup): it fills exactly the cache entries the pages' default views
read (a page opened with no query parameters after the warm-up runs none of its computations),
its results equal the library's, a failing part is skipped, and the Plotly.js preload finds the
installed Streamlit's chunk."""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from unittest import mock

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from pcd.experiments import synthetic
from pcd.studio import kbench, registry, warmup
from pcd.ui import plotly_chunk
from tests.pages._apptest import figure_specs

PAGES = Path(__file__).resolve().parents[2] / "pages"
# every page whose module warms its default view (the registry says which)
DEFAULT_PAGES = [p.script for p in registry.PAGES if p.module and hasattr(importlib.import_module(f"pcd.studio.{p.module}"), "warm")]


def _refuse(*args, **kwargs):
    raise AssertionError(f"computed on the page although the warm-up should have: {args} {kwargs}")


@pytest.fixture(scope="module")
def warmed():
    st.cache_data.clear()
    st.cache_resource.clear()
    # the K-objective prefetch thread off (tests/studio/test_kbench.py has it): it would go on computing
    # while the pages below are checked for computing nothing
    with mock.patch.object(warmup, "_numba_kernels", lambda: None), mock.patch.dict(os.environ, {"PCD_NO_PREFETCH": "1"}):
        took = warmup.warm_up()
    yield took
    st.cache_data.clear()
    st.cache_resource.clear()


def test_every_part_ran(warmed):
    """One part per page of the registry with a ``warm()``, in menu order, between the imports and the kernels."""
    assert DEFAULT_PAGES == ["01_Gradient_geometry.py", "02_Toy_landscapes.py", "03_K_objective_benchmark.py",
                             "04_Scale_invariance.py", "05_Tau_dial.py", "06_Jacobian_descent.py",
                             "07_Constraints_vs_penalties.py"]
    assert list(warmed) == ["imports", "first use", "Gradient geometry", "Toy landscapes", "K-objective benchmark",
                            "Scale invariance", "τ dial", "Jacobian descent", "Constraints vs fixed penalties",
                            "numba kernels", "K-objective benchmark: later"]


@pytest.mark.parametrize("page", DEFAULT_PAGES)
def test_default_view_is_served_from_the_warm_cache(warmed, page):
    with mock.patch.object(synthetic, "kdw", _refuse), mock.patch.object(synthetic, "kdw_budgets", _refuse), \
            mock.patch.object(synthetic, "scale", _refuse), \
            mock.patch.object(synthetic, "tau_sweep", _refuse), mock.patch.object(synthetic, "toy_run", _refuse), \
            mock.patch("pcd.studio.geometry.method_directions", _refuse), mock.patch("pcd.engine.run", _refuse), \
            mock.patch("pcd.viz.toy.toy_map_figure", _refuse), mock.patch("pcd.viz.toy.toy_background", _refuse), \
            mock.patch("pcd.viz.landscape.loss_figure", _refuse), \
            mock.patch("pcd.experiments.constraints.run_toy", _refuse), \
            mock.patch("pcd.experiments.constraints.rate_sweep", _refuse), \
            mock.patch("pcd.experiments.constraints.penalty_bisection", _refuse), \
            mock.patch("pcd.experiments.jd.property_table", _refuse):
        at = AppTest.from_file(str(PAGES / page), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert figure_specs(at)


def test_warm_results_are_the_librarys(warmed):
    recs = kbench.kbench_one(65, "pcd", kbench.STEPS, kbench.LR, kbench.TAU, kbench.OPT)
    assert recs == synthetic.kdw(Ks=[65], methods=["pcd"], steps=kbench.STEPS, lr=kbench.LR, tau=kbench.TAU)
    # every step budget of the default view is warm too (read off one run to the longest), with the library's numbers
    with mock.patch.object(synthetic, "kdw_budgets", _refuse), mock.patch("pcd.engine.run", _refuse):
        ends = {b: kbench.kbench_one(5, "mgda", b, kbench.LR, None, kbench.OPT) for b in kbench.STEP_CHOICES}
    for b in (200, 2000):
        assert ends[b] == synthetic.kdw(Ks=[5], methods=["mgda"], steps=b, lr=kbench.LR, tau=None)
    assert kbench.kbench_tau("mgda", 0.3) is None and kbench.kbench_tau("pcd", 0.3) == 0.3


def test_a_failing_part_is_skipped_not_raised():
    with mock.patch.object(warmup, "_first_use", side_effect=RuntimeError("boom")), \
            mock.patch.object(warmup, "_defaults", lambda: []), mock.patch.object(warmup, "_numba_kernels", lambda: None):
        took = warmup.warm_up()
    assert set(took) == {"imports", "first use", "numba kernels"}


def test_start_is_off_with_the_env_switch(monkeypatch):
    monkeypatch.setenv("PCD_NO_WARMUP", "1")
    warmup.start.clear()
    assert warmup.start() is None
    warmup.start.clear()


def test_plotly_chunk_of_the_installed_streamlit():
    name = plotly_chunk()
    assert name is not None and name.startswith("PlotlyChart.") and name.endswith(".js")
    assert (Path(st.__file__).parent / "static" / "static" / "js" / name).stat().st_size > 1_000_000


def test_modules_plotly_peeks_at_are_imported_before_the_thread_starts(monkeypatch):
    """Plotly uses some modules only if they are in sys.modules (``get_module(name,
    should_load=False)``); a half-imported one (the warm-up thread inside ``import pandas``) broke a
    page built at that moment. Every such module of the installed Plotly is in
    ``PEEKED_BY_PLOTLY``, and :func:`warmup.start` imports them before starting its thread."""
    import re
    import sys

    import plotly

    root = Path(plotly.__file__).resolve().parents[1]
    peeked = set()
    for pkg in ("plotly", "_plotly_utils"):
        for f in (root / pkg).rglob("*.py"):
            peeked |= set(re.findall(r'get_module\("([\w.]+)",\s*should_load=False', f.read_text(errors="ignore")))
    peeked -= {"sage.all"}  # SageMath: not a dependency of the product
    assert peeked and peeked <= set(warmup.PEEKED_BY_PLOTLY), peeked

    seen = {}

    class _Thread:  # records what is imported when the thread would start
        def __init__(self, target, name, daemon):
            seen["modules"] = {m: m in sys.modules for m in warmup.PEEKED_BY_PLOTLY}

        def start(self):
            seen["started"] = True

    monkeypatch.delenv("PCD_NO_WARMUP", raising=False)
    monkeypatch.setattr(warmup.threading, "Thread", _Thread)
    warmup.start.clear()
    try:
        warmup.start()
    finally:
        warmup.start.clear()
    assert seen.get("started") and all(seen["modules"].values()), seen


def test_the_import_step_names_only_the_products_dependencies():
    """The import step imports modules of the declared dependencies (and what they require) only:
    ``orjson`` was listed, is no dependency, and failed the whole step on every install without it."""
    import re
    import tomllib
    from importlib import metadata

    root = Path(__file__).resolve().parents[2]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]

    def dist(req: str) -> str:
        return re.split(r"[ ;<>=!~\[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")

    closure, todo = set(), [dist(d) for d in deps]
    while todo:  # the dependencies and everything they require (extras left out)
        d = todo.pop()
        if d in closure:
            continue
        closure.add(d)
        try:
            todo += [dist(r) for r in metadata.requires(d) or [] if "extra ==" not in r]
        except metadata.PackageNotFoundError:
            pass
    owners = metadata.packages_distributions()
    for name in warmup.IMPORTS:
        top = name.split(".")[0]
        if top == "pcd":
            continue
        assert {o.lower().replace("_", "-") for o in owners.get(top, [])} & closure, name


def test_a_module_that_fails_to_import_does_not_stop_the_others(monkeypatch):
    import importlib

    seen = []

    def fake(name):
        seen.append(name)
        if name == warmup.IMPORTS[0]:
            raise ImportError("missing")

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ImportError, match=warmup.IMPORTS[0]):
        warmup._imports()
    assert seen == list(warmup.IMPORTS)


def test_a_page_module_that_fails_to_import_is_skipped(monkeypatch):
    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "pcd.studio.kbench":
            raise ImportError("broken page module")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    titles = [t for t, _ in warmup._defaults()]
    assert "K-objective benchmark" not in titles and "Gradient geometry" in titles
