"""GPU readiness check for the Pruning lab, in under 4 minutes on one GPU:

1. one epoch of ResNet-20 on a generated CIFAR-10-format archive on CUDA, with PCD and with WS
   (same data, same seed; a short warm-up run first so cuDNN autotuning is not billed to either):
   images / s and the PCD / WS step-time ratio (the paper reports < 2 % overhead for K = 2);
2. a run queued through the supervisor on the GPU, cancelled once it trains, and a check that the
   child process is gone and its CUDA memory is released (device free memory back to where it was,
   and -- where ``nvidia-smi`` exists -- no compute process with the child's pid);
3. one JSON summary on stdout (``--json FILE`` also writes it); exit code 0 when every check passed.

Without a CUDA device it prints ``{"skipped": true, "reason": ...}`` and exits 0.

    python benchmarks/gpu_check.py [--train-images 20000] [--json gpu_check.json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEADLINE_S = 230.0  # the whole check stays under 4 minutes
MEMORY_SLACK_MIB = 256.0


def _skip(reason: str) -> dict:
    return {"skipped": True, "reason": reason}


def _cuda_ready() -> str | None:
    """None when a CUDA device can be used, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return None


def _free_mib() -> float:
    import torch

    torch.cuda.empty_cache()
    free, _total = torch.cuda.mem_get_info()
    return free / 2**20


def _smi_pids() -> list[int] | None:
    """PIDs of CUDA compute processes per nvidia-smi (None when nvidia-smi is not available)."""
    if not shutil.which("nvidia-smi"):
        return None
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20)
    return [int(t) for t in out.stdout.split() if t.strip().isdigit()]


def throughput(data_dir: Path, n_train: int, out: Path) -> dict:
    from pcd.train.run import train

    base = {"dataset": "cifar10", "data_dir": str(data_dir), "arch": "resnet20", "epochs": 1, "batch_size": 128,
            "device": "cuda", "export": False, "max_test_samples": 1000, "grouping": "filter", "seed": 0,
            "progress_every": 50}
    train({**base, "method": "ws", "max_train_samples": 2048}, out_dir=out / "warmup")
    res = {}
    for method in ("pcd", "ws"):
        r = train({**base, "method": method}, out_dir=out / method)
        row = r["history"][0]
        res[method] = {"images_per_s": n_train / r["seconds"], "step_ms": 1000.0 * row["step_seconds"],
                       "epoch_s": r["seconds"], "test_acc": r["test_acc"]}
    ratio = res["pcd"]["step_ms"] / res["ws"]["step_ms"]
    return {"methods": res, "step_time_ratio_pcd_over_ws": ratio, "paper_overhead": "< 2 %",
            "train_images": n_train}


def supervisor_cancel(data_dir: Path, work: Path, deadline: float) -> dict:
    """Queue a GPU run through a real supervisor, cancel it while it trains, check the memory."""
    import os
    import signal

    from pcd.jobs.bench import _alive, _start, _wait
    from pcd.jobs.store import RunStore
    from pcd.jobs.supervisor import supervisor_pid

    store_dir = work / "queue"
    store_dir.mkdir()
    store = RunStore(store_dir)
    free_before = _free_mib()
    proc = _start(store_dir, 0.5)
    try:
        _wait(lambda: supervisor_pid(store_dir), 60, "the supervisor")
        rid = store.submit({"dataset": "cifar10", "data_dir": str(data_dir), "arch": "resnet20", "method": "pcd",
                            "epochs": 50, "device": "cuda", "export": False, "progress_every": 5})
        left = max(10.0, deadline - time.monotonic() - 40)
        _wait(lambda: (store.get(rid)["progress"] or 0) > 0 or store.get(rid)["status"] not in ("queued", "running"),
              left, "the GPU run to train")
        run = store.get(rid)
        if run["status"] != "running":
            return {"ok": False, "error": f"run {rid} ended {run['status']} before it could be cancelled: "
                                          f"{run['error']}"}
        child = run["pid"]
        free_during = _free_mib()
        smi_during = _smi_pids()
        t0 = time.monotonic()
        store.cancel(rid)
        _wait(lambda: store.get(rid)["status"] == "cancelled", 60, "the cancel")
        cancel_s = time.monotonic() - t0
        _wait(lambda: not child or not _alive(child), 30, "the child to exit")
        time.sleep(1.0)
        free_after = _free_mib()
        smi_after = _smi_pids()
        released = free_after >= free_before - MEMORY_SLACK_MIB
        gone = smi_after is None or child not in smi_after
        return {"ok": bool(released and gone), "run_id": rid, "device": run["device"], "cancel_s": cancel_s,
                "free_mib_before": free_before, "free_mib_while_training": free_during,
                "free_mib_after_cancel": free_after, "memory_released": released,
                "child_pid": child, "child_listed_by_nvidia_smi_while_training":
                    None if smi_during is None else child in smi_during,
                "child_gone_from_nvidia_smi": None if smi_after is None else gone}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)


def check(n_train: int = 20000) -> dict:
    why = _cuda_ready()
    if why:
        return _skip(why)
    import torch

    from pcd.train.data import write_fake_cifar

    t_start = time.monotonic()
    deadline = t_start + DEADLINE_S
    summary: dict = {"skipped": False, "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    with tempfile.TemporaryDirectory(prefix="pcd-gpu-check-") as tmp:
        work = Path(tmp)
        data = work / "cifar"
        write_fake_cifar(data, "cifar10", n_train=n_train, n_test=1000, seed=0)
        summary["archive_s"] = time.monotonic() - t_start
        try:
            summary["throughput"] = throughput(data, n_train, work / "runs")
        except Exception as exc:  # the summary reports what failed
            summary["throughput"] = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            summary["supervisor_cancel"] = supervisor_cancel(data, work, deadline)
        except Exception as exc:  # reported in the summary
            summary["supervisor_cancel"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    summary["seconds"] = time.monotonic() - t_start
    summary["ok"] = ("error" not in summary["throughput"] and bool(summary["supervisor_cancel"].get("ok"))
                     and summary["seconds"] < 240)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-images", type=int, default=20000, help="images in the generated archive (default 20000)")
    ap.add_argument("--json", default=None, help="also write the summary to this file")
    a = ap.parse_args(argv)
    if not 1024 <= a.train_images <= 50000:
        print(f"error: --train-images must be in [1024, 50000], got {a.train_images}", file=sys.stderr)
        return 2
    res = check(a.train_images)
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text + "\n", encoding="utf-8")
    return 0 if res.get("skipped") or res.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
