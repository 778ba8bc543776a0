"""K-objective page (page 03): where a change of the step budget, the learning rate or the optimizer
spends its time, old path vs new, side by side in one process (issue 28, part 4: change -> figure
<= 1 s at the default range).

    python benchmarks/bench_kbench_page.py            # --quick: two budget changes instead of five
    python benchmarks/bench_kbench_page.py --settings # the learning-rate / optimizer part only

At the page's default view (K = 2…65, PCD / MGDA / weighted sum, Adam, lr 0.03, τ 0.3), the step
budget is changed 800 -> 500 -> 1000 -> 2000 -> 300 -> 800. Per change, the server-side stages:

* ``engine``: the 21 (K, method) results. *old*: one fresh run per (K, method) to the new budget
  (what the page's former ``st.cache_data`` entry per budget cost on a miss: every budget change
  missed); *new*: :func:`pcd.studio.kbench.kbench_one` after the warm-up's ``warm_later`` (every
  budget read off one run to 3000 steps per (K, method): a lookup);
* ``figure``: the residual figure, the wide table and the law summary (both paths);
* ``serialize``: the figure to JSON, what :func:`pcd.ui.chart.plotly_chart` sends (both paths);
* ``page script``: the whole page rerun under Streamlit's AppTest (widgets, tables, downloads),
  old path (``kbench_records`` swapped for the former per-budget cached call per (K, method)) vs new.

Learning rate / optimizer (:func:`settings_changes`): each change goes to a setting not computed
before (lr 0.03 -> 0.02 -> 0.01, Adam -> SGD, …). *old*: one engine call per (K, method), 21 calls
(the page's former ``kbench_one`` loop); *new, computed*: :func:`pcd.studio.kbench.kbench_records`
(one engine call per K, 7), run right after *old* for each click (the same load); *new, clicked at once*: the prefetch of the previous view asked, the
click 0.3 s later (the prefetch thread has barely begun: the page computes, or waits for the run it
has under way); *new, after the prefetch*: the prefetch of the previous view finished first (a
lookup). Every path's records equal the fresh library runs (asserted).

The browser's share (Plotly.react, the browser's draw) is measured by
``tests/pages/test_browser_kbench_latency.py``. The one-off costs are printed too: the default view
cold (old: 21 runs of 800 steps; new: the same runs, recording the budgets below) and the warm-up's
``warm_later`` (21 runs of 3000 steps and the default view's neighbours, once per server process,
in the background). The load
average is printed beside every figure: this is a shared 2-core machine.
"""
from __future__ import annotations

import json
import logging
import os
import statistics
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_pages import _t  # this folder is on the path when run as a script

CHANGES = (500, 1000, 2000, 300, 800)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def settings_changes() -> dict:
    """lr / optimizer changes at the default range: old path vs new (see the module docstring)."""
    import time

    import streamlit as st

    from pcd.experiments import synthetic
    from pcd.studio import kbench as KB

    Ks, ms = KB.KS, tuple(KB.available(KB.METHODS))

    def fresh(lr, opt):
        return [r for K in Ks for m in ms for r in synthetic.kdw(Ks=[K], methods=[m], steps=KB.STEPS, lr=lr,
                                                                  optimizer=opt, tau=KB.kbench_tau(m, KB.TAU))]

    def old(lr, opt):  # the former page: kbench_one per (K, method), one engine call each
        return [r for K in Ks for m in ms
                for r in synthetic.kdw_budgets(Ks=[K], methods=[m], budgets=KB._budgets_to(KB.STEPS), lr=lr,
                                               optimizer=opt, tau=KB.kbench_tau(m, KB.TAU))[KB.STEPS]]

    def new(lr, opt):
        return KB.kbench_records(Ks, ms, KB.STEPS, lr, KB.TAU, opt)

    # (previous view, the view clicked): each clicked view new to the store of its path
    clicks = [((0.03, "adam"), (0.02, "adam")), ((0.02, "adam"), (0.01, "adam")), ((0.01, "adam"), (0.01, "sgd")),
              ((0.01, "sgd"), (0.02, "sgd")), ((0.02, "sgd"), (0.03, "sgd"))]

    def timed(fn, *a):  # wall seconds and the calling thread's CPU seconds (less sensitive to the load)
        c = time.thread_time()
        out, dt = _t(fn, *a)
        return out, dt, time.thread_time() - c

    rows = {p: {"path": p, "each s": [], "cpu s": [], "load 1 min at each": []}
            for p in ("old", "new, computed", "new, clicked at once", "new, after the prefetch")}

    def note(path, recs, dt, cpu, lr, opt, load):
        assert recs == fresh(lr, opt), (path, lr, opt)
        rows[path]["each s"].append(round(dt, 3))
        rows[path]["cpu s"].append(round(cpu, 3))
        rows[path]["load 1 min at each"].append(load)

    st.cache_resource.clear()
    for _, (lr, opt) in clicks:  # old and new, computed: one after the other per click (the same load)
        load = _load()
        recs, dt, cpu = timed(old, lr, opt)
        note("old", recs, dt, cpu, lr, opt, load)
        load = _load()
        recs, dt, cpu = timed(new, lr, opt)
        note("new, computed", recs, dt, cpu, lr, opt, load)
    for path in ("new, clicked at once", "new, after the prefetch"):
        st.cache_resource.clear()
        KB._PREFETCH.clear()  # a fresh store and prefetch thread per path
        pre = KB._prefetcher()
        for (lr0, opt0), (lr, opt) in clicks:
            KB.kbench_records(Ks, ms, KB.STEPS, lr0, KB.TAU, opt0)  # the previous view shown ...
            pre.ask(KB.neighbours(Ks, ms, KB.STEPS, lr0, KB.TAU, opt0)[:3])  # ... its lr / optimizer neighbours
            if path == "new, after the prefetch":
                assert pre.idle.wait(600)
            else:
                time.sleep(0.3)
            load = _load()
            recs, dt, cpu = timed(new, lr, opt)
            note(path, recs, dt, cpu, lr, opt, load)
        pre.ask([])
        pre.idle.wait(600)
    for r in rows.values():
        r["median s"] = round(statistics.median(r["each s"]), 3)
        r["median cpu s"] = round(statistics.median(r["cpu s"]), 3)
    return {"clicks (previous view -> clicked, lr@optimizer)": [f"{a[0]}@{a[1]} -> {b[0]}@{b[1]}" for a, b in clicks],
            "rows": list(rows.values())}


