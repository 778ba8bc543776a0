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


def _measures(data_dir: Path, run: dict, cfg: dict, data) -> dict:
    """The K = 3 measures of a finished run, computed (pcd.train.metrics) from the final weights in
    its checkpoint, so a run recorded under an earlier definition is measured as defined now."""
    import torch

    from pcd.train.models import build_model

    model = build_model(cfg["arch"], data.num_classes, data.input_shape[0])
    ck = torch.load(Path(data_dir) / "runs" / str(run["id"]) / "checkpoint.pt", map_location="cpu",
                    weights_only=False)
    model.load_state_dict(ck["model"])
    model.eval()
    return {"test_acc": mt.accuracy(model, data.test_batches())[0],
            "param_sparsity": mt.param_sparsity(model), "zeroed_acc": mt.zeroed_accuracy(model, data.test_batches()),
            "sweep": mt.param_sparsity_sweep(model),
            "abs_sparsity": mt.param_sparsity(model, relative=False),
            "abs_zeroed_acc": mt.zeroed_accuracy(model, data.test_batches(), relative=False),
            "abs_sweep": mt.param_sparsity_sweep(model, relative=False),
            "effective_rank": mt.rank_metrics(model)[0]}


def summarise(data_dir: Path) -> dict:
    import torch

    from pcd.train.data import load_dataset

    torch.set_num_threads(1)
    data = None
    pts = []
    for r in RunStore(data_dir).list("done"):
        res = r.get("result") or {}
        cfg = res.get("config") or r["config"]
        if cfg.get("secondary") != "l1+nuclear" or res.get("diverged"):
            continue
        if data is None:
            data = load_dataset(cfg["dataset"], data_dir=cfg.get("data_dir"), device=torch.device("cpu"),
                                download=False, max_train_samples=cfg.get("max_train_samples"),
                                max_test_samples=cfg.get("max_test_samples"))
        m = _measures(data_dir, r, cfg, data)
        if abs(m["test_acc"] - res["test_acc"]) > 1e-6:
            raise SystemExit(f"run {r['id']}: checkpoint accuracy {m['test_acc']} != recorded {res['test_acc']}")
        pts.append({"id": r["id"], "method": cfg["method"], "setting": R.setting_label(cfg), "seed": cfg["seed"],
                    "epochs": cfg["epochs"], **m})
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
                     "sparsity_sweep": {t: _ms([p["sweep"].get(t) for p in g]) for t in g[0]["sweep"]},
                     "abs_sparsity": _ms([p["abs_sparsity"] for p in g]),
                     "abs_zeroed_acc": _ms([p["abs_zeroed_acc"] for p in g]),
                     "abs_sparsity_sweep": {t: _ms([p["abs_sweep"].get(t) for p in g]) for t in g[0]["abs_sweep"]}})

    def hv(points: list[dict], sparsity_key: str | None) -> float:
        def sp(p: dict) -> float:
            if sparsity_key is None:
                return p["param_sparsity"]
            if sparsity_key == "abs":
                return p["abs_sparsity"]
            return p["sweep"][sparsity_key]
        return R.hypervolume([(p["test_acc"] / 100.0, sp(p) / 100.0, max(0.0, 1.0 - p["effective_rank"] / r_ref))
                              for p in points])

    methods = list(dict.fromkeys(p["method"] for p in pts if p["method"] != "unpruned"))
    thresholds = [None, "abs"] + [t for t in pts[0]["sweep"] if t != f"{mt.PARAM_ZERO:g}"]
    hvs: dict[str, dict] = {}
    for m in methods:
        out: dict = {"points_per_seed": len({p["setting"] for p in pts if p["method"] == m})}
        for t in thresholds:
            per_seed = [hv([p for p in pts if p["method"] == m and p["seed"] == s], t) for s in seeds
                        if any(p["method"] == m and p["seed"] == s for p in pts)]
            out["hv" if t is None else f"hv@{t}"] = {"per_seed": per_seed, "mean_std": _ms(per_seed)}
        # one point per method (the paper's "one point per method" variant): its best single setting
        best = [max(hv([p], None) for p in pts if p["method"] == m and p["seed"] == s) for s in seeds
                if any(p["method"] == m and p["seed"] == s for p in pts)]
        out["hv_best_single"] = {"per_seed": best, "mean_std": _ms(best)}
        hvs[m] = out
    return {"measures": {"param_sparsity": mt.PARAM_SPARSITY_TEXT, "effective_rank": mt.EFFECTIVE_RANK_TEXT,
                         "param_zero": mt.PARAM_ZERO, "hypervolume": (
                             f"(accuracy/100, sparsity/100, 1 - effective rank/{r_ref:.4g}), all maximized, "
                             f"reference point (0,0,0); {r_ref:.4g} = largest effective rank of the study's runs; "
                             "per seed, over each method's settings")},
            "measured_from": "each run's final weights (runs/ID/checkpoint.pt), re-evaluated with pcd.train.metrics",
            "r_ref": r_ref, "seeds": seeds, "epochs": sorted({p["epochs"] for p in pts}), "n_runs": len(pts),
            "rows": rows, "hypervolume": hvs,
            "max_zeroing_change": max(abs(p["test_acc"] - p["zeroed_acc"]) for p in pts),
            "points": pts}


