"""The settings line of an export: a table or figure downloaded from a page says how it was made
(method display names, the settings, the library version)."""
from __future__ import annotations

from typing import Any

import pcd.methods as registry


def export_settings(settings: dict[str, Any] | None) -> dict[str, str]:
    """``settings`` as display strings (method names as display names, lists joined), plus the
    library version: what an exported table or figure needs to say how it was produced."""
    import pcd

    out: dict[str, str] = {}
    for key, value in (settings or {}).items():
        if key in ("method", "methods"):
            names = [value] if isinstance(value, str) else list(value)
            value = ", ".join(registry.get(n).display_name if n in registry.available() else str(n) for n in names)
        elif isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:g}"
        out[str(key)] = str(value)
    out["version"] = f"pcd {pcd.__version__}"
    return out


def table_with_settings(df: Any, settings: dict[str, Any] | None):
    """A copy of the table with one constant column per setting (``setting: <name>``) and the version."""
    table = df.copy()
    for key, value in export_settings(settings).items():
        col = f"setting: {key}"
        if col in table.columns:
            raise ValueError(f"the table already has a column {col!r}")
        table[col] = value
    return table


def figure_html(fig: Any, settings: dict[str, Any] | None) -> str:
    """The figure as standalone HTML (Plotly bundled) with a settings line above it."""
    import html as _html

    page = fig.to_html(include_plotlyjs=True, full_html=True)
    items = " · ".join(f"<b>{_html.escape(k)}</b>: {_html.escape(v)}" for k, v in export_settings(settings).items())
    head = (f'<p class="pcd-settings" style="font-family:sans-serif;font-size:14px;color:#24292f">{items}</p>')
    return page.replace("<body>", "<body>" + head, 1)
