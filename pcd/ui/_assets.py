"""The studio's front-end files (``pcd/ui/static/``: style sheets, component JavaScript and HTML),
read once per process. They ship inside the package (``[tool.setuptools.package-data]``), so a
wheel install finds them; Streamlit's components take them as strings (``st.components.v2``)."""
from __future__ import annotations

import functools
from importlib import resources

#: the folder's name inside :mod:`pcd.ui`
FOLDER = "static"


@functools.cache
def asset(name: str) -> str:
    """The text of ``pcd/ui/static/<name>`` (read on the first call, then kept)."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"asset takes a file name in pcd/ui/{FOLDER}/, got {name!r}")
    return (resources.files("pcd.ui") / FOLDER / name).read_text(encoding="utf-8")


@functools.cache
def style(*names: str) -> str:
    """The named style sheets as one ``<style>`` block (for ``st.markdown(..., unsafe_allow_html=True)``).
    Blank lines are dropped: in Markdown a blank line would end the HTML block."""
    lines = (line for n in names for line in asset(n).splitlines() if line.strip())
    return "<style>\n" + "\n".join(lines) + "\n</style>"
