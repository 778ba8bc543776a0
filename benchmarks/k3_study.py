"""The digits-k3 study (issue 29 part 5): cross-entropy + ℓ1 + nuclear norm, every method, 3 seeds,
summarised from a finished run folder: per (method, setting) accuracy, accuracy with the "zero"
weights set to 0, parameter sparsity, effective rank (mean ± std over seeds), and per method the
dominated hypervolume per seed (mean ± std), also with the sparsity counted at other thresholds.

Queue and run the study through the product, then summarise::

    python -m pcd runs submit --data-dir DIR --preset digits-k3 --threads 1
    nice -n 5 python -m pcd worker --data-dir DIR --slots 1 --idle-exit 30
    python benchmarks/k3_study.py DIR --out benchmarks/results/digits_k3_study

The measures are pcd.train.metrics' (``PARAM_ZERO``, ``effective_rank``); the hypervolume is
pcd.jobs.results.hypervolume in the normalized space ``(accuracy/100, sparsity/100,
1 - effective rank / r_ref)``, reference point at the origin, ``r_ref`` = the largest effective
rank among all runs of the study (one value for every seed and method).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pcd.jobs import RunStore
from pcd.jobs import results as R
from pcd.train import metrics as mt


def _ms(v: list[float]) -> tuple[float | None, float | None]:
    v = [float(x) for x in v if x is not None]
    if not v:
        return None, None
    return statistics.fmean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)


def _fmt(m: tuple[float | None, float | None], spec: str = ".1f") -> str:
    if m[0] is None:
        return "—"
    return format(m[0], spec) + ("" if m[1] is None else " ± " + format(m[1], spec))


def summarise(runs: list[dict]) -> dict:
    pts = []
    for r in runs:
        res = r.get("result") or {}
        cfg = res.get("config") or r["config"]
        if r["status"] != "done" or cfg.get("secondary") != "l1+nuclear" or res.get("diverged"):
            continue
        pts.append({"id": r["id"], "method": cfg["method"], "setting": R.setting_label(cfg), "seed": cfg["seed"],
                    "epochs": cfg["epochs"], "test_acc": res["test_acc"], "zeroed_acc": res.get("zeroed_acc"),
                    "param_sparsity": res["param_sparsity"], "sweep": res.get("param_sparsity_sweep") or {},
                    "threshold": res.get("param_sparsity_threshold"), "effective_rank": res["effective_rank"]})
    if not pts:
        raise SystemExit("no finished l1+nuclear runs in that folder")
    r_ref = max(p["effective_rank"] for p in pts)
    seeds = sorted({p["seed"] for p in pts})
    rows = []
    for key in dict.fromkeys((p["method"], p["setting"]) for p in pts):
        g = [p for p in pts if (p["method"], p["setting"]) == key]
        rows.append({"method": key[0], "setting": key[1], "seeds": sorted(p["seed"] for p in g),
                     "test_acc": _ms([p["test_acc"] for p in g]), "zeroed_acc": _ms([p["zeroed_acc"] for p in g]),
                     "param_sparsity": _ms([p["param_sparsity"] for p in g]),
                     "effective_rank": _ms([p["effective_rank"] for p in g]),
                     "sparsity_sweep": {t: _ms([p["sweep"].get(t) for p in g]) for t in g[0]["sweep"]}})

    def hv(points: list[dict], sparsity_key: str | None) -> float:
        return R.hypervolume([(p["test_acc"] / 100.0,
                               (p["param_sparsity"] if sparsity_key is None else p["sweep"][sparsity_key]) / 100.0,
                               max(0.0, 1.0 - p["effective_rank"] / r_ref)) for p in points])

    methods = list(dict.fromkeys(p["method"] for p in pts if p["method"] != "unpruned"))
    thresholds = [None] + [t for t in pts[0]["sweep"] if t != f"{mt.PARAM_ZERO:g}"]
    hvs: dict[str, dict] = {}
    for m in methods:
        out: dict = {"points_per_seed": len({p["setting"] for p in pts if p["method"] == m})}
        for t in thresholds:
            per_seed = [hv([p for p in pts if p["method"] == m and p["seed"] == s], t) for s in seeds
                        if any(p["method"] == m and p["seed"] == s for p in pts)]
            out["hv" if t is None else f"hv@{t}"] = {"per_seed": per_seed, "mean_std": _ms(per_seed)}
        # one point per method (the paper's "one point per method" variant): its best single setting
        best = [max((hv([p], None) for p in pts if p["method"] == m and p["seed"] == s), default=0.0) for s in seeds]
        out["hv_best_single"] = {"per_seed": best, "mean_std": _ms(best)}
        hvs[m] = out
    return {"measures": {"param_sparsity": mt.PARAM_SPARSITY_TEXT, "effective_rank": mt.EFFECTIVE_RANK_TEXT,
                         "param_zero": mt.PARAM_ZERO, "hypervolume": (
                             f"(accuracy/100, sparsity/100, 1 - effective rank/{r_ref:.4g}), all maximized, "
                             f"reference point (0,0,0); {r_ref:.4g} = largest effective rank of the study's runs; "
                             "per seed, over each method's settings")},
            "r_ref": r_ref, "seeds": seeds, "epochs": sorted({p["epochs"] for p in pts}), "n_runs": len(pts),
            "rows": rows, "hypervolume": hvs}


def table(s: dict) -> str:
    lines = [f"digits-k3: {s['n_runs']} finished runs, seeds {s['seeds']}, epochs {s['epochs']}; mean ± std over seeds.",
             "", f"- {s['measures']['param_sparsity']}", f"- {s['measures']['effective_rank']}",
             f"- hypervolume: {s['measures']['hypervolume']}", "",
             "| method | setting | seeds | accuracy % | acc. with |w|<1e-3 zeroed % | sparsity % (|w|<1e-3) | "
             "sparsity % (|w|<1e-8) | sparsity % (|w|<1e-2) | effective rank |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["rows"]:
        sw = r["sparsity_sweep"]
        lines.append(f"| {r['method']} | {r['setting']} | {len(r['seeds'])} | {_fmt(r['test_acc'])} | "
                     f"{_fmt(r['zeroed_acc'])} | {_fmt(r['param_sparsity'])} | {_fmt(sw.get('1e-08', (None, None)))} | "
                     f"{_fmt(sw.get('0.01', (None, None)))} | {_fmt(r['effective_rank'], '.2f')} |")
    lines += ["", "| method | settings | HV (|w|<1e-3) | HV (|w|<1e-8) | HV (|w|<1e-4) | HV (|w|<1e-2) | "
              "HV of its best single setting |", "|---|---|---|---|---|---|---|"]
    for m, h in sorted(s["hypervolume"].items(), key=lambda kv: -(kv[1]["hv"]["mean_std"][0] or 0)):
        lines.append(f"| {m} | {h['points_per_seed']} | {_fmt(h['hv']['mean_std'], '.4f')} | "
                     f"{_fmt(h.get('hv@1e-08', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h.get('hv@0.0001', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h.get('hv@0.01', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h['hv_best_single']['mean_std'], '.4f')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", help="the run folder the study was queued in")
    ap.add_argument("--out", default=None, help="write OUT.json and OUT.md (default: print the table)")
    a = ap.parse_args()
    s = summarise(RunStore(a.data_dir).list())
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out + ".json").write_text(json.dumps(s, indent=1), encoding="utf-8")
        Path(a.out + ".md").write_text(table(s), encoding="utf-8")
    print(table(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
