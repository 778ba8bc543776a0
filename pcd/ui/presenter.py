"""Presenter mode (a projector at 1280 x 720): large type, full-width figures (a column holding a
figure takes the whole row and comes first; its controls wrap below), every paragraph folded to one
line (hover unfolds it). Pure CSS over Streamlit's own elements (``static/presenter.css``), so every
page gets it from :func:`pcd.ui.setup_page` without any change of its own. The mode is kept in the
URL (``?present=1``) and across pages."""
from __future__ import annotations

import streamlit as st

from pcd.ui._assets import style
from pcd.ui.url_state import url_default
from pcd.viz.labels import PRESENT_TEXT_SCALE

PRESENT_PARAM = "present"
_PRESENT_KEY = "pcd_present"          # the toggle's widget key (one per page run)
_PRESENT_SAVED = "_pcd_present_saved"  # survives page switches (widget state does not, reliably)


def presenter_mode() -> bool:
    """Whether presenter mode is on for this session (set by the toggle :func:`pcd.ui.setup_page` draws)."""
    return bool(st.session_state.get(_PRESENT_SAVED, False))


def text_scale() -> float:
    """The scale of the labels placed on a figure's data (end labels, verdicts, τ labels, the geometry
    figure's method labels): :data:`pcd.viz.labels.PRESENT_TEXT_SCALE` in presenter mode, else 1. The
    figure builders take it as ``text_scale`` and place the labels for their larger size."""
    return PRESENT_TEXT_SCALE if presenter_mode() else 1.0


def starts_on() -> bool:
    """Whether this run starts in presenter mode (the session's choice, else the URL's ``?present=1``),
    read before the toggle is drawn (the page config collapses the sidebar on a projector)."""
    saved = st.session_state.get(_PRESENT_SAVED)
    return bool(url_default(PRESENT_PARAM, False) if saved is None else saved)


def presenter_toggle() -> bool:
    """The presenter-mode toggle, kept in the URL (``?present=1``) and across pages.

    The value lives in a plain session key (a widget's own state does not survive a page switch:
    the same key on another page is another widget); the toggle is re-seeded from it every run and
    writes it back only when the user flips it."""
    saved = st.session_state.get(_PRESENT_SAVED)
    if saved is None:
        saved = bool(url_default(PRESENT_PARAM, False))
        st.session_state[_PRESENT_SAVED] = saved
    st.session_state[_PRESENT_KEY] = bool(saved)

    def _flipped() -> None:
        st.session_state[_PRESENT_SAVED] = bool(st.session_state.get(_PRESENT_KEY))

    on = st.toggle("Presenter mode", key=_PRESENT_KEY, on_change=_flipped,
                   help="for a projector: large type, full-width figures, paragraphs folded to one line "
                        "(hover to read); kept in the URL as ?present=1")
    if on and st.query_params.get(PRESENT_PARAM) != "1":
        st.query_params[PRESENT_PARAM] = "1"
    elif not on and PRESENT_PARAM in st.query_params:
        del st.query_params[PRESENT_PARAM]
    return bool(on)


def presenter_css() -> str:
    """Presenter mode's style sheet (``static/presenter.css``) as a ``<style>`` block."""
    return style("presenter.css")
