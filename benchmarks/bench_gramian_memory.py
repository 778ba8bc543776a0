"""Peak memory and time per step of the Gram matrix G = J J^T of per-sample losses (IWRM), for a
tiny CNN on 8x8 inputs, batch sizes 8..128 (seed 002, arXiv 2406.16232, Sec. 6):

* ``erm``       one backward of the mean loss (reference: plain SGD);
* ``jacobian``  ours: the per-sample Jacobian materialized with ``torch.func.vmap(grad)``, then ``J J^T``;
* ``autojac``   TorchJD ``autojac.backward``: the paper's plain SSJD (materialized Jacobian);
* ``autogram``  TorchJD ``autogram.Engine``: Gramian reverse accumulation, J never materialized.

CPU memory is the growth of the process's peak resident set over one step (Linux; see
:func:`pcd.experiments.jd.measure_gramian_memory`); on CUDA ``torch.cuda.max_memory_allocated``.

    python benchmarks/bench_gramian_memory.py [--width 16] [--batch-sizes 8,16,32,64,128]
                                              [--device cpu|cuda] [--repeats 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json

import torch

from pcd.experiments.jd import measure_gramian_memory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--batch-sizes", default="8,16,32,64,128")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--json", default=None, help="also write the raw result as JSON")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    bs = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    res = measure_gramian_memory(bs, width=args.width, repeats=args.repeats, device=args.device)
    print(f"device {res['device']}, {res['n_params']:,} parameters, memory: {res['memory_source']}")
    if res["skipped"]:
        print("skipped:", "; ".join(res["skipped"]))
    print(f"{'mode':10s}" + "".join(f"{'B=' + str(b):>18s}" for b in bs))
    for mode, r in res["modes"].items():
        cells = "".join(f"{('n/a' if p is None else f'{p:7.1f} MB'):>10s} {t * 1e3:6.0f}ms" for p, t in zip(r["peak_mb"], r["seconds"]))
        print(f"{mode:10s}{cells}")
    for ref in ("autojac", "jacobian"):
        red = res.get(f"reduction_vs_{ref}")
        if red:
            print(f"autogram vs {ref}: peak memory " + ", ".join(
                f"B={b}: {'n/a' if v is None else f'{-100 * v:+.0f} %'}" for b, v in zip(bs, red)))
    print(f"largest relative difference between the modes' Gram matrices: {max(res['gram_rel_max_diff'] or [0]):.1e}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
