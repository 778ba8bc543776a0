"""Lecturer controls for the Plotly figures of the pages (presentation only, no math).

Two small Streamlit components (``st.components.v2``: inline HTML/CSS/JS, no build step, no
iframe) that act on a chart already on the page (:func:`pcd.ui.chart.plotly_chart` or
``st.plotly_chart``), found by its widget key:

* :func:`frame_controls` -- reset / step back / play-pause / step forward, a speed control and the
  current step, driving the chart's own animation frames (``Plotly.animate``) in the browser, plus
  a cursor on a second chart (the loss plot) that follows the frame shown -- while playing,
  scrubbing the chart's slider or stepping. Keyboard: <- / -> step, Home resets.
* :func:`vector_drag` -- click or drag in a chart to move one of its vectors; the new tip is sent
  back to Python (one rerun when the mouse is released).

Both use the Plotly.js instance that drew the chart (``gd._pcdPlotly``, :mod:`pcd.ui.chart`; else
the one Streamlit loads for ``st.plotly_chart``, ``window.Plotly``) and the chart's own axes for
pixel -> data conversion; when it is not (yet) there, the buttons say so
instead of failing. Nothing runs on the server while stepping or playing.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

_PLAYER_HTML = """
<div class="pcd-player" role="toolbar" aria-label="animation controls">
  <button class="pcd-b" data-act="reset" title="back to the first frame (Home)">« Reset</button>
  <button class="pcd-b" data-act="back" title="one recorded step back (←)">◀ Step</button>
  <button class="pcd-b pcd-play" data-act="play" title="play / pause">▶ Play</button>
  <button class="pcd-b" data-act="fwd" title="one recorded step forward (→)">Step ▶</button>
  <span class="pcd-speed" role="group" aria-label="speed">speed
    <button class="pcd-s" data-speed="0.25">¼×</button><button class="pcd-s" data-speed="0.5">½×</button><button
    class="pcd-s" data-speed="1">1×</button><button class="pcd-s" data-speed="2">2×</button><button
    class="pcd-s" data-speed="4">4×</button></span>
  <span class="pcd-status">step —</span>
  <input class="pcd-scrub" type="range" min="0" max="0" value="0" step="1" aria-label="frame (recorded step)"
         title="drag to any recorded step">
</div>
"""

_PLAYER_CSS = """
.pcd-player {display:flex; flex-wrap:wrap; align-items:center; gap:.4rem; font-family:inherit;
             font-size:.95rem; margin:.1rem 0 .4rem 0;}
.pcd-b, .pcd-s {border:1px solid #d0d7de; background:#f6f8fa; color:#24292f; border-radius:6px;
                padding:.28rem .7rem; cursor:pointer; font-size:inherit; line-height:1.2;}
