"""Gramian memory: one step with and without the per-sample Jacobian (arXiv 2406.16232, Sec. 6).

:func:`measure_gramian_memory` -- peak memory and time of one step that (a) materializes the
per-sample Jacobian (ours: ``torch.func.vmap(grad)``) and forms ``G = J J^T``, versus (b)
TorchJD's ``torchjd.autogram.Engine`` computing ``G`` without the Jacobian (the paper's
Gramian reverse accumulation, Sec. 6), plus (c) a plain ERM backward for reference.

On CPU the peak resident set is measured, which needs glibc's allocator tuned to return freed
blocks to the OS (``mallopt``) -- a process-wide setting. :func:`measure_gramian_memory` therefore
runs the CPU measurement in a spawned child process (``isolated=True``, the default), so neither
importing this module nor calling it changes the allocator of the calling process (the studio).
"""
from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pcd.experiments.iwrm import TinyCNN, _per_sample_jacobian, _torch
from pcd.methods.properties import _check_int

__all__ = ["measure_gramian_memory", "torchjd_available", "MEMORY_MODES", "memory_rows"]

MEMORY_MODES = ("erm", "jacobian", "autojac", "autogram")
_TORCHJD_MODES = ("autojac", "autogram")
_MODE_LABELS = {
    "erm": "ERM: one backward of the mean loss (reference)",
    "jacobian": "materialized per-sample Jacobian J [B, n], then G = J J^T (ours, torch.func vmap)",
    "autojac": "TorchJD autojac.backward: materialized Jacobian (the paper's plain SSJD), then G",
    "autogram": "TorchJD autogram Engine: G without materializing J (Gramian reverse accumulation)",
}


def torchjd_available() -> bool:
    """True when ``torchjd`` (with ``torchjd.autogram``) can be imported."""
    try:
        from torchjd.autogram import Engine  # noqa: F401
    except Exception:
        return False
    return True


_LIBC = None


def _rss_tools() -> bool:
    """Make RSS track live memory (glibc: fixed mmap threshold, so big blocks go back to the OS)
    and check that the peak RSS can be reset (Linux ``/proc/self/clear_refs``)."""
    global _LIBC
    if not os.path.exists("/proc/self/clear_refs"):
        return False
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD: disables glibc's dynamic threshold
            _LIBC.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")


def _one_step(mode: str, model, engine, x, y) -> Any:
    torch = _torch()
    F = torch.nn.functional
    if mode == "erm":
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        return None
    if mode == "jacobian":
        _, J = _per_sample_jacobian(model, x, y)
        G = J @ J.T
        d = J.mean(dim=0)  # the update itself: weights @ J (Mean weights; any aggregator would do)
        return G, d
    losses = F.cross_entropy(model(x), y, reduction="none")
    if mode == "autojac":
        from torchjd.autojac import backward

        params = list(model.parameters())
        backward(losses, inputs=params)
        J = torch.cat([p.jac.reshape(losses.shape[0], -1) for p in params], dim=1)
        for p in params:
            del p.jac
        return J @ J.T, J.mean(dim=0)
    G = engine.compute_gramian(losses)
    model.zero_grad(set_to_none=True)
    losses.backward(torch.full_like(losses, 1.0 / losses.shape[0]))  # the same update, by backward
    return G, None


