"""Page 10, Training geometry: the recorder files it can show -- a Pruning lab run's
``monitor.jsonl`` or an uploaded one -- read into a :class:`pcd.monitor` trace (nothing cached:
a run's file grows while it trains)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pcd import _files, monitor
from pcd.jobs import default_data_dir
from pcd.jobs.store import run_folders

MAX_BYTES = monitor.MAX_BYTES


def recorded_runs() -> list[Path]:
    """The run folders of the data folder that have a recorder file, oldest first."""
    return [p for p in run_folders(default_data_dir()) if (p / "monitor.jsonl").is_file()]


def read_run(run_id: int) -> Any:
    """The trace of run ``run_id`` (its real folder only: a linked run folder is refused)."""
    folder = _files.run_folder(default_data_dir(), int(run_id))
    return monitor.read(folder / "monitor.jsonl", folder=folder)


def read_upload(name: str, data: bytes) -> Any:
    """The trace of an uploaded recorder file (at most :data:`MAX_BYTES`, UTF-8 JSON lines)."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"{name}: larger than the {MAX_BYTES}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None
    return monitor.parse(text, name)
