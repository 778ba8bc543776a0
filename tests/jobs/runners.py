"""Small stand-in runners for the supervisor's failure-handling tests (same signature as
``pcd.train.run.train``): they sleep, report progress, checkpoint, crash, hang or raise."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pcd.jobs.child import Cancelled


def _epochs(epochs: int, start: int, until: str | None, max_epochs: int):
    """Epoch indices from ``start``: ``epochs`` of them, or with ``until`` (a file path) on and on
    until that file exists (at most ``max_epochs``): a test releases its runs when it is done with
    them instead of betting on how long a fixed number of epochs lasts on a loaded machine."""
    epoch = start
    while epoch < max_epochs and (epoch < epochs or (until is not None and not os.path.exists(until))):
        yield epoch
        epoch += 1


def quick(config, *, out_dir, on_progress=None, should_stop=None):
    """``epochs`` epochs of ``sleep`` seconds each (with ``until``: more, until that file exists);
    resumes from ``checkpoint.json``; honours cancel."""
    epochs = int(config.get("epochs", 3))
    sleep = float(config.get("sleep", 0.05))
    until = config.get("until")
    out = Path(out_dir)
    ck = out / "checkpoint.json"
    start = json.loads(ck.read_text())["epoch"] if ck.exists() else 0
    rows = json.loads(ck.read_text()).get("rows", []) if ck.exists() else []
    with open(out / "attempts.txt", "a") as fh:
        fh.write(f"{os.getpid()} {start}\n")
    for epoch in _epochs(epochs, start, until, int(config.get("max_epochs", 2000))):
        t_end = time.monotonic() + sleep
        while time.monotonic() < t_end:
            if should_stop is not None and should_stop():
                raise Cancelled(f"cancelled at epoch {epoch}")
            time.sleep(min(0.02, sleep))
        row = {"epoch": epoch + 1, "test_acc": 0.5 + 0.1 * epoch, "train_loss": 1.0 / (epoch + 1)}
        rows.append(row)
        # like pcd.train.run.train: every epoch row in metrics.jsonl, then the checkpoint, then progress
        (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp = ck.with_suffix(".tmp")  # atomic, as pcd.train.run does: a node can die mid-write
        tmp.write_text(json.dumps({"epoch": epoch + 1, "rows": rows}))
        tmp.replace(ck)
        if on_progress is not None:
            on_progress({"epoch": epoch + 1, "epochs": epochs, "step": epoch + 1, "steps_total": epochs,
                         "progress": (epoch + 1) / epochs, "metrics": row})
    return {"config": config, "test_acc": 0.5 + 0.1 * (epochs - 1), "resumed_from": start, "epochs_done": len(rows),
            "pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "torch_threads_env": os.environ.get("PCD_TORCH_THREADS")}


def crash(config, *, out_dir, on_progress=None, should_stop=None):
    if on_progress:
        on_progress({"epoch": 0, "epochs": 1, "step": 1, "steps_total": 2, "progress": 0.5, "metrics": None})
    raise RuntimeError("boom: simulated crash in epoch 1")


class OutOfMemoryError(RuntimeError):
    """Same name and message as ``torch.cuda.OutOfMemoryError`` (recognised by name and message;
    not importing torch keeps this test runner fast)."""


def oom(config, *, out_dir, on_progress=None, should_stop=None):
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def die(config, *, out_dir, on_progress=None, should_stop=None):
    """The process vanishes without a verdict (like a segfault or the kernel's OOM killer)."""
    print("about to die hard", flush=True)
    os._exit(13)


def hang(config, *, out_dir, on_progress=None, should_stop=None):
    """Reports once, then hangs and ignores cancel (a stuck CUDA call)."""
    if on_progress:
        on_progress({"epoch": 0, "epochs": 1, "step": 1, "steps_total": 100, "progress": 0.01, "metrics": None})
    Path(out_dir, "hung.pid").write_text(str(os.getpid()))
    time.sleep(3600)
    return {}


def torch_threads(config, *, out_dir, on_progress=None, should_stop=None):
    import torch
    return {"threads": torch.get_num_threads(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def dispatch(config, **kw):
    """Pick the behaviour per run: ``config["behaviour"]`` names one of the runners above."""
    name = config.get("behaviour", "quick")
    if name not in ("quick", "crash", "oom", "die", "hang", "torch_threads"):
        raise ValueError(f"unknown behaviour {name!r}")
    return globals()[name](config, **kw)
