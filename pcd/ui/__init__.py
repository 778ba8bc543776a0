"""Shared Streamlit helpers: the one page set-up every page calls, URL-shareable settings,
friendly errors and downloads. Only presentation lives here -- no math.
"""
from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from pcd import _validate as V
from pcd.ui.table import CSS as _TABLE_CSS

APP_TITLE = "PCD Studio"
LOGO = Path(__file__).resolve().parents[2] / "assets" / "logo.svg"
# the browser tab's icon, served by the app itself (a ":material/...:" page icon is fetched from
# Google's font CDN by the browser: no icon offline, and a request to a third party)
FAVICON = LOGO.parent / "favicon.svg"

_CSS = """
<style>
  .block-container {padding-top: 2.2rem; max-width: 1250px;}
  .pcd-claim {background:#f6f8fa;border-left:4px solid #d62728;padding:.5rem .8rem;border-radius:4px;
              font-size:0.93rem;margin:.3rem 0 .8rem 0;}
  .pcd-note {color:#57606a;font-size:0.9rem;}
  /* one layout from laptop to projector: metrics shrink instead of being cut to "1…" */
  [data-testid="stMetricValue"] {font-size: clamp(1.15rem, 2.3vw, 2.1rem);}
  [data-testid="stMetricLabel"] p {white-space: normal !important;}
  .katex-display {overflow-x: auto; overflow-y: hidden;}
  .st-key-pcd_menu a span, .st-key-pcd_menu a div, .st-key-pcd_menu a p {
      white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
      line-height: 1.25; min-width: 0;}
  .st-key-pcd_menu a > span {flex-shrink: 1;}
  /* a widget's label wraps instead of ending in "…" (the toy page's "gradient i…" toggle in presenter mode) */
  [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"],
  [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"] p {
      white-space: normal !important; overflow: visible !important; text-overflow: clip !important;}
  /* a multiselect's chips wrap onto more lines instead of scrolling out of sight under a fade
     (the toy page's seven methods at 1280 px showed "PCD, Weighted sum, MG…") */
  [data-testid="stMultiSelectTagsContainer"] {overflow: visible !important; mask-image: none !important;
                                              -webkit-mask-image: none !important; flex-wrap: wrap !important;}
  [data-testid="stMultiSelectTagsContainer"] > span[role="group"] {flex-wrap: wrap !important; row-gap: .25rem;}
  [data-testid="stMultiSelect"] .react-aria-ComboBox > div[role="group"] {height: auto !important;
                                                                         max-height: none !important;}
  [data-testid="stMultiSelect"] [data-testid="stMultiSelectTagsContainer"] {height: auto !important;
                                                                           padding: 3px 0; row-gap: .25rem;}
  /* a segmented control (the lesson's step pills) wraps instead of hiding its last options */
  [data-testid="stButtonGroup"] > div {flex-wrap: wrap;}
  /* settings_panel(): one place for a page's settings, a compact box above the figure */
  [class*="st-key-pcd_settings_"] {gap: .35rem !important; padding: .55rem .8rem .2rem .8rem !important;}
  [class*="st-key-pcd_settings_"] [data-testid="stWidgetLabel"] p {font-size: .88rem;}
  /* a settings row of columns wraps instead of squeezing a label into "optimiz-er" (800 px) */
  [class*="st-key-pcd_settings_"] [data-testid="stHorizontalBlock"] {flex-wrap: wrap; row-gap: .3rem;}
  [class*="st-key-pcd_settings_"] [data-testid="stColumn"] {min-width: 7rem; flex-grow: 1 !important;}
  [class*="st-key-pcd_flow_"] {row-gap: .3rem !important;}
  [class*="st-key-pcd_flow_"] > div {flex: 1 1 8rem !important; min-width: 7rem !important;
                                     width: auto !important;}
  [class*="st-key-pcd_flow_"] > div:has(textarea), [class*="st-key-pcd_flow_"] > div:has(input[type="text"]) {
      flex-basis: 16rem !important;}
  /* the methods list takes the row's spare width (its chips wrap only when they must) */
  [class*="st-key-pcd_flow_"] > div:has(div[data-testid="stMultiSelect"] input[type="text"]) {
      flex: 3 1 16em !important; min-width: min(100%, 20em) !important;}  /* (more specific than the text-input rule) */
  /* a container keyed pcd_row_<name> inside a flow panel takes a whole row (the toy page's hyper-parameters) */
  [class*="st-key-pcd_flow_"][class*="st-key-pcd_flow_"] > div:has(> [class*="st-key-pcd_row_"]) {
      flex: 1 1 100% !important; flex-basis: 100% !important; width: 100% !important;}  /* (beats the input rules) */
  [class*="st-key-pcd_flow_"] [data-testid="stRadio"] [role="radiogroup"] {column-gap: .5rem; row-gap: 0;}
  [class*="st-key-pcd_flow_"] [data-testid="stRadio"] label {margin-right: 0;}
  /* a row holding a figure wraps before the figure's column gets narrower than ~24rem (the tau
     dial's two panels at 800 px: one under the other instead of two squeezed plots) */
  [data-testid="stMain"] [data-testid="stHorizontalBlock"]:has([data-testid="stPlotlyChart"], .pcd-chart) {
      flex-wrap: wrap;}
  [data-testid="stMain"] [data-testid="stColumn"]:has([data-testid="stPlotlyChart"], .pcd-chart) {
      min-width: min(100%, 24rem);}
  %TABLE%
  @media (max-width: 1100px) {
    section[data-testid="stSidebar"] {width: 210px !important; min-width: 210px !important;}
    .katex-display {font-size: 0.9em;}
  }
  /* a short screen (a 1280 x 720 projector, a laptop): a smaller title, so more of the figure
     under the settings is in the first view */
  @media (max-height: 820px) {
    .block-container {padding-top: 1.4rem;}
    [data-testid="stMain"] h1 {font-size: 2.1rem; padding: .6rem 0 .4rem 0;}
    .katex-display {margin: .4em 0;}
  }
</style>
""".replace("%TABLE%", _TABLE_CSS)


