"""Real browser, no server: the figures whose labels collided (issue 28) drawn by Chromium with the
studio's own Plotly.js bundle (static/plotly-basic.min.js) at the chart widths the pages give them
(800 px window: a 560-px chart; presenter 1280 x 720; 1440; 1920), and every piece of text Plotly drew
measured on screen (tests/pages/_browser.TEXT_COLLISIONS): no two labels overlap, no label covers a
start marker or a τ curve's marker, no tick label reaches into the neighbouring panel, no start name is
cut off at the plot's edge. Screenshots in test-artifacts/labels_*.png. tests/viz/test_labels.py checks
the same from the layouts, without a browser."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pcd.problems as problems
from pcd.experiments import geometry as xgeo
from pcd.experiments import synthetic
from tests.pages._browser import TEXT_COLLISIONS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

BUNDLE = Path(__file__).resolve().parents[2] / "static" / "plotly-basic.min.js"
FIFTEEN = ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo", "upgrad", "dualproj", "imtlg", "alignedmtl",
           "nashmtl", "graddrop", "rgw", "dbgd", "auxinash"]
TAUS = [0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
TAU_CURVES = ["PCD after 1000 steps", "PCD after 300 steps", "PCD after 100 steps", "selected τ = 0.1"]


@pytest.fixture(scope="module")
def draw(browser, artifacts_dir):
    """``draw(name, fig, width, height=None, markers=())``: the figure drawn in a ``width``-px div
    (its own height unless given); returns TEXT_COLLISIONS' ``{pairs, clipped, n}``."""
    page = browser.new_page(viewport={"width": 1940, "height": 1200})
    page.set_default_timeout(120_000)
    page.set_content("<html><body style='margin:0'><div id='g'></div></body></html>")
    page.add_script_tag(path=str(BUNDLE))

    def run(name, fig, width, height=None, markers=()):
        spec = json.loads(fig.to_json()) if hasattr(fig, "to_json") else fig
        layout = dict(spec["layout"], width=width, **({"height": height} if height else {}))
        page.evaluate("async ([d, l]) => { const g = document.getElementById('g'); Plotly.purge(g); "
                      "g.style.width = l.width + 'px'; g.style.height = (l.height || 450) + 'px'; "
                      "await Plotly.newPlot(g, d, l); }", [spec["data"], layout])
        out = page.evaluate(TEXT_COLLISIONS, [page.query_selector("#g"), list(markers), 1])
        page.locator("#g").screenshot(path=str(artifacts_dir / f"labels_{name}_{width}.png"))
        assert out["n"] > 5, out  # the text was found
        return out

    try:
        yield run
    finally:
        page.close()


def _clean(out):
    assert not out["pairs"] and not out["clipped"], out


@pytest.mark.parametrize("prob", ["quadratic", "saddle2d"])
def test_tau_dial_and_lesson_step_7(draw, prob):
    from pcd.viz.tau import tradeoff_figure

    recs = synthetic.tau_sweep(prob, taus=TAUS, lr=0.02, budgets=[100, 300, 1000])
    front = problems.named(prob).pareto_front(200)
    fig = tradeoff_figure(recs, pareto_front=front, selected=0.1, log_axes=prob == "saddle2d")
    for width in (380, 560, 700):  # the τ dial's half column (1280-1920) and the full column at 800 px
        _clean(draw(f"tau_{prob}", fig, width, markers=TAU_CURVES))
    lesson = tradeoff_figure(recs, pareto_front=front, selected=0.1, height=430)
    for width, height in ((560, 430), (1150, 430), (1220, 300)):  # step 7 at 800, 1440-1920, presenter 1280x720
        _clean(draw(f"lesson7_{prob}", lesson, width, height, markers=TAU_CURVES))


def test_tau_dial_map_names_every_start(draw):
    from pcd.studio import tau as TD

    fig = TD.tau_trajectory_figure("quadratic", 0.1, 1000, 0.02)
    for width in (380, 640):
        _clean(draw("taumap", fig, width, markers=["starts"]))


@pytest.mark.parametrize("angle", [120, 150])
def test_geometry_with_fifteen_methods(draw, angle):
    from pcd.viz.geometry import geometry_figure

    fig = geometry_figure(xgeo.method_directions(xgeo.gradient_vectors(angle, 1.0), FIFTEEN, tau=0.3))
    for width in (560, 1000):  # page 01 at 800 px and at 1440-1920
        _clean(draw(f"geometry{angle}", fig, width))


