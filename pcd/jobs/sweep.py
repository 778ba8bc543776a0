"""Turning a queue form into run configs: number lists (a τ sweep, seeds) and the methods x τ x
seeds product. Plain data, used by the Pruning lab page, the CLI and tests."""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def parse_numbers(text: str, *, name: str, low: float | None = None, high: float | None = None,
                  integer: bool = False, max_count: int = 64) -> list:
    """``"0, 0.01, 0.02"`` -> ``[0.0, 0.01, 0.02]`` (commas or spaces; duplicates removed, order kept)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name}: give at least one number (comma-separated)")
    out: list = []
    for tok in text.replace(";", ",").replace(" ", ",").split(","):
        tok = tok.strip()
        if not tok:
            continue
        try:
            v = float(tok)
        except ValueError:
            raise ValueError(f"{name}: {tok!r} is not a number; write e.g. 0, 0.01, 0.02") from None
        if not math.isfinite(v):
            raise ValueError(f"{name}: {tok!r} is not finite")
        if integer:
            if v != int(v):
                raise ValueError(f"{name}: {tok!r} must be a whole number")
            v = int(v)
        if (low is not None and v < low) or (high is not None and v > high):
            raise ValueError(f"{name}: {tok} is outside [{low}, {high}]")
        if v not in out:
            out.append(v)
    if not out:
        raise ValueError(f"{name}: give at least one number (comma-separated)")
    if len(out) > max_count:
        raise ValueError(f"{name}: at most {max_count} values, got {len(out)}")
    return out


def uses_tau(method: str) -> bool:
    """Whether τ changes the run of ``method`` (PCD's tau; DBGD has its own beta)."""
    try:
        import pcd.methods as M
        return "tau" in {p.name for p in M.get(method).params}
    except ValueError:
        return False


def build_sweep(base: Mapping[str, Any], methods: Sequence[str], taus: Sequence[float], seeds: Sequence[int],
                method_params: Mapping[str, Mapping[str, Any]] | None = None, max_runs: int = 500) -> list[dict]:
    """One config per (method, τ, seed). Methods without a τ get one run per seed (a τ sweep would
    only duplicate them). ``method_params[m]`` are ``m``'s hyper-parameters (τ excluded)."""
    if not isinstance(base, Mapping):
        raise ValueError("base must be a dict of config keys")
    methods = list(methods)
    if not methods:
        raise ValueError("choose at least one method")
    taus, seeds = list(taus), list(seeds)
    if not taus or not seeds:
        raise ValueError("give at least one τ and one seed")
    mp = dict(method_params or {})
    configs = []
    for m in methods:
        params = {k: v for k, v in dict(mp.get(m) or {}).items() if k != "tau"}
        for tau, seed in itertools.product(taus if uses_tau(m) else taus[:1], seeds):
            cfg = dict(base)
            cfg.update(method=m, tau=float(tau), seed=int(seed), method_params=dict(params))
            configs.append(cfg)
    if len(configs) > max_runs:
        raise ValueError(f"this sweep would queue {len(configs)} runs; at most {max_runs} at once")
    return configs


def describe(config: Mapping[str, Any]) -> str:
    """A short label: ``pcd τ=0.02 seed 0 · digits/smallcnn · 3 ep``."""
    tau = f" τ={config.get('tau'):g}" if uses_tau(str(config.get("method"))) and config.get("tau") is not None else ""
    return (f"{config.get('method')}{tau} seed {config.get('seed', 0)} · {config.get('dataset')}/"
            f"{config.get('arch') or 'default'} · {config.get('epochs')} ep")


def labels(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [describe(c) for c in configs]