# Presenter mode (a projector at 1280 x 720): large type, full-width figures (a column holding a
# figure takes the whole row and comes first; its controls wrap below), every paragraph folded to
# one line (hover unfolds it). Pure CSS over Streamlit's own elements, so every
# page gets it from setup_page without any change of its own.
_PRESENTER_CSS = """
<style>
  html {font-size: 19px;}
  .block-container {max-width: 100% !important; padding: 1.2rem 1.6rem 2rem 1.6rem !important;}
  h1 {font-size: 1.7rem !important; padding: 0 0 .1rem 0 !important;}
  h3 {padding: .2rem 0 .2rem 0 !important;}
  .block-container {padding-top: 3.4rem !important;}
  [data-testid="stMain"] [data-testid="stMarkdown"] p,
  [data-testid="stMain"] [data-testid="stCaptionContainer"],
  [data-testid="stMain"] .pcd-claim {
      white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}
  [data-testid="stMain"] [data-testid="stMarkdown"] p:hover,
  [data-testid="stMain"] [data-testid="stCaptionContainer"]:hover,
  [data-testid="stMain"] .pcd-claim:hover {white-space: normal;}
  [data-testid="stMain"] [data-testid="stHorizontalBlock"] {flex-wrap: wrap;}
  [data-testid="stMain"] [data-testid="stColumn"]:has([data-testid="stPlotlyChart"], .pcd-chart) {
      flex: 1 1 100% !important; width: 100% !important; min-width: 100% !important; order: -1;}
  .pcd-present-badge {color:#cf222e; font-weight:600;}
</style>
"""
PRESENT_PARAM = "present"
_PRESENT_KEY = "pcd_present"          # the toggle's widget key (one per page run)
_PRESENT_SAVED = "_pcd_present_saved"  # survives page switches (widget state does not, reliably)


def presenter_mode() -> bool:
    """Whether presenter mode is on for this session (set by the toggle :func:`setup_page` draws)."""
    return bool(st.session_state.get(_PRESENT_SAVED, False))


def _presenter_toggle() -> bool:
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


def page_link(path: str, label: str, query_params: dict[str, Any] | None = None,
              icon: str = ":material/open_in_new:") -> None:
    """A link to another page of the app (``"views/02_Toy_landscapes.py"``) opening it with
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


@functools.cache
def plotly_chunk() -> str | None:
    """File name of the Streamlit frontend's Plotly.js chunk (``static/js/PlotlyChart.<hash>.js``,
    ~4.7 MB), None unless the installed Streamlit has exactly one."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


# The browser loads Plotly.js only when the first chart arrives, then spends CPU evaluating it before
# it draws anything. Loading it as soon as the page starts overlaps that with the server's run.
# Studio charts (pcd.ui.chart) use the basic bundle; pages that draw ``st.plotly_chart`` figures
# (heatmaps, contours: pages 06-09) import Streamlit's own chunk too (same URL as the frontend's own
# import, so the frontend gets the module already evaluated).
_PRELOAD_JS = """<script>(() => {{
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  const url = new URL({name}, main ? main.src : new URL('static/js/', document.baseURI)).href;
  import(url).catch(() => {{}});
}})();</script>"""

