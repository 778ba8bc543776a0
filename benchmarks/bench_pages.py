"""Server-side cost of the Studio pages' default settings (no browser): engine runs and figure
builds, the work a settings change triggers. The browser test (tests/pages/test_browser_studio.py)
measures the end-to-end latency; this script splits it.

    python benchmarks/bench_pages.py            # + --no-warmup to skip the first section

First section, "warm-up: ...": the server warm-up (pcd.studio.warmup.warm_up) in this fresh process, part
by part -- the first imports a page would pay (pandas, pyarrow, Plotly's figure classes), and each
page's default computation at the page's own defaults (what its first visitor would wait for
without the warm-up). The rest: per-rerun work at the defaults (figure builds, which are not
cached), the HTML export (now built only on click), and the toy page's parts.

Where the rest of a first load goes (measured with Chrome traces, see the issue-13 closing notes):
~1 s for the Streamlit frontend to boot in a fresh browser context, ~1 s of main-thread CPU to render
the page's widgets, ~0.3 s to evaluate the studio charts' Plotly.js basic bundle (pcd.ui.chart;
Streamlit's full 4.7 MB chunk took ~1 s), then ~0.3-0.6 s per chart for Plotly to draw. The
browser side, before vs after in one run: benchmarks/bench_first_load.py.
"""
from __future__ import annotations

import json
import time

from pcd.experiments import geometry as xgeo


def _t(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def main() -> None:
    import logging
    import sys

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime found": st caches run bare here

    out: dict[str, float] = {}
    if "--no-warmup" not in sys.argv:
        from pcd.studio import warmup

        out.update({f"warm-up: {k}": v for k, v in warmup.warm_up().items()})
    page_costs(out)
    print(json.dumps({k: round(v, 3) for k, v in out.items()}, indent=1))


def page_costs(out: dict[str, float]) -> None:
    import pcd.problems as problems
    from pcd.engine import run
    from pcd.experiments import synthetic
    from pcd.studio import geometry as GEO
    from pcd.studio import kbench as KB
    from pcd.studio import scale as SC
    from pcd.studio import tau as TD
    from pcd.studio import toy as toy_page
    from pcd.viz import toy as toy_map
    from pcd.viz.geometry import geometry_figure
    from pcd.viz.kbench import residual_figure
    from pcd.viz.landscape import background_image, landscape_figure, loss_figure
    from pcd.viz.scale import drift_figure, sweep_figure
    from pcd.viz.stamp import figure_html
    from pcd.viz.tau import tradeoff_figure
    from pcd.viz.theme import png_data_uri

    J = xgeo.gradient_vectors(GEO.ANGLE, GEO.NORM2)
    res, out["geometry: 6 methods"] = _t(xgeo.method_directions, J, list(GEO.METHODS), GEO.TAU)
    gfig, out["geometry: figure"] = _t(geometry_figure, res)
    _, out["geometry: HTML export (on click only)"] = _t(figure_html, gfig, None)

    prob = problems.make("saddle2d")
    _, out["toy: PCD only (tau change), 1000 steps"] = _t(run, prob, ["pcd"], steps=1000, lr=0.02, record=200,
                                                           method_params={"pcd": {"tau": 0.03}})
    r, out["toy: 6 methods (first load), 1000 steps"] = _t(run, prob, ["pcd", "ws", "mgda", "pcgrad", "cagrad", "famo"],
                                                           steps=1000, lr=0.02, record=200)
    grid = prob.grid(300, 200)
    img, out["toy: background PNG"] = _t(lambda: png_data_uri(background_image(*grid)))
    fig, out["toy: animated figure"] = _t(landscape_figure, r, grid, prob.pareto_set(), prob.optima(), image=img)
    _, out["toy: loss figure"] = _t(loss_figure, r)
    js, out["toy: figure to JSON"] = _t(fig.to_json)
    out["toy: figure JSON MB"] = len(js) / 1e6
    # what the page builds: the map with the gradient inset, typed arrays, no Plotly controls
    bg = toy_map.toy_background(prob)
    page_fig, out["toy: page map + inset (toy_map.toy_map_figure)"] = _t(toy_page.map_figure, prob, r, bg)
    _, out["toy: page map to_dict (st.plotly_chart)"] = _t(page_fig.to_dict)
    out["toy: page map JSON MB"] = len(page_fig.to_json()) / 1e6

    recs, out[f"kbench: K 2..65 x pcd/mgda/ws, {KB.STEPS} steps (page default)"] = _t(
        lambda: [x for K in KB.KS for m in KB.METHODS
                 for x in synthetic.kdw(Ks=[K], methods=[m], steps=KB.STEPS, lr=KB.LR, optimizer=KB.OPT,
                                        tau=KB.kbench_tau(m, KB.TAU))])
    _, out["kbench: figure"] = _t(residual_figure, recs)
    sc, out[f"scale: ws/pcd over every scale, {SC.STEPS} steps (page default)"] = _t(
        synthetic.scale, methods=list(SC.METHODS), steps=SC.STEPS, tau=SC.TAU)
    _, out["scale: sweep figure (every highlight change)"] = _t(sweep_figure, sc, 0)
    _, out["scale: drift figure"] = _t(drift_figure, sc)
    tr, out[f"tau: {len(TD.TAUS)} taus on {TD.PROBLEM}, budgets {TD.BUDGETS} (page default)"] = _t(
        synthetic.tau_sweep, TD.PROBLEM, taus=list(TD.TAUS), lr=TD.LR, budgets=list(TD.BUDGETS))
    _, out["tau: trade-off figure"] = _t(tradeoff_figure, tr, problems.make(TD.PROBLEM).pareto_front(200), TD.TAU)


if __name__ == "__main__":
    main()
