"""The package version, written in one place: ``[project] version`` in ``pyproject.toml``.

An installed package reads it from its metadata; a source checkout (``pcd`` imported from the
repository, as the tests and the studio do) reads the ``pyproject.toml`` beside the package, so a
stale installed copy never reports the wrong version for the code that is running.
"""
from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "pcd-studio"


def read_version() -> str:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        try:
            with pyproject.open("rb") as fh:
                project = tomllib.load(fh).get("project", {})
            if project.get("name") == DISTRIBUTION and isinstance(project.get("version"), str):
                return project["version"]
        except (OSError, tomllib.TOMLDecodeError):
            pass
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = read_version()