_preloaded = threading.local()  # set by preload_plotly in the router for this run; setup_page then skips it


def preload_plotly(now: bool = True, full: bool = False) -> None:
    """Let the browser fetch and evaluate the charts' Plotly.js while the page runs: the studio
    charts' basic bundle (:mod:`pcd.ui.chart`), or with ``full=True`` (a page whose figures are
    ``st.plotly_chart``'s) Streamlit's full chunk, the basic bundle then once the page is idle.
    ``now=False``: only once the page is idle (a page without charts whose visitor may open one next).

    The router (``app.py``) calls it before anything else of a run, ~0.15 s before the page's own
    first element; :func:`setup_page` then does not emit it a second time (a page run on its own,
    e.g. under AppTest, still gets it from :func:`setup_page`). One flag per script thread: a
    session's reruns run one after another on its thread."""
    from pcd.ui import chart

    _preloaded.done = True
    name = plotly_chunk() if full else None
    if name is not None:
        st.html(_PRELOAD_JS.format(name=json.dumps(name)), unsafe_allow_javascript=True)
    chart.preload(now and name is None)


def setup_page(title: str, icon: str = ":material/insights:", intro: str | None = None,
               presenter_title: bool = True, charts: bool = True, full_plotly: bool = False) -> None:
    """Common page set-up: page config, styling, title, the presenter-mode toggle and an optional
    plain-words intro. ``presenter_title=False``: leave the page title out in presenter mode (a page
    whose own headline is the title, e.g. the lesson's step). ``charts=False``: a page without
    Plotly charts (Plotly.js is then preloaded only once the page is idle, see :func:`preload_plotly`).
    ``full_plotly=True``: a page that draws ``st.plotly_chart`` figures (trace types beyond the basic
    bundle, see :mod:`pcd.ui.chart`): Streamlit's full Plotly.js is imported at once (the router
    reads the flag from the page registry, :data:`pcd.studio.registry.PAGES`)."""
    saved = st.session_state.get(_PRESENT_SAVED)
    present_now = bool(url_default(PRESENT_PARAM, False) if saved is None else saved)
    try:  # on a projector the sidebar starts collapsed: the figures get the width
        st.set_page_config(page_title=f"{title} · {APP_TITLE}", page_icon=str(FAVICON) if FAVICON.is_file() else icon,
                           layout="wide",
                           initial_sidebar_state="collapsed" if present_now else "auto")
    except Exception:  # set_page_config may only be called once per run (e.g. under AppTest)
        pass
    st.markdown(_CSS, unsafe_allow_html=True)
    if not getattr(_preloaded, "done", False):  # else the router has emitted it for this run
        preload_plotly(now=charts, full=full_plotly)
    _preloaded.done = False
    if LOGO.is_file():
        st.logo(str(LOGO), size="large")
    with st.sidebar:
        present = _presenter_toggle()
    if present:
        st.markdown(_PRESENTER_CSS, unsafe_allow_html=True)
    hidden = hidden_parts()
    if hidden:
        st.markdown(hide_css(hidden), unsafe_allow_html=True)
    if (presenter_title or not present) and "title" not in hidden:
        st.title(title)
    if intro and "intro" not in hidden:
        st.markdown(intro)


