"""Embeds: ``?hide=`` hides whole parts of a page (the menu, the title, the settings panels, ...) or
single widgets by their key, so a view can sit in a slide or a course page (with Streamlit's
``?embed=true``). The hidden widgets stay on the page: their values, from the URL, still hold."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import streamlit as st

from pcd import _validate as V
from pcd.ui.url_state import refused

#: ``?hide=`` words for whole parts of a page; any other entry names one widget by its key.
HIDE_PARTS = {
    "sidebar": '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], '
               '[data-testid="stExpandSidebarButton"]',  # the menu (Streamlit's ?embed=true keeps it)
    "title": None,  # not drawn at all
    "intro": None,
    "settings": '[class*="st-key-pcd_settings_"], [class*="st-key-pcd_drawer_"]',  # every settings panel (the widgets stay: URL state holds)
    "downloads": '[data-testid="stDownloadButton"], [class*="st-key-pcd_downloads"]',
    "tables": '.pcd-table, [data-testid="stTable"], [data-testid="stDataFrame"]',
    "captions": '[data-testid="stCaptionContainer"]',
}
MAX_HIDE = 32
_HIDE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


def parse_hide(raw: Any) -> list[str]:
    """``?hide=settings,kb_steps`` -> ``["settings", "kb_steps"]``: the words of :data:`HIDE_PARTS`
    or widget keys (a letter, then letters, digits, ``_``; at most 64 characters), at most
    :data:`MAX_HIDE` of them. ``ValueError`` (one line) otherwise."""
    text = V.text(raw, "hide", max_len=4096, allow_empty=True)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) > MAX_HIDE:
        raise ValueError(f"hide lists at most {MAX_HIDE} names, got {len(names)}")
    bad = [n for n in names if n not in HIDE_PARTS and not _HIDE_KEY.fullmatch(n)]
    if bad:
        raise ValueError(f"hide takes {', '.join(HIDE_PARTS)} or widget keys (letters, digits, _), got {bad[0]!r}")
    return list(dict.fromkeys(names))


def hidden_parts() -> list[str]:
    """The ``?hide=`` list of this page's URL (a bad value is ignored with a toast, like every link value)."""
    raw = st.query_params.get("hide")
    if raw is None:
        return []
    try:
        return parse_hide(raw)
    except ValueError as exc:
        refused("hide", raw, exc)
        return []


def hide_css(names: Sequence[str]) -> str:
    """A style sheet hiding the named parts and widgets (they are still there: the page keeps their
    values, so an embedded view shows exactly the state its URL carries)."""
    sel = [css for n in names if (css := HIDE_PARTS.get(n))] + [f".st-key-{n}" for n in names if n not in HIDE_PARTS]
    return f"<style>{', '.join(sel)} {{display: none !important;}}</style>" if sel else ""