def main() -> None:
    import streamlit as st

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "no runtime found": st caches run bare here

    from pcd.experiments import synthetic
    from pcd.studio import kbench as KB
    from pcd.viz.kbench import law_summary, residual_figure, residual_table

    if "--settings" in sys.argv:
        res = settings_changes()
        print("clicks: " + ", ".join(res["clicks (previous view -> clicked, lr@optimizer)"]))
        print("| path | each (s) | median (s) | the thread's CPU, median (s) | load 1 min at each |\n|---|---|---|---|---|")
        for r in res["rows"]:
            print(f"| {r['path']} | {', '.join(f'{t:.3f}' for t in r['each s'])} | {r['median s']:.3f} | "
                  f"{r['median cpu s']:.3f} | {', '.join(f'{v:.1f}' for v in r['load 1 min at each'])} |")
        return
    changes = CHANGES[:2] if "--quick" in sys.argv else CHANGES
    keys = [(K, m) for K in KB.KS for m in KB.METHODS]

    def old_one(K, m, steps):
        return synthetic.kdw(Ks=[K], methods=[m], steps=steps, lr=KB.LR, optimizer=KB.OPT, tau=KB.kbench_tau(m, KB.TAU))

    def new_one(K, m, steps):
        return KB.kbench_one(K, m, steps, KB.LR, KB.kbench_tau(m, KB.TAU), KB.OPT)

    def figure(recs):
        return residual_figure(recs), residual_table(recs), law_summary(recs)

    out: dict = {"load_at_start": _load(), "changes": list(changes)}
    old_one(2, "pcd", 10)  # imports, numba's cache: not part of either path
    # one-off costs
    _, out["old: default view cold (21 runs x 800 steps), s"] = _t(lambda: [old_one(K, m, KB.STEPS) for K, m in keys])
    st.cache_resource.clear()
    _, out["new: default view cold (21 runs x 800 steps + budgets below), s"] = _t(KB.warm)
    _, out["new: warm_later once per server (21 runs x 3000 steps + the default view's lr/optimizer/τ neighbours), s"] = _t(KB.warm_later)
    out["load_after_one_offs"] = _load()

    rows = []
    for steps in changes:
        row = {"steps": steps}
        recs_old, row["old engine"] = _t(lambda s=steps: [r for K, m in keys for r in old_one(K, m, s)])
        recs_new, row["new engine"] = _t(lambda s=steps: [r for K, m in keys for r in new_one(K, m, s)])
        assert recs_new == recs_old, f"new path differs from the fresh runs at {steps} steps"
        (fig, _, _), row["figure"] = _t(figure, recs_new)
        js, row["serialize"] = _t(fig.to_json)
        row["spec kB"] = len(js) / 1e3
        row["load"] = _load()
        rows.append(row)
    out["per change"] = rows
    out["per change median, s"] = {k: round(statistics.median(r[k] for r in rows), 4)
                                   for k in ("old engine", "new engine", "figure", "serialize")}
    out["page script"] = page_script(changes, old_one)
    out["lr / optimizer changes"] = settings_changes()
    print(json.dumps(out, indent=1, default=lambda v: round(v, 4)))


def page_script(changes, old_one) -> dict:
    """The whole page rerun on each budget change under AppTest: old path vs new (medians, s)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from pcd.studio import kbench as KB

    page = str(Path(__file__).resolve().parents[1] / "pages" / "03_K_objective_benchmark.py")
    os.environ.setdefault("PCD_NO_AUTOSTART", "1")
    os.environ.setdefault("PCD_NO_WARMUP", "1")

    @st.cache_data(show_spinner=False, max_entries=512)
    def former(K, method, steps, lr, tau, opt):  # the page's former cached call: one entry per budget
        return old_one(K, method, steps)

    res: dict = {}
    def former_records(Ks, methods, steps, lr, tau, opt):
        return [r for K in Ks for m in methods for r in former(K, m, steps, lr, KB.kbench_tau(m, tau), opt)]

    for name, patch in (("old", mock.patch.object(KB, "kbench_records", former_records)),
                        ("new", mock.patch.object(KB, "kbench_records", KB.kbench_records))):
        with patch:
            at = AppTest.from_file(page, default_timeout=600)
            _, first = _t(at.run)
            times = []
            for steps in changes:
                at.select_slider(key="kb_steps").set_value(steps)
                _, dt = _t(at.run)
                assert not at.exception, at.exception
                times.append(dt)
        res[name] = {"first run s": round(first, 3), "budget change s (each)": [round(t, 3) for t in times],
                     "median s": round(statistics.median(times), 3), "load": _load()}
    return res


if __name__ == "__main__":
    main()
