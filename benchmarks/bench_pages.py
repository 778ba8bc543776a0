"""Server-side cost of the Studio pages' default settings (no browser): engine runs and figure
builds, the work a settings change triggers. The browser test (tests/pages/test_browser_studio.py)
measures the end-to-end latency; this script splits it.

    python benchmarks/bench_pages.py
"""
from __future__ import annotations

import json
import time


def _t(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def main() -> None:
    import pcd.problems as problems
    from pcd import studio
    from pcd.engine import run
    from pcd.experiments import synthetic
    from pcd.viz.geometry import geometry_figure
    from pcd.viz.kbench import residual_figure
    from pcd.viz.landscape import background_image, landscape_figure, loss_figure
    from pcd.viz.scale import sweep_figure
    from pcd.viz.tau import tradeoff_figure
    from pcd.viz.theme import png_data_uri

    out: dict[str, float] = {}
    J = studio.gradient_vectors(150, 1.0)
    res, out["geometry: 6 methods"] = _t(studio.method_directions, J, ["pcd", "ws", "mgda", "pcgrad", "cagrad", "upgrad"], 0.3)
    _, out["geometry: figure"] = _t(geometry_figure, res)

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
    bg = studio.toy_background(prob)
    page_fig, out["toy: page map + inset (studio.toy_map_figure)"] = _t(studio.toy_map_figure, prob, r, bg)
    _, out["toy: page map to_dict (st.plotly_chart)"] = _t(page_fig.to_dict)
    out["toy: page map JSON MB"] = len(page_fig.to_json()) / 1e6

    recs, out["kbench: K 2..65 x pcd/mgda/ws, 300 steps"] = _t(
        lambda: [x for K in (2, 3, 5, 9, 17, 33, 65) for m in ("pcd", "mgda", "ws")
                 for x in synthetic.kdw(Ks=[K], methods=[m], steps=300, lr=0.03)])
    _, out["kbench: figure"] = _t(residual_figure, recs)
    sc, out["scale: 11 scales x ws/pcd, 300 steps"] = _t(synthetic.scale, steps=300)
    _, out["scale: figure"] = _t(sweep_figure, sc, 0)
    taus = [0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
    tr, out["tau: 11 taus on quadratic, 300 steps"] = _t(
        lambda: [synthetic.tau_sweep("quadratic", taus=[t], steps=300, lr=0.02)[0] for t in taus])
    _, out["tau: figure"] = _t(tradeoff_figure, tr, problems.make("quadratic").pareto_front(200), 0.1)
    print(json.dumps({k: round(v, 3) for k, v in out.items()}, indent=1))


if __name__ == "__main__":
    main()