def measure_gramian_memory(batch_sizes: Sequence[int] = (8, 16, 32, 64, 128), *, width: int = 16,
                           image_size: int = 8, repeats: int = 3, device: str = "cpu",
                           modes: Sequence[str] = MEMORY_MODES, seed: int = 0,
                           progress: Callable[[float, str], None] | None = None,
                           isolated: bool = True) -> dict[str, Any]:
    """Peak memory and time of one step per mode and batch size (see the module docstring).

    Memory on CPU: growth of the process's peak resident set over the step (Linux: the peak is
    reset through ``/proc/self/clear_refs`` and glibc's mmap threshold is fixed so freed tensors
    leave the resident set); on CUDA: ``torch.cuda.max_memory_allocated`` over the step. Both
    are taken above the memory held before the step (model, inputs). Time: median over
    ``repeats`` steps after one warm-up. Returns ``{"batch_sizes", "n_params", "device",
    "memory_source", "modes": {mode: {"peak_mb" [..], "seconds" [..], "label"}},
    "reduction_vs_autojac" / "reduction_vs_jacobian" [..] (1 - autogram peak / that peak),
    "gram_rel_max_diff" [..] (largest relative difference between the modes' Gram matrices)}``.
    ``autojac`` and ``autogram`` need ``torchjd``; they are skipped (listed in ``"skipped"``)
    when it is not installed. ``isolated`` (CPU): measure in a spawned child process, so the
    allocator settings the measurement needs never touch this process (module docstring).
    """
    kw: dict[str, Any] = dict(batch_sizes=list(batch_sizes), width=width, image_size=image_size, repeats=repeats,
              device=device, modes=list(modes), seed=seed)
    _, _, _, _, wanted = _check_args(**kw)  # bad arguments fail here, before any child starts
    skipped: list[str] = []
    if any(m in _TORCHJD_MODES for m in wanted) and not torchjd_available():
        skipped = [f"{m} (torchjd is not installed: pip install torchjd==0.18.0)" for m in wanted
                   if m in _TORCHJD_MODES]
        kw["modes"] = [m for m in wanted if m not in _TORCHJD_MODES]
        if not kw["modes"]:
            raise ValueError("every requested mode needs torchjd, which is not installed "
                             "(pip install torchjd==0.18.0)")
    out = _in_child(kw, progress) if isolated and device == "cpu" else _measure(**kw, progress=progress)
    out["skipped"] = skipped + out["skipped"]
    return out


def _in_child(kw: dict[str, Any], progress: Callable[[float, str], None] | None) -> dict[str, Any]:
    import multiprocessing as mp
    import queue as _queue

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kw, q), daemon=True, name="pcd-gramian-memory")
    _start_without_main(proc)
    try:
        while True:
            try:
                msg = q.get(timeout=1.0)
            except _queue.Empty:
                if not proc.is_alive():
                    raise RuntimeError(f"the memory measurement process exited (code {proc.exitcode})") from None
                continue
            if msg[0] == "progress":
                if progress is not None:
                    progress(msg[1], msg[2])
            elif msg[0] == "error":
                raise ValueError(msg[1])
            else:
                return msg[1]
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.terminate()
            proc.join()


_MAIN_LOCK = threading.Lock()


def _start_without_main(proc: Any) -> None:
    """Start the spawned ``proc`` without the caller's ``__main__``. A spawned child re-runs the
    parent's main script (as ``__mp_main__``) before it unpickles its target; under ``streamlit run``
    that script is ``app.py``, so the child ran the whole app and its warm-up (~45 s of the studio's
    51-77 s "Measure"). The target lives in this module, so the child needs no main: an empty one is
    in ``sys.modules`` while the child's start-up data is taken (a few ms, under a lock)."""
    import sys
    import types

    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            proc.start()
        finally:
            if main is not None:
                sys.modules["__main__"] = main


def _child(kw: dict[str, Any], q: Any) -> None:
    """Entry point of the spawned measurement process: results and progress go back through ``q``."""
    try:
        q.put(("result", _measure(**kw, progress=lambda f, m: q.put(("progress", f, m)))))
    except Exception as exc:  # relayed to the parent, which raises it
        q.put(("error", f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)))


