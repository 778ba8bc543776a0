"""Bad run configs: each must be refused at submit (``validate_for_queue``) AND flagged when a
stored row holding it is read back (``stored_config_problem``). :func:`sweep` -> (tried, failures)."""
from __future__ import annotations

BAD = [
    {"epochs": 10**9}, {"epochs": 10**30}, {"seed": 10**30}, {"seed": -1}, {"seed": 2**63},
    {"latency_repeats": 10**9}, {"threads": 10**6}, {"batch_size": 10**12}, {"progress_every": 10**12},
    {"lr": 1e-300}, {"lr": 0.0}, {"lr": float("nan")}, {"data_dir": "/etc"}, {"data_dir": "/proc/1"},
    {"tau": "0.1"}, {"epochs": "3"}, {"epochs": 3.0}, {"epochs": True}, {"tau": 2}, {"tau": None},
    {"max_train_samples": 10**12}, {"momentum": 5}, {"weight_decay": -1}, {"batch_size": 0},
]


def sweep() -> tuple[int, list[str]]:
    from pcd.jobs.store import stored_config_problem
    from pcd.train.queue import check_stored, validate_for_queue

    tried, failures = 0, []
    for cfg in BAD:
        c = {"dataset": "digits", **cfg}
        tried += 1
        try:
            validate_for_queue(c)
            failures.append(f"accepted at submit: {cfg}")
        except ValueError as exc:
            if "\n" in str(exc):
                failures.append(f"multi-line message for {cfg}")
        tried += 1
        if cfg.get("lr") != cfg.get("lr") or cfg in ({"tau": None},):  # NaN / null cannot be stored as JSON numbers
            continue
        if stored_config_problem(c, check_stored) is None:
            failures.append(f"not flagged when read back: {cfg}")
    return tried, failures
