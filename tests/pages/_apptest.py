"""Opening a Studio page under Streamlit's AppTest (no browser): shared by the page and fuzz tests."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

VIEWS = Path(__file__).resolve().parents[2] / "views"
PAGES = sorted(p.name for p in VIEWS.glob("[0-9][0-9]_*.py"))  # every page file, in menu order


def open_page(page: str, params: dict[str, Any], tmp_path: Path, monkeypatch: Any, timeout: float = 180) -> AppTest:
    """Run ``views/<page>`` once with the query parameters ``params`` (a fresh data folder, no queue
    supervisor) and return the AppTest."""
    monkeypatch.setenv("PCD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PCD_NO_AUTOSTART", "1")
    at = AppTest.from_file(str(VIEWS / page), default_timeout=timeout)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at


def figure_specs(at: AppTest) -> list[dict]:
    """The figures a page drew, in order, as Plotly JSON dicts (``{"data", "layout", "frames"}``):
    the studio charts' (:func:`pcd.ui.chart.plotly_chart`), else ``st.plotly_chart``'s."""
    ours = [json.loads(json.loads(e.proto.json)["spec"]) for e in at.get("bidi_component")
            if str(getattr(e.proto, "component_name", "")).endswith("pcd_plotly")]
    return ours or [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def component_names(at: AppTest) -> list[str]:
    """Names of the custom components (``st.components.v2``) on the page, in order, charts left out."""
    names = [str(getattr(e.proto, "component_name", "")) for e in at.get("bidi_component")]
    return [n for n in names if not n.endswith("pcd_plotly")]
