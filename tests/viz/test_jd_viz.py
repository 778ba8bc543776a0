"""pcd.viz.jd: the properties table, IWRM curves and memory plots are built from plain data."""
from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from pcd.experiments.jd import PROPERTIES
from pcd.viz.jd import iwrm_figure, memory_figure, properties_figure
from pcd.viz.theme import method_color as color


def _report(holds: dict, paper=None) -> dict:
    rep = {p: holds.get(p, False) for p in PROPERTIES}
    rep["worst_violation"] = {p: {"value": 0.0 if rep[p] else 0.5, "family": "random", "K": 2, "sample": 0}
                              for p in PROPERTIES}
    rep["paper"] = paper
    return rep


def test_properties_figure_marks_each_cell_and_shows_the_paper():
    table = {
        "upgrad": _report({"non_conflicting": True, "linear_under_scaling": True, "weighted": True},
                          {"non_conflicting": True, "linear_under_scaling": True, "weighted": True}),
        "pcd": _report({"primary_anchored": True, "per_secondary_progress": True, "weighted": True}),
    }
    fig = properties_figure(table)
    assert isinstance(fig, go.Figure) and len(fig.data) == 1
    cells = fig.data[0].cells.values
    assert len(cells) == 1 + len(PROPERTIES) + 1
    assert list(cells[0]) == ["UPGrad", "PCD"]
    nc = cells[1 + PROPERTIES.index("non_conflicting")]
    assert nc[0].startswith("✓") and nc[1].startswith("✗") and "5.0e-01" in nc[1]
    assert list(cells[-1]) == ["✓ / ✓ / ✓", "—"]
    fills = fig.data[0].cells.fill.color
    assert fills[1][0] != fills[1][1]  # pass and fail are coloured differently
    assert list(fig.data[0].cells.font.color[0]) == [color("upgrad"), color("pcd")]


def test_properties_figure_in_two_columns_fits_a_height():
    """Presenter mode (issue 28 part 6): the methods split over two tables side by side, one line a
    cell, every method once, the whole figure no taller than asked."""
    names = ["pcd", "ws", "mgda", "pcgrad", "cagrad", "upgrad", "famo"]
    table = {m: _report({"weighted": True}) for m in names}
    fig = properties_figure(table, columns=2, height=300)
    assert len(fig.data) == 2 and fig.layout.height <= 300
    shown = [v for t in fig.data for v in t.cells.values[0]]
    assert len(shown) == len(names) and len(set(shown)) == len(names)
    assert fig.data[0].domain.x[1] <= fig.data[1].domain.x[0]  # side by side, not overlapping
    assert all("<br>" not in str(v) for t in fig.data for col in t.cells.values[1:] for v in col)
    with pytest.raises(ValueError, match="columns"):
        properties_figure(table, columns=3)


def test_properties_figure_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        properties_figure({})
    with pytest.raises(ValueError, match="lacks"):
        properties_figure({"ws": {"weighted": True}})


def _iwrm(seeds: int) -> dict:
    steps = [0, 5, 10]
    run = lambda k: {"display_name": k, "train_loss": [[2.3, 1.0 + s, 0.5] for s in range(seeds)],  # noqa: E731
                     "test_acc": [[0.1, 0.5, 0.8 + 0.01 * s] for s in range(seeds)],
                     "cosine": [[1.0] * 10 for _ in range(seeds)]}
    return {"steps": steps, "methods": {"ws": run("ws"), "upgrad": run("upgrad")}}


def test_iwrm_figure_has_three_panels_mean_lines_and_seed_bands():
    fig = iwrm_figure(_iwrm(seeds=3))
    lines = [t for t in fig.data if t.mode == "lines"]
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(lines) == 6 and len(bands) == 6  # 2 methods x 3 panels
    assert [t.name for t in lines if t.showlegend] == ["Mean (= SGD / ERM)", "UPGrad"]
    acc = [t for t in lines if t.xaxis == "x2" and t.name == "UPGrad"][0]
    assert acc.y[-1] == pytest.approx(81.0)  # mean of 80, 81, 82 %, shown in percent
    assert fig.layout.yaxis.type == "log"
    assert len(iwrm_figure(_iwrm(seeds=1)).data) == 6  # one seed: no band


def test_iwrm_figure_handles_diverged_runs_and_rejects_bad_input():
    res = _iwrm(seeds=2)
    res["methods"]["ws"]["train_loss"][1] = [2.3, math.nan, math.nan]
    fig = iwrm_figure(res)
    loss = [t for t in fig.data if t.mode == "lines" and t.xaxis == "x" and t.name.startswith("Mean")][0]
    assert loss.y[1] == pytest.approx(1.0)  # nan-mean over the seed that survived
    with pytest.raises(ValueError, match="run_iwrm"):
        iwrm_figure({"methods": {}})
    with pytest.raises(ValueError, match="no methods"):
        iwrm_figure({"steps": [0], "methods": {}})


def test_memory_figure_plots_every_mode_on_log_axes():
    mem = {"batch_sizes": [8, 16], "device": "cpu",
           "modes": {"jacobian": {"peak_mb": [1.0, 2.0], "seconds": [0.1, 0.2]},
                     "autogram": {"peak_mb": [0.0, None], "seconds": [0.1, 0.1]}}}
    fig = memory_figure(mem)
    assert len(fig.data) == 4
    mem_traces = [t for t in fig.data if t.xaxis == "x"]
    assert [t.name for t in mem_traces] == ["per-sample Jacobian (ours, torch.func)", "TorchJD autogram (Gramian)"]
    assert mem_traces[1].y[0] > 0 and mem_traces[1].y[1] is None  # zero clipped for the log axis; n/a stays a gap
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    with pytest.raises(ValueError, match="measure_gramian_memory"):
        memory_figure({"modes": {}})
