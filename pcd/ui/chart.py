"""Plotly figures on the studio pages, drawn with Plotly.js's *basic* bundle (presentation only).

Why not ``st.plotly_chart``: Streamlit's chart loads the full Plotly.js (a 4.7 MB chunk with every
trace type, maps and WebGL), and evaluating it costs the browser ~1 s of CPU on the 2-core dev
machine before the first figure can be drawn -- the largest single part of a page's first load.
The studio's pages 00-05 draw only scatter/line figures (plus layout images, shapes, annotations
and animation frames), which the partial bundle ``plotly.js-basic`` (scatter, bar, pie; 1.2 MB,
~0.3 s to evaluate; same Plotly.js version) covers. :func:`plotly_chart` draws a figure with it in
a small Streamlit component (``st.components.v2``, no iframe, no build step):

* width = the column's width (as ``st.plotly_chart``), height = ``layout.height`` (450 if unset),
  reserved before Plotly.js arrives (no layout shift); a chart below the window is first drawn when
  it scrolls near or the browser is idle (the charts in view come first); redrawn with ``Plotly.react`` when the
  figure changes (zoom and legend clicks kept where the figure allows), frames replaced; the first
  draw leaves the animation frames out and adds them once the browser is idle (the figure shows sooner);
* ``click=True``: a click on a data point (``click="anywhere"``: anywhere in the plot area) is sent back as ``{"selection": {"points": [{x, y,
  curve_number, point_number, point_index, customdata}], ...}}`` -- the shape of
  ``st.plotly_chart(on_select="rerun", selection_mode="points")``'s event, read the same way
  (``st.session_state[key]["selection"]["points"]``), one rerun per click;
* a full-screen button in the toolbar (as ``st.plotly_chart``'s): the figure takes the screen, Esc
  gives it its column back;
* a figure with a box plot, a heatmap or a contour (no WebGL) is drawn with the *cartesian* bundle
  (``static/plotly-cartesian.min.js``, 1.5 MB, same version), loaded only when such a figure is on
  the page (:func:`bundle_for` picks the smallest bundle); a figure with another trace type
  (WebGL, tables, maps) is handed to ``st.plotly_chart`` unchanged (same look: ``theme=None``).

The bundle is served by Streamlit's static file serving (``static/plotly-basic.min.js`` next to
``app.py``; ``server.enableStaticServing = true`` in ``.streamlit/config.toml``). When it cannot be
fetched (static serving off, file missing) the component falls back to Streamlit's own full
Plotly.js chunk, so a figure is always drawn. The instance that drew a chart is kept on its graph
div (``gd._pcdPlotly``): the lecturer controls (:mod:`pcd.ui.controls`) animate it with that one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

# plotly.js-basic-dist-min 4.1.1 (MIT; Python plotly 6.x / Streamlit 1.67 ship Plotly.js 4.1.x)
BUNDLE = Path(__file__).resolve().parents[2] / "static" / "plotly-basic.min.js"
BUNDLE_URL = "app/static/plotly-basic.min.js"  # relative to the app's base URL
BASIC_TRACES = frozenset({"scatter", "bar", "pie"})  # the trace types plotly.js-basic registers
# plotly.js-cartesian-dist-min 4.1.1 (MIT, 1.5 MB): for a figure with a box plot or a heatmap
# (~0.3 s more than the basic bundle to load and evaluate, ~0.6 s less than Streamlit's chunk)
CARTESIAN = BUNDLE.parent / "plotly-cartesian.min.js"
CARTESIAN_URL = "app/static/plotly-cartesian.min.js"
CARTESIAN_TRACES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                              "image", "pie", "scatter", "scatterternary", "violin"})
DEFAULT_HEIGHT = 450  # px, st.plotly_chart's default when the layout has no height

# One loader per browser page (the router's preload and every chart share it): fetch and evaluate
# the bundle once, keep it as window.__pcdPlotly and give window.Plotly back to whoever had it
# (Streamlit's own charts on other pages use their module's instance, the controls use the gd's).
LOADER_JS = """
window.__pcdLoadPlotly = window.__pcdLoadPlotly || function (src, chunk) {
  const loads = window.__pcdPlotlyLoads = window.__pcdPlotlyLoads || {};  // one per bundle
  if (loads[src || '']) return loads[src || ''];
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  const base = main ? main.src.replace(/static\\/js\\/index\\.[^/]*$/, '') : new URL('./', document.baseURI).href;
  const full = () => chunk ? import(new URL('static/js/' + chunk, base).href).then(() => window.Plotly)
                           : Promise.reject(new Error('Plotly.js is not available'));
  return loads[src || ''] = new Promise((resolve, reject) => {
    if (!src) { full().then(resolve, reject); return; }
    const prev = window.Plotly;
    const s = document.createElement('script');
    s.src = new URL(src, base).href;
    s.async = true;
    s.onload = () => {
      const mine = window.Plotly;
      if (prev) window.Plotly = prev;
      if (!window.__pcdPlotly) window.__pcdPlotly = mine;  // the first bundle the page loaded
      if (mine && mine.newPlot) resolve(mine); else full().then(resolve, reject);
    };
    s.onerror = () => { full().then(resolve, reject); };
    document.head.appendChild(s);
  });
};
"""

_CHART_JS = "export default function(component) {\n" + LOADER_JS + """
  const FULLSCREEN_ICON = {width: 1000, height: 1000,
    path: 'M0 0h400v110H110v290H0zM600 0h400v400H890V110H600zM0 600h110v290h290v110H0zM890 600h110v400H600V890h290z'};
  const { data, parentElement, setStateValue } = component;
  let box = parentElement.querySelector('.pcd-chart');
  if (!box) {
    box = document.createElement('div');
    box.className = 'pcd-chart';
    parentElement.appendChild(box);
  }
  box.style.height = data.height + 'px';
  const s = box.__pcd || (box.__pcd = {gd: null, spec: null, token: 0});
  s.data = data;
  s.setStateValue = setStateValue;
  if (s.spec === data.spec) return;
  s.spec = data.spec;
  const token = ++s.token;
  window.__pcdLoadPlotly(data.src, data.chunk)
    .then(P => (s.gd && s.gd._fullLayout) ? P : whenNeeded(box).then(() => P))
    .then(P => { if (token === s.token) return draw(P, box, s, token); })
    .catch(err => {
      box.dataset.error = String(err);
      let note = box.querySelector('.pcd-chart-error');
      if (!note) { note = document.createElement('div'); note.className = 'pcd-chart-error'; box.prepend(note); }
      note.textContent = 'The figure could not be drawn: ' + err;
    });

  // A chart first drawn below the window waits until it scrolls near, or until the browser is
  // idle after the charts in view are drawn: they come first (a cold draw costs ~0.2-0.6 s each).
  function whenNeeded(box) {
    const near = () => box.getBoundingClientRect().top < window.innerHeight + 200;
    if (near()) return Promise.resolve();
    return new Promise(resolve => {
      let done = false;
      const go = () => { if (!done) { done = true; io.disconnect(); resolve(); } };
      const io = new IntersectionObserver(es => { if (es.some(e => e.isIntersecting)) go(); },
                                          {rootMargin: '200px 0px'});
      io.observe(box);
      const idle = window.requestIdleCallback || (f => setTimeout(f, 300));
      setTimeout(() => idle(go, {timeout: 2000}), 400);
    });
  }

  function width() { return Math.max(150, Math.round(box.getBoundingClientRect().width || 700)); }
  function height() { return document.fullscreenElement === box ? Math.round(box.clientHeight) : s.data.height; }
  function draw(P, box, s, token) {
    const fig = JSON.parse(s.data.spec);
    const layout = fig.layout || {};
    layout.width = width();
    layout.height = height();
    if (s.data.click === true) {
      if (!layout.clickmode) layout.clickmode = 'event';
      if (!layout.hovermode) layout.hovermode = 'closest';
    }
    const config = Object.assign({displaylogo: false, showSendToCloud: false}, s.data.config || {});
    const remove = new Set(config.modeBarButtonsToRemove || []);
    ['lasso2d', 'select2d', 'sendDataToCloud'].forEach(b => remove.add(b));
    config.modeBarButtonsToRemove = Array.from(remove);
    // Streamlit's charts have a full-screen button: so do these (a lecturer's projector)
    // one button object per chart: Plotly.react compares the config, and a new click function on
    // every draw would read as a changed config -- then react redraws with newPlot and DROPS the
    // animation frames it was given (plotly.js 4.1)
    s.fsButton = s.fsButton || {name: 'pcd-fullscreen', title: 'Full screen (Esc leaves)', icon: FULLSCREEN_ICON,
      click: () => document.fullscreenElement ? document.exitFullscreen() : (box.requestFullscreen && box.requestFullscreen())};
    config.modeBarButtonsToAdd = (config.modeBarButtonsToAdd || []).concat([s.fsButton]);
    const frames = fig.frames || [];
    let gd = s.gd;
    let done;
    if (!gd || !gd._fullLayout) {
      if (!gd) { gd = document.createElement('div'); gd.style.width = '100%'; box.appendChild(gd); s.gd = gd; }
      gd._pcdPlotly = P;
      // the first draw without the animation frames (the toy map's are 100 frames, ~60 % of its
      // spec): they are added right after, when the browser is idle, so the figure shows sooner
      done = P.newPlot(gd, {data: fig.data || [], layout, config}).then(() => bind(P, gd, s))
        .then(() => frames.length && new Promise(res => (window.requestIdleCallback || setTimeout)(
          () => (token === s.token ? P.addFrames(gd, frames) : Promise.resolve()).then(res, res), {timeout: 300})));
    } else {
      // react replaces the frames too (given a list; deleteFrames sorts its indices as strings);
      // should it have redrawn from scratch all the same (a config that differs), they are added back
      done = P.react(gd, {data: fig.data || [], layout, frames, config}).then(() =>
        (token === s.token && frames.length && nFrames(gd) === 0) ? P.addFrames(gd, frames) : null);
    }
    return done.then(() => { if (token === s.token) box.dataset.drawn = String(token); });
  }
  function nFrames(gd) { return ((gd._transitionData || {})._frames || []).length; }
  function bind(P, gd, s) {
    // click="anywhere": the plot area's point under a click (not a drag), in the main axes' units
    let down = null;
    gd.addEventListener('mousedown', e => {  // not on the toolbar, the legend or a label
      const on = e.target && e.target.closest && e.target.closest('.modebar, .legend, .annotation');
      down = e.button === 0 && !on ? [e.clientX, e.clientY] : null;
    }, true);
    const onUp = e => {
      if (!gd.isConnected) { document.removeEventListener('mouseup', onUp, true); return; }  // the chart is gone
      const at = down;
      down = null;
      if (s.data.click !== 'anywhere' || !at || Math.hypot(e.clientX - at[0], e.clientY - at[1]) > 4) return;
      const fl = gd._fullLayout, xa = fl && fl.xaxis, ya = fl && fl.yaxis;
      if (!xa || !ya || !xa.p2l) return;
      const r = gd.getBoundingClientRect();
      const px = at[0] - r.left - xa._offset, py = at[1] - r.top - ya._offset;
      if (px < 0 || py < 0 || px > xa._length || py > ya._length) return;
      const un = (ax, v) => ax.type === 'log' ? Math.pow(10, v) : v;
      s.setStateValue('selection', {points: [{x: un(xa, xa.p2l(px)), y: un(ya, ya.p2l(py)), curve_number: null,
        point_number: null, point_index: null, customdata: null}], point_indices: [], box: [], lasso: []});
    };
    document.addEventListener('mouseup', onUp, true);
    gd.on('plotly_click', ev => {
      if (!s.data.click || s.data.click === 'anywhere') return;
      const pts = (ev && ev.points || []).map(p => ({x: p.x, y: p.y, curve_number: p.curveNumber,
        point_number: p.pointNumber, point_index: p.pointIndex,
        customdata: p.customdata == null ? null : (ArrayBuffer.isView(p.customdata) ? Array.from(p.customdata)
                                                                                : p.customdata)}));
      s.setStateValue('selection', {points: pts, point_indices: pts.map(p => p.point_index), box: [], lasso: []});
    });
    box.addEventListener('fullscreenchange', () => {  // the figure takes the screen, then its column back
      if (gd._fullLayout) P.relayout(gd, {width: width(), height: height()});
    });
    let pending = false;
    new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        const w = width();
        if (gd._fullLayout && Math.abs(gd._fullLayout.width - w) > 1) P.relayout(gd, {width: w});
      });
    }).observe(box);
  }
}
"""

_CSS = ".pcd-chart {width: 100%; position: relative;} .pcd-chart:fullscreen {background: #fff;}"

_PRELOAD_HTML = """<script>(() => {{
{loader}
  const go = () => window.__pcdLoadPlotly({src}, {chunk}).catch(() => {{}});
  {start}
}})();</script>"""

_component: list[Any] = []


def _chart_component() -> Any:
    if not _component:
        _component.append(st.components.v2.component("pcd_plotly", css=_CSS, js=_CHART_JS, isolate_styles=False))
    return _component[0]


def preload(now: bool = True) -> None:
    """Start loading the charts' Plotly.js in the browser (``now=False``: once the page is idle).
    Renders nothing; see :func:`pcd.ui.preload_plotly`."""
    from pcd.ui import plotly_chunk

    src, chunk = bundle_src(), plotly_chunk()
    if src is None and chunk is None:
        return
    # st.html, not a component: measured ~0.5 s earlier (the component chunk mounts later)
    start = "go();" if now else "setTimeout(() => (window.requestIdleCallback || setTimeout)(go), 2500);"
    st.html(_PRELOAD_HTML.format(loader=LOADER_JS, src=json.dumps(src), chunk=json.dumps(chunk), start=start),
            unsafe_allow_javascript=True)


def _types(fig: Any) -> set[str]:
    return {getattr(t, "type", None) or "scatter" for t in fig.data}


def bundle_for(fig: Any) -> str | None:
    """The smallest bundle that draws every trace of ``fig``: ``"basic"``, ``"cartesian"``, or
    None (WebGL, tables, maps...: ``st.plotly_chart`` with Streamlit's full Plotly.js)."""
    types = _types(fig)
    return "basic" if types <= BASIC_TRACES else "cartesian" if types <= CARTESIAN_TRACES else None


def bundle_src(bundle: str = "basic") -> str | None:
    """URL of a bundle (``"basic"`` or ``"cartesian"``) for the browser, None when Streamlit will not
    serve it (static serving off or the file missing): the charts then use Streamlit's full Plotly.js."""
    path, url = (BUNDLE, BUNDLE_URL) if bundle == "basic" else (CARTESIAN, CARTESIAN_URL)
    try:
        serving = bool(st.get_option("server.enableStaticServing"))
    except Exception:
        serving = False
    return url if serving and path.is_file() else None


def plotly_chart(fig: Any, key: str, *, click: bool | str = False, config: dict | None = None) -> None:
    """Draw the Plotly figure ``fig`` (see the module docstring). ``key``: the widget key (the
    chart's container gets the class ``st-key-<key>``). ``click=True``: a click on a data point is
    sent back; ``click="anywhere"``: a click anywhere in the plot area (not a drag), as one point
    ``{x, y}`` in the main axes' units, the other fields None -- in both cases in
    ``st.session_state[key]["selection"]["points"]``. ``config``: Plotly's config (``displaylogo`` off)."""
    if click not in (False, True, "anywhere"):
        raise ValueError(f"click must be False, True or 'anywhere', got {click!r}")
    from pcd.ui import plotly_chunk

    config = {"displaylogo": False, **(config or {})}
    bundle = bundle_for(fig)
    if bundle is None:
        if click:
            st.plotly_chart(fig, theme=None, key=key, config=config, on_select="rerun", selection_mode="points")
        else:
            st.plotly_chart(fig, theme=None, key=key, config=config)
        return
    height = fig.layout.height
    height = int(height) if height is not None and height >= 10 else DEFAULT_HEIGHT
    spec = getattr(fig, "_pcd_spec", None)
    payload = {"spec": spec if isinstance(spec, str) else fig.to_json(), "height": height, "config": config, "click": click,
               "src": bundle_src(bundle), "chunk": plotly_chunk()}
    _chart_component()(data=payload, key=key, on_selection_change=lambda: None)