# ---- embeds -------------------------------------------------------------------------------------
#: ``?hide=`` words for whole parts of a page; any other entry names one widget by its key.
HIDE_PARTS = {
    "sidebar": '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], '
               '[data-testid="stExpandSidebarButton"]',  # the menu (Streamlit's ?embed=true keeps it)
    "title": None,  # not drawn at all
    "intro": None,
    "settings": '[class*="st-key-pcd_settings_"]',  # every settings panel (the widgets stay: URL state holds)
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
        _refused("hide", raw, exc)
        return []


def hide_css(names: Sequence[str]) -> str:
    """A style sheet hiding the named parts and widgets (they are still there: the page keeps their
    values, so an embedded view shows exactly the state its URL carries)."""
    sel = [css for n in names if (css := HIDE_PARTS.get(n))] + [f".st-key-{n}" for n in names if n not in HIDE_PARTS]
    return f"<style>{', '.join(sel)} {{display: none !important;}}</style>" if sel else ""


def settings_panel(key: str = "main", *, flow: bool = False) -> Any:
    """THE place of a page's settings, the same on every page: a compact bordered box directly
    under the page's (or tab's / section's) title and intro, above the figure it drives -- never the
    sidebar, which is collapsed in presenter mode and takes a quarter of an 800 px screen.

    Returns the box (a container). ``panel.columns(...)`` lays a row of settings out; with
    ``flow=True`` widgets written into it one after another (``with panel: ...``) flow into cells
    of ~13 rem that wrap (4-5 a row at 1440 px, 2 at 800 px). A setting that depends on a result can
    be added later with ``with panel:`` again; a container keyed ``pcd_row_<name>`` in it takes a whole
    row. ``key`` names the box (one per tab or section;
    the browser test finds settings by ``.st-key-pcd_settings_<key>``)."""
    box = st.container(border=True, key=f"pcd_settings_{key}")
    if flow:
        return box.container(horizontal=True, wrap=True, gap="small", key=f"pcd_flow_{key}")
    return box


def claim(paper: str, here: str | None = None, note: str | None = None) -> None:
    """Show a published figure next to the live one: ``paper: ..., here: ...``."""
    text = f"<b>paper:</b> {paper}"
    if here is not None:
        text += f" &nbsp;·&nbsp; <b>here:</b> {here}"
    if note:
        text += f"<br><span class='pcd-note'>{note}</span>"
    st.markdown(f"<div class='pcd-claim'>{text}</div>", unsafe_allow_html=True)


def param_widget(p: Any, key: str, value: Any = None, *, label: str | None = None, help_in_label: bool = False) -> Any:
    """THE widget for a method hyper-parameter (a :class:`pcd.methods.base.Param`): a checkbox, a
    select box or a number input bounded by the Param's range, starting at ``value`` (default: the
    Param's default). The help text goes to the tooltip, or after the name with ``help_in_label``."""
    cur = p.default if value is None else value
    name = p.name if label is None else label
    if help_in_label and p.help:
        name, tip = f"{name} — {p.help}", None
    else:
        tip = p.help or None
    if p.kind == "bool":
        return st.checkbox(name, value=bool(cur), key=key, help=tip)
    if p.kind == "choice":
        return st.selectbox(name, list(p.choices), index=list(p.choices).index(cur), key=key, help=tip)
    if p.kind == "int":
        return int(st.number_input(name, value=int(cur), step=1, key=key, help=tip,
                                   min_value=int(p.low) if p.low is not None else None,
                                   max_value=int(p.high) if p.high is not None else None))
    return float(st.number_input(name, value=float(cur), key=key, format="%g", help=tip,
                                 min_value=float(p.low) if p.low is not None else None,
                                 max_value=float(p.high) if p.high is not None else None))


def method_picker(label: str, options: Sequence[str], *, key: str, default: Sequence[str] | None = None,
                  container: Any = None, help: str | None = None) -> list[str]:
    """THE method multiselect of every page: the options grouped by family (hierarchical · gradient
    aggregation · loss weighting · constrained, :func:`pcd.viz.theme.by_family`), each shown with its
    family's glyph (the marker of its figures) and display name; the tooltip lists the families.
    ``default`` None leaves the widget to its session state (a page that sets it itself)."""
    from pcd.viz import theme

    opts = theme.by_family(options)
    tip = theme.family_legend(opts) + (f"  \n\n{help}" if help else "")
    kw: dict[str, Any] = {} if default is None else {"default": list(default)}
    return list((container or st).multiselect(label, opts, format_func=theme.method_option_label, key=key,
                                              help=tip, **kw))


def show_error(exc: BaseException | str) -> None:
    """A friendly error box (the message says what is wrong and what is allowed)."""
    msg = str(exc) if str(exc) else exc.__class__.__name__
    st.error(msg, icon=":material/error:")


# ---- settings in the URL ---------------------------------------------------------------------

_REFUSED = "_pcd_url_refused"  # (key, raw) pairs already reported in this session


def _refused(key: str, raw: str, exc: ValueError) -> None:
    """Say once per session that a shared link's value was replaced by the default."""
    seen = st.session_state.setdefault(_REFUSED, set())
    if (key, raw) not in seen:
        seen.add((key, raw))
        st.toast(f"Link setting ignored, default used: {exc}", icon=":material/link_off:")


def url_default(key: str, default: Any, allowed: Sequence[Any] | None = None,
                low: float | None = None, high: float | None = None) -> Any:
    """The value of query parameter ``key`` as ``default``'s type, checked by
    :func:`pcd._validate.query_value` (range ``[low, high]``, members of ``allowed``), else ``default``.

    A malformed, non-finite, out-of-range or unknown value falls back to ``default`` (a toast says
    so, once) rather than crash the widget: a shared link must always open.
    """
    raw = st.query_params.get(key)
    if raw is None:
        return default
    try:
        return V.query_value(raw, default, key, allowed=allowed, low=low, high=high)
    except ValueError as exc:
        _refused(key, raw, exc)
        return default


def url_json(key: str, default: Any = None) -> Any:
    """Query parameter ``key`` as strict JSON (:func:`pcd._validate.query_json`: size, nesting and
    number limits), else ``default``: a hostile value never reaches the page."""
    raw = st.query_params.get(key)
    if raw is None:
        return default
    try:
        return V.query_json(raw, key)
    except ValueError as exc:
        _refused(key, raw, exc)
        return default


def url_sync(**values: Any) -> None:
    """Write the current settings into the URL so the view can be shared and reopened."""
    for key, value in values.items():
        if isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            text = "1" if value else "0"
        else:
            text = str(value)
        if st.query_params.get(key) != text:
            st.query_params[key] = text


# ---- downloads --------------------------------------------------------------------------------

def _csv_bytes(df: Any, settings: dict | None) -> bytes:
    from pcd.viz.stamp import table_with_settings

    return table_with_settings(df, settings).to_csv(index=False).encode("utf-8")


def download_csv(df: Any, filename: str, label: str = "Download CSV", key: str | None = None,
                 settings: dict | None = None) -> None:
    """The table as CSV; ``settings`` (what produced it) become constant columns, plus the version.
    The file is written when it is asked for (a click), not on every rerun of the page."""
    st.download_button(label, lambda: _csv_bytes(df, settings), file_name=filename, mime="text/csv",
                       on_click="ignore", key=key or f"csv-{filename}")


def download_figure(fig: Any, filename: str, label: str = "Download figure (HTML)", key: str | None = None,
                    settings: dict | None = None) -> None:
    """The figure as a standalone HTML file (Plotly bundled, works offline), headed by its settings.

    ``fig``: a figure, or a function returning one (built only when the file is asked for). The
    HTML (~4 MB with Plotly bundled) is made on the click, not on every rerun of the page.
    """
    from pcd.viz.stamp import figure_html

    def _html() -> bytes:
        return figure_html(fig() if callable(fig) else fig, settings).encode("utf-8")

    st.download_button(label, _html, file_name=filename, mime="text/html", on_click="ignore",
                       key=key or f"html-{filename}")


def png_export(fig: Any, filename: str, key: str, label: str = "Figure (PNG)") -> None:
    """A toggle offering the figure as a static PNG (rendered offline by kaleido + Chromium).

    Off by default: a static render takes a few seconds. Degrades to a note when no exporter works.
    ``fig`` may be a function returning the figure (built only when the toggle is on).
    """
    from pcd.viz.theme import to_png_bytes

    if st.toggle("PNG export", False, key=f"{key}-toggle"):
        png = to_png_bytes(fig() if callable(fig) else fig)
        if png:
            st.download_button(label, png, file_name=filename, mime="image/png", key=f"{key}-dl")
        else:
            st.caption("PNG export needs the optional `kaleido` package and a Chromium/Chrome browser; "
                       "the HTML download works everywhere.")


def download_row(fig: Any, stem: str, key: str, table: Any = None, settings: dict | None = None) -> None:
    """The standard downloads under a figure: table as CSV (when given), figure as HTML and PNG;
    CSV and HTML carry ``settings`` (problem, methods, τ, optimizer, lr, steps, ...) and the version."""
    cols = st.columns(3)
    if table is not None:
        with cols[0]:
            download_csv(table, f"{stem}.csv", key=f"{key}_csv", settings=settings)
    with cols[1]:
        download_figure(fig, f"{stem}.html", key=f"{key}_html", settings=settings)
    with cols[2]:
        png_export(fig, f"{stem}.png", key=f"{key}_png")


def download_gif(build: Callable[[dict], bytes], filename: str, label: str = "Animation (GIF)",
                 key: str | None = None, settings: dict | None = None) -> None:
    """An animation as a GIF, built only when the button is pressed: ``build(settings)`` returns
    the bytes; the settings go into the picture (its caption strip, :mod:`pcd.viz.export`)."""
    st.download_button(label, lambda: build(dict(settings or {})), file_name=filename, mime="image/gif",
                       key=key or f"gif-{filename}")


def download_json(data: Any, filename: str, label: str = "Download JSON", key: str | None = None) -> None:
    st.download_button(label, json.dumps(data, indent=2, default=float).encode("utf-8"),
                       file_name=filename, mime="application/json", key=key or f"json-{filename}")