def table(s: dict) -> str:
    lines = ["Made by: `python -m pcd runs submit --data-dir DIR --preset digits-k3 --threads 1`, "
             "`nice -n 5 python -m pcd worker --data-dir DIR --slots 1 --idle-exit 30`, "
             "`python benchmarks/k3_study.py DIR --out benchmarks/results/digits_k3_study`.", "",
             f"digits-k3: {s['n_runs']} finished runs, seeds {s['seeds']}, epochs {s['epochs']}; mean ± std over "
             f"seeds; measured from {s['measured_from']}.",
             "", f"- {s['measures']['param_sparsity']}", f"- {s['measures']['effective_rank']}",
             f"- hypervolume: {s['measures']['hypervolume']}",
             f"- setting the weights counted as zero (relative) to 0 changes a run's test accuracy by at most "
             f"{s['max_zeroing_change']:.2f} points", "",
             "| method | setting | seeds | accuracy % | sparsity % (rel. 1e-3) | acc. with those zeroed % | "
             "effective rank | sparsity % (abs. 1e-3) | acc. with those zeroed % | sparsity % (abs. 1e-8) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["rows"]:
        lines.append(f"| {r['method']} | {r['setting']} | {len(r['seeds'])} | {_fmt(r['test_acc'])} | "
                     f"{_fmt(r['param_sparsity'])} | {_fmt(r['zeroed_acc'])} | {_fmt(r['effective_rank'], '.2f')} | "
                     f"{_fmt(r['abs_sparsity'])} | {_fmt(r['abs_zeroed_acc'])} | "
                     f"{_fmt(r['abs_sparsity_sweep'].get('1e-08', (None, None)))} |")
    lines += ["", "Dominated hypervolume per method (per seed over the method's settings; mean ± std over seeds):", "",
              "| method | settings | HV (rel. 1e-3) | HV (rel. 1e-2) | HV (rel. 1e-4) | HV (abs. 1e-3) | "
              "HV of its best single setting (rel. 1e-3) |", "|---|---|---|---|---|---|---|"]
    for m, h in sorted(s["hypervolume"].items(), key=lambda kv: -(kv[1]["hv"]["mean_std"][0] or 0)):
        lines.append(f"| {m} | {h['points_per_seed']} | {_fmt(h['hv']['mean_std'], '.4f')} | "
                     f"{_fmt(h.get('hv@0.01', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h.get('hv@0.0001', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h.get('hv@abs', {}).get('mean_std', (None, None)), '.4f')} | "
                     f"{_fmt(h['hv_best_single']['mean_std'], '.4f')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", help="the run folder the study was queued in")
    ap.add_argument("--out", default=None, help="write OUT.json and OUT.md (default: print the table)")
    a = ap.parse_args()
    s = summarise(Path(a.data_dir))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out + ".json").write_text(json.dumps(s, indent=1), encoding="utf-8")
        Path(a.out + ".md").write_text(table(s), encoding="utf-8")
    print(table(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