@pytest.mark.parametrize("angle", [90, 150])
def test_geometry_with_every_method(draw, angle):
    """All 28 registered methods: the stack on one ray, cut to the lines that have a clear place (the rest
    on hover), on a 560-px chart (an 800-px window) and, with presenter mode's larger labels, at 1150 px."""
    import pcd.methods as registry
    from pcd.viz.geometry import geometry_figure
    from pcd.viz.labels import PRESENT_TEXT_SCALE

    result = xgeo.method_directions(xgeo.gradient_vectors(angle, 1.0), registry.available(), tau=0.3)
    _clean(draw(f"geometry_all{angle}", geometry_figure(result), 560))
    _clean(draw(f"geometry_all{angle}_present", geometry_figure(result, text_scale=PRESENT_TEXT_SCALE), 1150))


def test_toy_map_fifteen_methods_last_frame(draw):
    from pcd.studio.toy import map_figure
    from pcd.viz import toy as toy_map

    prob = problems.make("saddle2d")
    res = synthetic.toy_run("saddle2d", FIFTEEN, steps=1000, lr=0.02, tau=0.02, record=200)
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    for width_class, width in (("narrow", 560), ("medium", 800), ("wide", 1000), ("wide", 1500)):
        spec = json.loads(map_figure(prob, res, bg, inset_start=0, width=width_class).to_json())
        for a in spec["layout"].get("annotations", []):
            a["visible"] = True  # the last frame: the end labels shown (the page's controls do this)
        for t in spec["data"]:
            if t.get("meta") == "end":
                t["visible"] = True
        _clean(draw(f"toy15_{width_class}", spec, width, markers=["starts"]))


def test_loss_panels_at_800(draw):
    from pcd.viz.landscape import loss_figure

    for prob in ("saddle2d", "double_well"):
        res = synthetic.toy_run(prob, ["pcd", "ws", "mgda"], steps=1000, lr=0.02, tau=0.02, record=200)
        fig = loss_figure(res)
        assert np.isfinite(res.losses).any()
        for width in (560, 1000):
            _clean(draw(f"loss_{prob}", fig, width))


@pytest.mark.parametrize("log", [True, False])
def test_objective_panel_fifteen_methods(draw, log):
    """The same runs in objective space: nine verdict labels of three to six lines each were stacked
    over each other; each label is placed, shortened where the full one has no clear place."""
    from pcd.studio.toy import objective_space
    from pcd.viz import toy as toy_map
    from pcd.viz.objective import objective_space_figure

    prob = problems.make("saddle2d")
    res = synthetic.toy_run("saddle2d", FIFTEEN, steps=1000, lr=0.02, tau=0.02, record=200)
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    space = objective_space(prob, res, bg["grid"])
    for width in (560, 1000):
        fig = objective_space_figure(space, log=log, width_px=width, animate=False)
        _clean(draw(f"objective15_{'log' if log else 'lin'}", fig, width, markers=["now"]))


def test_jacobian_descent_panels_at_800(draw):
    """IWRM (loss, accuracy, cosine) and Gramian memory: at 800 px the panel titles ran into each other
    and the next panel's y ticks into the panel before."""
    from pcd.viz.jd import iwrm_figure, memory_figure

    rng = np.random.default_rng(0)
    steps = list(range(0, 200, 10))
    iwrm = {"steps": steps, "methods": {m: {
        "train_loss": (np.exp(-np.linspace(0, 5, len(steps)))[None] * (1 + 0.1 * rng.random((3, len(steps))))).tolist(),
        "test_acc": (0.5 + 0.4 * rng.random((3, len(steps)))).tolist(),
        "cosine": (rng.random((3, 20)) * 2 - 1).tolist()} for m in ("pcd", "upgrad", "mgda", "ws")}}
    mem = {"batch_sizes": [8, 16, 32, 64], "device": "cpu", "modes": {
        "erm": {"peak_mb": [1, 2, 4, 8], "seconds": [0.01, 0.02, 0.04, 0.08]},
        "jacobian": {"peak_mb": [10, 20, 40, 80], "seconds": [0.1, 0.2, 0.4, 0.8]}}}
    for width in (560, 1000):
        _clean(draw("jd_iwrm", iwrm_figure(iwrm), width))
        _clean(draw("jd_memory", memory_figure(mem), width))


def test_pruning_lab_training_curves_at_800(draw):
    """The Pruning lab's training curves (loss, accuracy, ... one panel each, three a row): the panel
    titles ran into each other at 800 px; they break into two lines and the panels keep apart."""
    from pcd.viz.runs import CURVE_KEYS, curves_figure

    rng = np.random.default_rng(0)
    series = {f"run {i} {m}": [dict({k: float(rng.random()) for k in CURVE_KEYS}, epoch=e) for e in range(1, 11)]
              for i, m in enumerate(("pcd", "ws", "mgda", "upgrad"))}
    fig = curves_figure(series, {label: label.split()[-1] for label in series})
    for width in (560, 1000):
        _clean(draw("runs_curves", fig, width))