def _check_args(batch_sizes: Sequence[int], width: int, image_size: int, repeats: int, device: str,
                modes: Sequence[str], seed: int) -> tuple[list[int], int, int, int, list[str]]:
    bs = [_check_int(b, "batch size", 1, 4096) for b in batch_sizes]
    if not bs:
        raise ValueError("give at least one batch size")
    width = _check_int(width, "width", 1, 256)
    image_size = _check_int(image_size, "image_size", 4, 64)
    repeats = _check_int(repeats, "repeats", 1, 50)
    modes = [str(m).lower() for m in modes]
    bad = [m for m in modes if m not in MEMORY_MODES]
    if bad or not modes:
        raise ValueError(f"unknown mode(s) {bad}; allowed: {', '.join(MEMORY_MODES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return bs, width, image_size, repeats, modes


def _measure(batch_sizes: Sequence[int], *, width: int, image_size: int, repeats: int, device: str,
             modes: Sequence[str], seed: int, progress: Callable[[float, str], None] | None) -> dict[str, Any]:
    torch = _torch()
    bs, width, image_size, repeats, modes = _check_args(batch_sizes, width, image_size, repeats, device, modes, seed)
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA GPU is available")
    skipped: list[str] = []  # the caller (measure_gramian_memory) decides what torchjd allows
    if device == "cpu":
        rss_ok = _rss_tools()
        source = ("peak resident set growth (Linux /proc, glibc)" if rss_ok
                  else "not available on this platform (needs Linux /proc/self/clear_refs)")
    else:
        rss_ok, source = False, "torch.cuda.max_memory_allocated"
    dev = torch.device(device)
    torch.manual_seed(seed)
    model = TinyCNN(width).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    engine, model_ag = None, None
    if "autogram" in modes:
        import copy

        from torchjd.autogram import Engine

        # The engine hooks its model's forward passes, so it gets its own copy (same weights):
        # forwards of the other modes must not be recorded by it.
        model_ag = copy.deepcopy(model)
        engine = Engine(model_ag, batch_dim=0)
    out: dict[str, Any] = {"batch_sizes": bs, "n_params": int(n_params), "device": device, "width": width,
                           "image_size": image_size, "memory_source": source, "skipped": skipped,
                           "modes": {m: {"label": _MODE_LABELS[m], "peak_mb": [], "seconds": []} for m in modes}}
    gen = torch.Generator().manual_seed(seed)
    diffs = []
    total, done = len(bs) * len(modes), 0
    for b in bs:
        x = torch.randn(b, 1, image_size, image_size, generator=gen).to(dev)
        y = torch.randint(0, 10, (b,), generator=gen).to(dev)
        grams = {}
        for mode in modes:
            if progress is not None:
                progress(done / total, f"{mode}, batch {b}")
            net = model_ag if mode == "autogram" else model
            res = _one_step(mode, net, engine, x, y)  # warm-up (and the Gram for the cross-check)
            if res is not None:
                grams[mode] = res[0].detach().double().cpu()
            del res
            times, peaks = [], []
            for _ in range(repeats):
                gc.collect()
                if device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                elif rss_ok:
                    _rss_tools()
                    base = _status_kb("VmRSS") * 1024
                t0 = time.perf_counter()
                res = _one_step(mode, net, engine, x, y)
                if device == "cuda":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                if device == "cuda":
                    peaks.append((torch.cuda.max_memory_allocated() - base) / 2**20)
                elif rss_ok:
                    peaks.append(max(0, _status_kb("VmHWM") * 1024 - base) / 2**20)
                del res
            out["modes"][mode]["seconds"].append(float(np.median(times)))
            out["modes"][mode]["peak_mb"].append(float(np.median(peaks)) if peaks else None)
            done += 1
        if len(grams) >= 2:  # every mode must give the same Gram matrix
            ref = next(iter(grams.values()))
            diffs.append(max(float((g - ref).abs().max() / max(float(ref.abs().max()), 1e-30))
                             for g in grams.values()))
    out["gram_rel_max_diff"] = diffs
    if "autogram" in out["modes"] and (rss_ok or device == "cuda"):
        a = out["modes"]["autogram"]["peak_mb"]
        for ref in ("jacobian", "autojac"):
            if ref in out["modes"]:
                j = out["modes"][ref]["peak_mb"]
                out[f"reduction_vs_{ref}"] = [1.0 - ai / ji if ji else None for ji, ai in zip(j, a)]
    if progress is not None:
        progress(1.0, "done")
    return out



def memory_rows(mem: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (mode, batch size): peak MB and seconds per step."""
    if not isinstance(mem, dict) or "modes" not in mem:
        raise ValueError("memory result must be the dict returned by measure_gramian_memory")
    return [{"mode": mode, "batch_size": b, "peak_mb": pk, "seconds_per_step": t}
            for mode, r in mem["modes"].items()
            for b, pk, t in zip(mem["batch_sizes"], r["peak_mb"], r["seconds"])]