.pcd-b:hover, .pcd-s:hover {background:#eaeef2;}
.pcd-s {padding:.28rem .45rem; margin-left:.15rem;}
.pcd-s.on {background:#1f6feb; border-color:#1f6feb; color:white;}
.pcd-play {min-width:6.2rem; font-weight:600;}
.pcd-speed {margin-left:.6rem; color:#57606a;}
.pcd-status {margin-left:.8rem; color:#24292f; font-variant-numeric:tabular-nums; font-weight:600;}
.pcd-scrub {flex:1 1 100%; width:100%; margin:.2rem 0 0 0; accent-color:#1f6feb; cursor:pointer;}
"""

_PLAYER_JS = """
export default function(component) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.querySelector('.pcd-player');
  const status = root.querySelector('.pcd-status');
  const playBtn = root.querySelector('.pcd-play');
  const scrub = root.querySelector('.pcd-scrub');
  const names = data.frames || [];
  const cursor = data.cursor_x || [];
  let speed = 1, playing = false, cur = 0, boundGd = null, lastCursor = null, pending = null;
  const chart = () => document.querySelector('.st-key-' + data.target + ' .js-plotly-plot');
  const lossChart = () => data.loss ? document.querySelector('.st-key-' + data.loss + ' .js-plotly-plot') : null;
  // charts animated on the same frames (same names), following the one the controls drive
  const followers = () => (data.follow || []).map(k => document.querySelector('.st-key-' + k + ' .js-plotly-plot'))
    .filter(g => g && g._fullLayout && ((g._transitionData || {})._frames || []).length);
  function follow(i) {
    followers().forEach(g => {
      const Pg = g._pcdPlotly || P();
      const r = Pg.animate(g, [names[i]], {mode: 'immediate', frame: {duration: 0, redraw: false}, transition: {duration: 0}});
      if (r && r.catch) r.catch(() => {});
      const on = i === names.length - 1;  // its ending as drawn now (a new figure starts hidden)
      const now = (g.data || []).some(t => t.meta === 'end' && t.visible === true);
      if (now !== on) ending(Pg, g, on);
    });
  }
  const P = () => (boundGd && boundGd._pcdPlotly) || window.Plotly;  // the instance that drew the chart
  const label = i => 'step ' + names[i] + ' / ' + names[names.length - 1] + '  (frame ' + (i + 1) + ' of ' + names.length + ')';

  function setStatus(i) { status.textContent = names.length ? label(i) : 'no frames'; root.dataset.frame = String(i);
                          if (scrub && document.activeElement !== scrub) scrub.value = String(i); }
  scrub.max = String(Math.max(0, names.length - 1));
  // Streamlit runs this function again on every rerun, on the same elements, without calling the
  // cleanup it returned: the previous run's is called here (else its listeners stay, and Step ▶
  // moved two frames after one rerun)
  if (root.__pcdCleanup) root.__pcdCleanup();
  const life = new AbortController(), on = {signal: life.signal};
  scrub.addEventListener('input', () => go(parseInt(scrub.value, 10) || 0), on);
  function setPlaying(p) { playing = p; playBtn.textContent = p ? '❚❚ Pause' : '▶ Play'; root.dataset.playing = p ? '1' : '0'; }
  function moveCursor(i) {
    const lg = lossChart();
    if (!lg || !P() || !lg.layout || cursor[i] === undefined || lastCursor === cursor[i]) return;
    if (pending) { pending = i; return; }
    pending = i;
    requestAnimationFrame(() => {
      const j = pending; pending = null;
      const upd = {};
      (lg.layout.shapes || []).forEach((s, k) => {
        if (s.name === data.cursor_name) { upd['shapes[' + k + '].x0'] = cursor[j]; upd['shapes[' + k + '].x1'] = cursor[j]; }
      });
      if (Object.keys(upd).length) { lastCursor = cursor[j]; (lg._pcdPlotly || P()).relayout(lg, upd); }
    });
  }
  // the ending (end markers: traces with meta "end"; end labels: annotations named "end label",
  // pcd.viz.landscape.landscape_figure(reveal=True)) is shown at the last frame only
  let shown = null;
  function ending(Pg, g, on) {
    const anns = {}, tr = [];
    (g.data || []).forEach((t, k) => { if (t.meta === 'end') tr.push(k); });
    if (!tr.length) return;  // a figure that shows its ending throughout (no reveal): left as it is
    ((g.layout && g.layout.annotations) || []).forEach((a, k) => { if (a.name === 'end label') anns['annotations[' + k + '].visible'] = on; });
    Pg.restyle(g, {visible: on}, tr);
    if (Object.keys(anns).length) Pg.relayout(g, anns);
  }
  function showEnding(i) {
    const g = boundGd, on = i === names.length - 1;
    if (!g || !g._fullLayout || !P() || shown === on) return;
    shown = on;
    ending(P(), g, on);
  }
  function onFrame(ev) {
    const i = names.indexOf(String(ev && ev.name));
    if (i < 0) return;
    cur = i; setStatus(i); moveCursor(i); showEnding(i); follow(i);
  }
  const onDone = () => setPlaying(false);
  function bind() {
    const g = chart();
    if (!g || !g.on || g === boundGd) return;
    boundGd = g;
    g.on('plotly_animatingframe', onFrame);
    g.on('plotly_animated', onDone);
    const s = g._fullLayout && g._fullLayout.sliders && g._fullLayout.sliders[0];
    g.on('plotly_react', onReact);
    cur = s ? s.active : 0; lastCursor = null; shown = false; setStatus(cur); moveCursor(cur); showEnding(cur);
  }
  // a new figure from the server (Plotly.react) shows its first frame, its ending hidden
  function onReact() { if (playing) setPlaying(false); cur = 0; shown = false; lastCursor = null; setStatus(0); moveCursor(0); }
  // the page lays the figure out for the width it is shown at: report a change of width class
  let sentWidth = null;
  function reportWidth() {
    if (!data.width_classes || !setStateValue) return;
    const w = root.getBoundingClientRect().width || window.innerWidth;  // the page column's width
    let cls = data.width_classes[data.width_classes.length - 1][0];
    for (const [name, upTo] of data.width_classes) { if (upTo === null || w <= upTo) { cls = name; break; } }
    if (cls !== data.width && cls !== sentWidth) { sentWidth = cls; setStateValue('width', cls); }
  }
  let resizeTimer = null;
  function onResize() { clearTimeout(resizeTimer); resizeTimer = setTimeout(reportWidth, 250); }
  window.addEventListener('resize', onResize);
  const nFrames = () => ((boundGd && boundGd._transitionData || {})._frames || []).length;
  function ready() {
    bind();
    if (!P() || !boundGd) { status.textContent = 'waiting for the chart…'; return false; }
    if (!nFrames()) { status.textContent = 'waiting for the frames…'; return false; }  // added after the first draw
    return true;
  }
  // Plotly.animate rejects (with undefined) when it is interrupted or a frame is missing: never an
  // uncaught error in the page
  const animate = (...args) => { const r = P().animate(boundGd, ...args); if (r && r.catch) r.catch(() => {}); };
  function go(i) {
    if (!ready() || !names.length) return;
    i = Math.max(0, Math.min(names.length - 1, i));
    if (playing) pause();
    animate([names[i]], {mode: 'immediate', frame: {duration: 0, redraw: false}, transition: {duration: 0}});
    cur = i; setStatus(i); moveCursor(i); showEnding(i); follow(i);
  }
  function play() {
    if (!ready() || !names.length) return;
    if (cur >= names.length - 1) go(0);
    setPlaying(true);
    animate(null, {mode: 'immediate', fromcurrent: true, transition: {duration: 0},
                                frame: {duration: Math.max(1, Math.round(data.ms / speed)), redraw: false}});
  }
  function pause() {
    if (!ready()) return;
    setPlaying(false);
    animate([null], {mode: 'immediate', frame: {duration: 0, redraw: false}, transition: {duration: 0}});
  }
  root.addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    if (b.dataset.speed) {
      speed = parseFloat(b.dataset.speed);
      root.querySelectorAll('.pcd-s').forEach(x => x.classList.toggle('on', x === b));
      if (playing) { pause(); play(); }
      return;
    }
    const act = b.dataset.act;
    if (act === 'reset') go(0);
    else if (act === 'back') go(cur - 1);
    else if (act === 'fwd') go(cur + 1);
    else if (act === 'play') { playing ? pause() : play(); }
  }, on);
  root.querySelectorAll('.pcd-s').forEach(x => x.classList.toggle('on', parseFloat(x.dataset.speed) === 1));
  function onKey(e) {
    const t = e.target;
    if (!data.keys || e.altKey || e.ctrlKey || e.metaKey) return;
    if (t && (t.closest && (t.closest('input, textarea, select, [role=slider], [contenteditable=true]')))) return;
    if (!root.isConnected) return;
    if (e.key === 'ArrowRight') { go(cur + 1); e.preventDefault(); }
    else if (e.key === 'ArrowLeft') { go(cur - 1); e.preventDefault(); }
    else if (e.key === 'Home') { go(0); e.preventDefault(); }
  }
  document.addEventListener('keydown', onKey);
  setStatus(0);
  const timer = setInterval(bind, 400);
  bind();
  reportWidth();
  const cleanup = () => { clearInterval(timer); clearTimeout(resizeTimer); life.abort();
                 document.removeEventListener('keydown', onKey); window.removeEventListener('resize', onResize);
                 if (boundGd && boundGd.removeListener) { boundGd.removeListener('plotly_animatingframe', onFrame);
                                                          boundGd.removeListener('plotly_animated', onDone);
                                                          boundGd.removeListener('plotly_react', onReact); }
                 if (root.__pcdCleanup === cleanup) root.__pcdCleanup = null; };
  root.__pcdCleanup = cleanup;
  return cleanup;
}
"""

_DRAG_JS = """
export default function(component) {
  const { data, parentElement, setStateValue } = component;
  const hint = parentElement.querySelector('.pcd-drag-hint');
  if (hint && hint.__pcdCleanup) hint.__pcdCleanup();  // the previous run's listeners (see the player)
  let bound = null, drag = null;
  const chart = () => document.querySelector('.st-key-' + data.target + ' .js-plotly-plot');
  function toData(g, ev, clamp) {
    const fl = g._fullLayout, xa = fl && fl.xaxis, ya = fl && fl.yaxis;
    if (!xa || !ya) return null;
    const r = g.getBoundingClientRect();
    let px = ev.clientX - r.left - xa._offset, py = ev.clientY - r.top - ya._offset;
    const inside = px >= 0 && py >= 0 && px <= xa._length && py <= ya._length;
    if (!inside && !clamp) return null;
    px = Math.max(0, Math.min(xa._length, px)); py = Math.max(0, Math.min(ya._length, py));
    return [xa.p2l(px), ya.p2l(py)];
  }
  function nearest(pt) {
    let best = 0, bd = Infinity;
    (data.vectors || []).forEach((v, i) => { const d = Math.hypot(v.tip[0] - pt[0], v.tip[1] - pt[1]); if (d < bd) { bd = d; best = i; } });
    return best;
  }
  function preview(g, i, pt) {
    const v = data.vectors[i];
    const P = g._pcdPlotly || window.Plotly;  // the instance that drew the chart
    if (!P || v.trace === undefined || v.trace === null) return;
    P.restyle(g, {x: [[0, pt[0]]], y: [[0, pt[1]]]}, [v.trace]);
  }
  function down(ev) {
    if (ev.button !== 0) return;
    const g = chart(); const pt = g && toData(g, ev);
    if (!pt) return;
    drag = {i: nearest(pt), pt: pt};
    preview(g, drag.i, pt);
    ev.preventDefault(); ev.stopPropagation();
  }
  function move(ev) {
    if (!drag) return;
    const g = chart(); const pt = g && toData(g, ev, true);  // past the edge: the tip stays on it
    if (!pt) return;
    drag.pt = pt; preview(g, drag.i, pt);
    ev.preventDefault();
  }
  function up(ev) {
    if (!drag) return;
    const d = drag; drag = null;
    setStateValue('tip', {name: data.vectors[d.i].name, x: d.pt[0], y: d.pt[1], n: Date.now()});
  }
  function bind() {
    const g = chart();
    if (!g || g === bound) return;
    const layer = g.querySelector('.draglayer') || g;
    layer.addEventListener('mousedown', down, true);
    bound = g;
    if (hint) hint.dataset.bound = '1';
  }
  document.addEventListener('mousemove', move, true);
  document.addEventListener('mouseup', up, true);
  const timer = setInterval(bind, 400);
  bind();
  const cleanup = () => { clearInterval(timer); document.removeEventListener('mousemove', move, true);
                 document.removeEventListener('mouseup', up, true);
                 if (bound) { (bound.querySelector('.draglayer') || bound).removeEventListener('mousedown', down, true); }
                 if (hint && hint.__pcdCleanup === cleanup) hint.__pcdCleanup = null; };
  if (hint) hint.__pcdCleanup = cleanup;
  return cleanup;
}
"""

_TOP_JS = """
export default function(component) {
  const { data } = component;
  if (window.__pcdScrollToken === data.token) return;
  const first = window.__pcdScrollToken === undefined;
  window.__pcdScrollToken = data.token;
  if (first) return;  // a fresh page load is at the top already (and may be a deep link)
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  requestAnimationFrame(() => { if (main && main.scrollTo) main.scrollTo({top: 0}); window.scrollTo({top: 0}); });
}
"""

_components: dict[str, Any] = {}


def _component(name: str) -> Any:
    if name not in _components:
        if name == "player":
            _components[name] = st.components.v2.component("pcd_frame_controls", html=_PLAYER_HTML,
                                                           css=_PLAYER_CSS, js=_PLAYER_JS)
        elif name == "top":
            _components[name] = st.components.v2.component("pcd_scroll_to_top", js=_TOP_JS)
        else:
            _components[name] = st.components.v2.component(
                "pcd_vector_drag", html="<div class='pcd-drag-hint'></div>", js=_DRAG_JS)
    return _components[name]


def frame_controls(chart_key: str, frames: Sequence[Any], frame_ms: int = 45, loss_key: str | None = None,
                   cursor_x: Sequence[float] | None = None, cursor_name: str = "step cursor",
                   keyboard: bool = True, key: str | None = None,
                   width_classes: Sequence[tuple[str, float | None]] | None = None,
                   width: str | None = None, follow: Sequence[str] = ()) -> str | None:
    """Reset / step back / play-pause / step forward and a speed control (¼× … 4×) for the
    animated ``st.plotly_chart`` with widget key ``chart_key`` whose frames are named ``frames``
    (in order). ``loss_key`` + ``cursor_x`` (one x per frame): the shapes named ``cursor_name`` of
    that second chart follow the frame shown (see :func:`pcd.viz.teaching.with_step_cursor`).
    A range input under the buttons scrubs to any frame (the chart needs no slider of its own).
    ``follow``: widget keys of more charts animated on frames of the same names (e.g. the toy page's
    objective-space panel): each shows the frame the controls show, ending included. A figure built
    to reveal its ending (end markers with ``meta="end"``, end labels named ``"end label"``,
    :func:`pcd.viz.landscape.landscape_figure` ``reveal=True``) shows them at the last frame only.

    ``width_classes = [("narrow", 700), ("wide", None)]`` (upper bounds in px, ``None`` = any):
    the component reports which class the page column's width falls in (one rerun when it differs
    from ``width``, the class the figure was laid out for); returns the last reported class.
    """
    names = [str(f) for f in frames]
    if cursor_x is not None and len(cursor_x) != len(names):
        raise ValueError(f"cursor_x needs one value per frame ({len(names)}), got {len(cursor_x)}")
    frame_ms = int(frame_ms)
    if frame_ms < 1:
        raise ValueError(f"frame_ms must be >= 1, got {frame_ms}")
    classes = [[str(n), None if w is None else float(w)] for n, w in (width_classes or [])]
    payload = {"target": str(chart_key), "frames": names, "ms": frame_ms, "loss": loss_key,
               "cursor_x": [float(v) for v in cursor_x] if cursor_x is not None else [],
               "cursor_name": cursor_name, "keys": bool(keyboard), "width_classes": classes or None,
               "width": width, "follow": [str(k) for k in follow]}
    key = key or f"{chart_key}-controls"
    _component("player")(data=payload, key=key, on_width_change=lambda: None)
    return reported_width(key)


def reported_width(key: str) -> str | None:
    """The width class last reported by the frame controls with widget key ``key`` (or None)."""
    val: Any = st.session_state.get(key)
    try:
        got = val.get("width") if hasattr(val, "get") else getattr(val, "width", None)
    except Exception:  # a malformed value from the browser is ignored
        return None
    return str(got) if isinstance(got, str) else None


def vector_drag(chart_key: str, vectors: Sequence[dict], on_drop: Callable[[dict], None] | None = None,
                key: str | None = None) -> None:
    """Click or drag in the chart ``chart_key`` to move the nearest of ``vectors``
    (``[{"name", "tip": [x, y], "trace": index of its line trace or None}]``; the line follows the
    mouse while dragging). On release, ``on_drop({"name", "x", "y", "n"})`` runs as the widget
    callback of the next rerun (``n``: a timestamp), so it may set other widgets' session state.
    The chart's own zoom-drag is suppressed inside the plot area."""
    vecs = [{"name": str(v["name"]), "tip": [float(v["tip"][0]), float(v["tip"][1])],
             "trace": None if v.get("trace") is None else int(v["trace"])} for v in vectors]
    if not vecs:
        raise ValueError("vector_drag needs at least one vector")
    key = key or f"{chart_key}-drag"

    def _changed() -> None:
        val: Any = st.session_state.get(key)
        tip = val.get("tip") if isinstance(val, dict) or hasattr(val, "get") else getattr(val, "tip", None)
        if isinstance(tip, dict) and on_drop is not None:
            try:
                on_drop(tip)
            except (KeyError, TypeError, ValueError):
                pass  # a malformed event from the browser is ignored, never raised

    _component("drag")(data={"target": str(chart_key), "vectors": vecs}, key=key, on_tip_change=_changed)


def scroll_to_top(token: str, key: str = "pcd-scroll-top") -> None:
    """Scroll the page to its top whenever ``token`` changes (e.g. a lesson's step), not on the
    first load. Renders nothing."""
    _component("top")(data={"token": str(token)}, key=key)
