"""Page set-up: the one call every page makes first (:func:`setup_page`: page config, style sheets,
title, presenter-mode toggle, ``?hide=``), and the page's fixed parts -- the settings panel, a
published claim, an error box, a link to another page. Only presentation lives here -- no math."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from pcd import _validate as V
from pcd.ui._assets import style
from pcd.ui.embed import hidden_parts, hide_css
from pcd.ui.preload import preload_for_page
from pcd.ui.presenter import PRESENT_PARAM, presenter_css, presenter_mode, presenter_toggle, starts_on

APP_TITLE = "PCD Studio"
LOGO = Path(__file__).resolve().parents[2] / "assets" / "logo.svg"
# the browser tab's icon, served by the app itself (a ":material/...:" page icon is fetched from
# Google's font CDN by the browser: no icon offline, and a request to a third party)
FAVICON = LOGO.parent / "favicon.svg"

#: the label of the settings drawer (presenter mode, :func:`settings_panel`)
DRAWER_LABEL = "Settings (click to open)"
#: every page's style sheets, in order (pcd/ui/static/)
PAGE_CSS = ("page.css", "table.css")


def page_css() -> str:
    """Every page's style sheet (``static/page.css`` + ``static/table.css``) as a ``<style>`` block."""
    return style(*PAGE_CSS)


def setup_page(title: str, icon: str = ":material/insights:", intro: str | None = None,
               presenter_title: bool = True, charts: bool = True, full_plotly: bool = False) -> None:
    """Common page set-up: page config, styling, title, the presenter-mode toggle and an optional
    plain-words intro. ``presenter_title=False``: leave the page title out in presenter mode (a page
    whose own headline is the title, e.g. the lesson's step). ``charts=False``: a page without
    Plotly charts (Plotly.js is then preloaded only once the page is idle, see
    :func:`pcd.ui.preload.preload_plotly`). ``full_plotly=True``: a page that draws ``st.plotly_chart``
    figures (trace types beyond the basic bundle, see :mod:`pcd.ui.chart`): Streamlit's full
    Plotly.js is imported at once (the router reads the flag from the page registry,
    :data:`pcd.studio.registry.PAGES`)."""
    present_now = starts_on()
    try:  # on a projector the sidebar starts collapsed: the figures get the width
        st.set_page_config(page_title=f"{title} · {APP_TITLE}", page_icon=str(FAVICON) if FAVICON.is_file() else icon,
                           layout="wide",
                           initial_sidebar_state="collapsed" if present_now else "auto")
    except Exception:  # set_page_config may only be called once per run (e.g. under AppTest)
        pass
    st.markdown(page_css(), unsafe_allow_html=True)
    preload_for_page(now=charts, full=full_plotly)
    if LOGO.is_file():
        st.logo(str(LOGO), size="large")
    with st.sidebar:
        present = presenter_toggle()
    if present:
        st.markdown(presenter_css(), unsafe_allow_html=True)
    hidden = hidden_parts()
    if hidden:
        st.markdown(hide_css(hidden), unsafe_allow_html=True)
    if (presenter_title or not present) and "title" not in hidden:
        st.title(title)
    if intro and "intro" not in hidden:
        st.markdown(intro)


def page_link(path: str, label: str, query_params: dict[str, Any] | None = None,
              icon: str = ":material/open_in_new:") -> None:
    """A link to another page of the app (``"pages/02_Toy_landscapes.py"``) opening it with
    ``query_params`` (and presenter mode, when on). Falls back to a plain link when the page is not
    registered with this run (e.g. a page script run on its own under a test harness)."""
    params = {k: str(v) for k, v in (query_params or {}).items()}
    if presenter_mode():
        params[PRESENT_PARAM] = "1"
    try:
        st.page_link(path, label=label, icon=icon, query_params=params or None)
    except Exception:  # StreamlitPageNotFoundError: not started from app.py
        slug = Path(path).stem.split("_", 1)[-1]
        query = "&".join(f"{k}={v}" for k, v in params.items())
        st.markdown(f"[{label}](/{slug}{'?' + query if query else ''})")


def settings_panel(key: str = "main", *, flow: bool = False) -> Any:
    """THE place of a page's settings, the same on every page: a compact bordered box directly
    under the page's (or tab's / section's) title and intro, above the figure it drives -- never the
    sidebar, which is collapsed in presenter mode and takes a quarter of an 800 px screen.

    Returns the box (a container). ``panel.columns(...)`` lays a row of settings out; with
    ``flow=True`` widgets written into it one after another (``with panel: ...``) flow into cells
    of ~13 rem that wrap (4-5 a row at 1440 px, 2 at 800 px). A setting that depends on a result can
    be added later with ``with panel:`` again; a container keyed ``pcd_row_<name>`` in it takes a whole
    row. ``key`` names the box (one per tab or section;
    the browser test finds settings by ``.st-key-pcd_settings_<key>``).

    In presenter mode the box sits in a drawer, folded to one line ("Settings") that opens on
    demand: the figure under it is then whole on a 1280 x 720 projector's first screen. The widgets
    are on the page all the same (their values, from the URL, hold)."""
    if presenter_mode():
        drawer = st.container(key=f"pcd_drawer_{key}").expander(DRAWER_LABEL, expanded=False)
        box = drawer.container(border=True, key=f"pcd_settings_{key}")
    else:
        box = st.container(border=True, key=f"pcd_settings_{key}")
    if flow:
        return box.container(horizontal=True, wrap=True, gap="small", key=f"pcd_flow_{key}")
    return box


def figure_grid(count: int, key: str, per_row: int = 3) -> list[Any]:
    """``count`` cells for figures of one size on one grid (e.g. one basin map per method): every
    cell has the same width and the rows line up, as many columns of at least ~20 rem as the page's
    width holds (3 at 1280-1920 px, 1 at 800 px), in presenter mode too. ``per_row``: the cells
    are written row by row in Streamlit columns (a figure shows as soon as it is drawn); the page's
    style sheet lays them on one CSS grid (``.st-key-pcd_grid_<key>``), so a short last row never
    stretches."""
    if count < 0 or per_row < 1:
        raise ValueError(f"figure_grid needs count >= 0 and per_row >= 1, got {count} and {per_row}")
    box = st.container(key=f"pcd_grid_{key}")
    return [c for _ in range(-(-count // per_row)) for c in box.columns(per_row)][:count]


def figure_row(key: str, weights: Sequence[float] = (1.5, 1.0)) -> list[Any]:
    """Containers side by side for figures that belong together (the toy map and the same runs in
    objective space), one per ``weights`` entry, each taking that share of the row's width: the row
    stays side by side in presenter mode too (where a lone figure takes the whole row), and wraps
    one under the other only where a cell would be narrower than 360 px (an 800-px window). The
    cells are keyed ``pcd_side_<key>_<i>`` (the row ``pcd_side_<key>``; ``static/page.css``)."""
    w = [V.number(x, "weight", low=0.1, high=10.0) for x in weights]
    if not w:
        raise ValueError("figure_row needs at least one weight")
    rule = " ".join(f".st-key-pcd_side_{key} > :nth-child({i + 1}) {{flex-grow: {x:g} !important;}}"
                    for i, x in enumerate(w))
    st.markdown(f"<style>{rule}</style>", unsafe_allow_html=True)
    row = st.container(horizontal=True, wrap=True, gap="medium", key=f"pcd_side_{key}")
    return [row.container(key=f"pcd_side_{key}_{i}") for i in range(len(w))]


def claim(paper: str, here: str | None = None, note: str | None = None) -> None:
    """Show a published figure next to the live one: ``paper: ..., here: ...``."""
    text = f"<b>paper:</b> {paper}"
    if here is not None:
        text += f" &nbsp;·&nbsp; <b>here:</b> {here}"
    if note:
        text += f"<br><span class='pcd-note'>{note}</span>"
    st.markdown(f"<div class='pcd-claim'>{text}</div>", unsafe_allow_html=True)


def show_error(exc: BaseException | str) -> None:
    """A friendly error box (the message says what is wrong and what is allowed)."""
    msg = str(exc) if str(exc) else exc.__class__.__name__
    st.error(msg, icon=":material/error:")


def fragment_rerun() -> bool:
    """Whether this script run is a fragment's own rerun (a widget inside an ``@st.fragment``
    changed), not a run of the whole page."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx is not None and ctx.fragment_ids_this_run)


# The whole page's run waits for a chart the fragment drew (rest_of_page_follows(when_drawn=key)): the key
# waited for, and the key of the chart that has reported its draw (pcd.ui.chart.plotly_chart(report_drawn=True)).
_WAITING = "_pcd_follow_waits_for"
_DRAWN = "_pcd_chart_drawn"


def rest_of_page_follows(when_drawn: str | None = None) -> None:
    """Call at the end of a fragment that holds a page's settings and its figures: in the fragment's
    own rerun the figures have just been sent, and the rest of the page (tables, other charts,
    downloads, the URL) now follows in a run of the whole page (``st.rerun(scope="app")``).

    Why: the browser draws a figure only once it has applied the run's elements before it, and a
    whole page is ~80 elements; the settings and figures alone are ~30, so the new figure shows
    ~40 % sooner (the toy page: 0.50 -> 0.30 s, tests/pages/test_browser_toy_latency.py). The run
    of the page after it hands the figures the same specs, which the browser does not draw again
    (static/chart.js). In a run of the whole page this does nothing.

    ``when_drawn``: the key of a chart this fragment drew with ``report_drawn=True``
    (:func:`pcd.ui.chart.plotly_chart`): the page's run starts once the browser has drawn it (the
    chart reports it, at most ``chart.js``'s REPORT_MS after its figure arrived; :func:`hand_over`, called
    first in the fragment, starts it). Else the page's ~80 elements reach the browser while it is
    still applying the fragment's and compete with the figure for its main thread (the toy map drawn
    345 -> 264 and 372 -> 286 ms after the input, median of 10, two alternating pairs,
    ``python benchmarks/trace_toy_change.py``)."""
    if not fragment_rerun():
        st.session_state.pop(_WAITING, None)
        return
    if when_drawn is None:
        st.rerun(scope="app")
    st.session_state[_WAITING] = str(when_drawn)


def chart_drawn(key: str) -> None:
    """The chart ``key`` reports that the browser has drawn its figure (its ``drawn`` callback)."""
    st.session_state[_DRAWN] = str(key)


def hand_over() -> None:
    """Call first in a fragment that ends with ``rest_of_page_follows(when_drawn=...)``: once the chart
    the fragment's last run waits for has reported its draw, the whole page runs now (the rest of the
    page follows the figure)."""
    drawn = st.session_state.pop(_DRAWN, None)
    if drawn is not None and fragment_rerun() and st.session_state.get(_WAITING) == drawn:
        st.session_state.pop(_WAITING, None)
        st.rerun(scope="app")


def stop_page() -> None:
    """``st.stop()`` for code inside such a fragment: in the fragment's own rerun the whole page is
    run instead (it stops at the same place), so nothing under the fragment is left from the
    settings before."""
    rest_of_page_follows()
    st.stop()
