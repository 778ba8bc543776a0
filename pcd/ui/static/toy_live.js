// Direct manipulation on the toy map (pcd.ui.live.live_map; st.components.v2, no iframe). Presentation only:
// every trajectory comes from the server (pcd.studio.toy.live_paths, the engine); nothing is computed here.
//  * drag a start marker (trace "starts"): the marker follows the mouse at once; the new point goes to the
//    server as a request {kind: "start", s, x, y, tau, lr, seq}, and the answered paths of every method for that
//    start are restyled into the map (paths, end diamonds, heads at the frame shown). On release: "drop".
//  * the τ / learning-rate sliders (Streamlit's own, keys data.sliders): while one moves (its thumb's
//    aria-valuetext), a request {kind: "tau" | "lr"} redraws every start's paths; Streamlit commits on release.
// Back-pressure: one request in flight; a newer wish waits (only the latest) until the answer arrives.
// window.__pcdLiveRedraws counts redraws, window.__pcdLiveLog keeps {kind, seq, changed, sent, drawn} (ms).
export default function(component) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.querySelector('.pcd-live');
  if (!root) return;
  const L = root.__pcdLive || (root.__pcdLive = makeLive(root));
  L.update(data, setStateValue);
  return L.cleanup;
}

function makeLive(root) {
  const S = {data: null, set: null, inflight: null, want: null, drag: null, frame: null, bound: null,
             seen: {}, seqN: 0, raf: null, observers: [], hidden: [], released: 0,
             objWant: null, objTimer: null, objAsked: 0, texts: []};
  window.__pcdLiveRedraws = window.__pcdLiveRedraws || 0;
  window.__pcdLiveLog = window.__pcdLiveLog || [];
  const gd = () => document.querySelector('.st-key-' + S.data.target + ' .js-plotly-plot');
  const P = g => g._pcdPlotly || window.Plotly;
  const now = () => performance.now();
  const idx = (g, pred) => (g.data || []).findIndex(pred);
  const startsIdx = g => idx(g, t => t.name === 'starts');
  // a trace's coordinates as drawn (gd.data may hold them as a typed-array spec {dtype, bdata}: _fullData has them decoded)
  const arr = (g, i, k) => Array.from(((g._fullData || [])[i] || g.data[i])[k] || []);

  // ---- requests with back-pressure -------------------------------------------------------------------------
  function sliderValue(kind) {
    const key = (S.data.sliders || {})[kind];
    const el = key && document.querySelector('.st-key-' + key + ' [aria-valuetext]');
    const v = el ? parseFloat(el.getAttribute('aria-valuetext')) : NaN;
    return Number.isFinite(v) ? v : S.data[kind];
  }
  const LOST_MS = 5000;  // an answer that never comes (its run preempted by a page run) frees the slot after this
  const OFF_VIEW_MS = 1000;  // an objective panel out of view is asked for its points at most this often
  // a request in flight holds the slot until its answer, LOST_MS, or the page drawing a newer map (a commit:
  // its answer would be dropped anyway, answered())
  const busy = () => !!(S.inflight && now() - S.inflight.sent < LOST_MS && S.inflight.fig === figToken());
  function request(req) {
    req.changed = req.changed || now();
    if (busy()) {  // one in flight: the newest wish waits
      if (S.want && S.want.kind === req.kind && S.want.s === req.s) req.changed = Math.min(req.changed, S.want.changed);
      S.want = req;
      if (!S.lostTimer) S.lostTimer = setTimeout(lost, Math.min(400, LOST_MS - (now() - S.inflight.sent) + 10));
      return;
    }
    send(req);
  }
  function lost() {
    S.lostTimer = null;
    if (!S.want) return;
    if (busy()) { S.lostTimer = setTimeout(lost, Math.min(400, LOST_MS - (now() - S.inflight.sent) + 10)); return; }
    const w = S.want; S.want = null; send(w);
  }
  // the figure the page drew last (pcd/ui/static/chart.js counts its draws): an answer to a request sent
  // before the page drew a new figure (a commit) is not drawn over it
  const figToken = () => { const g = gd(), box = g && g.closest('.pcd-chart'); return box ? box.dataset.drawn : null; };
  function send(req) {
    req.seq = Date.now() * 100 + (S.seqN++ % 100);
    req.fig = figToken();
    req.ofig = tokenOf(objGd());
    req.tau = req.kind === 'tau' ? req.tau : sliderValue('tau');
    req.lr = req.kind === 'lr' ? req.lr : sliderValue('lr');
    req.sent = now();
    S.inflight = req;
    // the objective panel's points: for a panel in view; one out of view (below the map) once a second
    const og = objGd(), r = og && og.getBoundingClientRect();
    const obj = !!(r && ((r.bottom > 0 && r.top < window.innerHeight) || now() - S.objAsked >= OFF_VIEW_MS));
    if (obj) S.objAsked = now();
    const msg = {kind: req.kind, seq: req.seq, tau: req.tau, lr: req.lr, obj};
    if (req.kind === 'start') Object.assign(msg, {s: req.s, x: req.x, y: req.y});
    S.set('req', msg);
  }
  function answered(ans) {
    const req = S.inflight;
    if (!req || !ans || ans.seq !== req.seq) return;
    S.inflight = null;
    const next = () => { if (S.want) { const w = S.want; S.want = null; send(w); } };
    if (ans.error) { root.dataset.error = ans.error; next(); return; }
    if (req.fig !== figToken()) { next(); return; }  // the page has drawn a newer figure meanwhile
    delete root.dataset.error;
    const arrived = now();
    // the next request goes out first and the drawing waits for a later task, so the server computes while the
    // browser draws (a redraw keeps this thread busy ~50-100 ms; Streamlit sends a component's new state from a
    // later task too, so a redraw started here held the request back until it was done)
    next();
    setTimeout(() => {
      if (req.fig !== figToken()) return;  // the page drew a newer figure meanwhile (a commit): not over it
      const done = draw(ans, req);
      const log = () => { window.__pcdLiveRedraws += 1;
        window.__pcdLiveLog.push({kind: req.kind, seq: req.seq, changed: req.changed, sent: req.sent, arrived, drawn: now()});
        if (window.__pcdLiveLog.length > 2000) window.__pcdLiveLog.shift(); };
      if (done && done.then) done.then(log, () => {}); else if (done) log();
    }, 0);
  }

  // ---- drawing an answer into the map (and the objective-space panel) --------------------------------------------
  const objGd = () => S.data.objective ? document.querySelector('.st-key-' + S.data.objective + ' .js-plotly-plot') : null;
  const tokenOf = g => { const box = g && g.closest('.pcd-chart'); return box ? box.dataset.drawn : null; };
  // a path trace's segments, one per start (pcd.viz.landscape.path_so_far: nS equal chunks, each ending in a gap;
  // a diverged path keeps its gaps inside its own chunk), parsed once per drawn figure and kept: the trace
  // is rebuilt from them after each answer (a replaced segment has another length)
  function segsOf(g, i, nS, k) {
    const c = g.__pcdSegs || (g.__pcdSegs = {}), key = i + k, tok = tokenOf(g);
    if (c[key] && c[key].tok === tok) return c[key].segs;
    const a = arr(g, i, k).map(v => (v === null || v === undefined || Number.isNaN(v)) ? null : v);
    let segs;
    const n = a.length / nS;
    if (Number.isInteger(n) && n >= 1 && Array.from({length: nS}, (_, s) => a[(s + 1) * n - 1]).every(v => v === null)) {
      segs = Array.from({length: nS}, (_, s) => a.slice(s * n, (s + 1) * n - 1));
    } else {  // not the figure's layout (drawn by something else): split at the gaps
      segs = [[]];
      a.forEach(v => { if (v === null) segs.push([]); else segs[segs.length - 1].push(v); });
    }
    c[key] = {tok, segs};
    return segs;
  }
  function joined(segs, n) {
    const out = [];
    for (let s = 0; s < n; s++) { out.push(...(segs[s] || [])); out.push(null); }
    return out;
  }
  function lastFinite(a) { for (let i = a.length - 1; i >= 0; i--) if (a[i] !== null) return a[i]; return null; }
  // the paths, end markers and current points of every answered method in one chart: `X`, `Y` the answer's
  // coordinates there ([method][start][step]); `hi` the trace of the current points (-1: none), at the frame
  // shown `t`: `tails` comet points per (method, start) then the heads (the map's), or the heads alone (tails 0)
  function place(g, ans, X, Y, starts, nS, t, hi, tails, upd, traces) {
    const methods = S.data.methods || [], M = methods.length;
    const pos = hi >= 0 ? {x: arr(g, hi, 'x'), y: arr(g, hi, 'y')} : null;
    (ans.methods || []).forEach((name, j) => {
      const m = methods.indexOf(name);
      if (m < 0) return;
      const path = idx(g, tr => tr.legendgroup === name && tr.mode === 'lines');
      const end = idx(g, tr => tr.legendgroup === name && tr.mode === 'markers');
      if (path >= 0) {
        const sx = segsOf(g, path, nS, 'x'), sy = segsOf(g, path, nS, 'y');
        starts.forEach((s, k) => { sx[s] = X[j][k].slice(); sy[s] = Y[j][k].slice(); });
        traces.push(path); upd.x.push(joined(sx, nS)); upd.y.push(joined(sy, nS));
      }
      if (end >= 0) {
        const ex = arr(g, end, 'x'), ey = arr(g, end, 'y');
        starts.forEach((s, k) => { ex[s] = lastFinite(X[j][k]); ey[s] = lastFinite(Y[j][k]); });
        traces.push(end); upd.x.push(ex); upd.y.push(ey);
      }
      if (pos) {  // the map's comet: `tails` points per (method, start), then the heads (methods in reverse order)
        starts.forEach((s, k) => {
          const px = X[j][k], py = Y[j][k], T = px.length;
          for (let o = 0; o < tails; o++) {
            const i = Math.max(0, Math.min(T - 1, t - tails + o));
            pos.x[(m * nS + s) * tails + o] = px[i]; pos.y[(m * nS + s) * tails + o] = py[i];
          }
          const h = M * nS * tails + (M - 1 - m) * nS + s, i = Math.min(T - 1, t);
          pos.x[h] = px[i]; pos.y[h] = py[i];
        });
      }
    });
    if (pos) { traces.push(hi); upd.x.push(pos.x); upd.y.push(pos.y); }
  }
  // end labels (annotations named "end label": verdicts and who ends where, from the full run) are hidden
  // while the paths are live, until the page draws its next figure (S.hidden; restored by idle() if none comes)
  function hideLabels(g) {
    if (!g || !g.layout) return;
    const tok = tokenOf(g), upd = {}, keys = [];
    (g.layout.annotations || []).forEach((a, k) => {
      if (a && a.name === 'end label' && a.visible !== false) { upd['annotations[' + k + '].visible'] = false; keys.push(k); }
    });
    if (!keys.length) return;
    S.hidden.push({g, tok, keys});
    const r = P(g).relayout(g, upd);
    if (r && r.catch) r.catch(() => {});
  }
  function draw(ans, req) {
    const g = gd();
    if (!g || !g._fullLayout || !P(g)) return null;
    const trail = S.data.trail || 8;
    const si = startsIdx(g);
    if (si < 0) return null;
    const nS = arr(g, si, 'x').length;
    const starts = ans.kind === 'start' ? [ans.s] : Array.from({length: nS}, (_, k) => k);
    if (starts.some(s => s >= nS) || (ans.x || []).some(per => per.length !== starts.length)) return null;
    const rec = ans.record || [];
    let t = rec.indexOf(Number(S.frame));  // the frame shown (its step's index in the record)
    if (t < 0) t = 0;
    const upd = {x: [], y: []}, traces = [];
    place(g, ans, ans.x, ans.y, starts, nS, t, idx(g, tr => tr.name === 'positions'), trail, upd, traces);
    if (S.drag && ans.kind === 'start') {  // the marker stays under the mouse, wherever the answer was for
      const sx = arr(g, si, 'x'), sy = arr(g, si, 'y');
      sx[S.drag.s] = S.drag.x; sy[S.drag.s] = S.drag.y;
      traces.push(si); upd.x.push(sx); upd.y.push(sy);
    }
    if (!traces.length) return null;
    hideLabels(g);
    const og = objGd();  // the same runs in the (f1, f2) plane: the answer's losses as that panel plots them
    if (og && og._fullLayout && ans.ox && ans.oy && (!req || req.ofig === tokenOf(og))) {
      hideLabels(og);
      S.objWant = {ans, starts, nS, t, tok: tokenOf(og)};
      scheduleObjective();
    }
    return redraw(g, upd, traces);
  }
  // the objective panel is redrawn after the map, in a later animation frame, with the newest answer only
  // (answers that arrive meanwhile replace it); one out of view (below the map: nobody watches it) is asked
  // for its points (send) at most once a second. window.__pcdLiveObjRedraws counts its redraws.
  function scheduleObjective() {
    if (S.objTimer || !S.objWant) return;
    S.objTimer = setTimeout(() => requestAnimationFrame(drawObjective), 0);
  }
  function drawObjective() {
    S.objTimer = null;
    const w = S.objWant, og = objGd();
    S.objWant = null;
    if (!w || !og || !og._fullLayout || tokenOf(og) !== w.tok) return;  // the page has drawn a newer panel
    const upd = {x: [], y: []}, traces = [];
    place(og, w.ans, w.ans.ox, w.ans.oy, w.starts, w.nS, w.t, idx(og, tr => tr.name === 'now'), 0, upd, traces);
    if (!traces.length) return;
    staleTexts(og, traces, w.starts, upd);
    const r = redraw(og, upd, traces);
    const count = () => { window.__pcdLiveObjRedraws = (window.__pcdLiveObjRedraws || 0) + 1; };
    if (r && r.then) r.then(count, () => {}); else count();
  }
  // the panel's end diamonds name each ending's verdict on hover ("S2: Pareto-stationary", "dominated by ..."): a
  // moved path's verdict is the old run's, so until the page draws the new figure its hover says so (the texts
  // as drawn are kept per figure and put back by idle() when no new figure comes)
  const MOVED = 'moved: its verdict comes with the run on release';
  function staleTexts(g, traces, starts, upd) {
    const tok = tokenOf(g);
    let keep = S.texts.find(k => k.g === g && k.tok === tok);
    if (!keep) { keep = {g, tok, orig: {}}; S.texts.push(keep); }
    upd.text = traces.map(i => {
      const tr = g.data[i];
      if (!tr || tr.mode !== 'markers' || !tr.legendgroup || !Array.isArray(tr.text)) return tr ? tr.text : undefined;
      if (!(i in keep.orig)) keep.orig[i] = tr.text.slice();
      const text = tr.text.slice();
      starts.forEach(s => { if (s < text.length) text[s] = 'S' + (s + 1) + ': ' + MOVED; });
      return text;
    });
  }
  // after a release: a committed change redraws the page's figures (their labels come with them); when the page
  // draws none (the same settings), the hidden labels are shown again once the page is idle
  function idle() {
    if ((!S.hidden.length && !S.texts.length) || S.drag || S.sliding || S.want || busy()) return;
    if (!S.released || now() - S.released < 1200) return;
    if (document.querySelector('[data-testid="stStatusWidget"]')) return;
    // true: keep the entry (its figure is being drawn: wait); false: drop it (a new figure has its own)
    const pending = h => {
      const box = h.g.closest('.pcd-chart'), c = box && box.__pcd;
      if (!h.g.isConnected || h.tok !== tokenOf(h.g)) return false;
      return !!(c && String(c.token) !== box.dataset.drawn);
    };
    const done = r => { if (r && r.catch) r.catch(() => {}); return false; };
    S.hidden = S.hidden.filter(h => {
      if (!h.g.isConnected || h.tok !== tokenOf(h.g) || pending(h)) return pending(h);
      const upd = {};
      h.keys.forEach(k => { upd['annotations[' + k + '].visible'] = true; });
      return done(P(h.g).relayout(h.g, upd));
    });
    S.texts = S.texts.filter(k => {
      if (!k.g.isConnected || k.tok !== tokenOf(k.g) || pending(k)) return pending(k);
      const ids = Object.keys(k.orig).map(Number);
      return ids.length ? done(P(k.g).restyle(k.g, {text: ids.map(i => k.orig[i])}, ids)) : false;
    });
  }

  // one Plotly.restyle for every changed trace (Plotly.animate with redraw false is cheaper, but it
  // wipes what the map's other subplots drew: the gradient inset's arrows and numbers)
  function redraw(g, upd, traces) {
    const r = P(g).restyle(g, upd, traces);
    if (r && r.catch) r.catch(() => {});
    return r && r.then ? r : true;
  }

  // ---- dragging a start marker ------------------------------------------------------------------------------
  function toData(g, ev) {
    const fl = g._fullLayout, xa = fl && fl.xaxis, ya = fl && fl.yaxis;
    if (!xa || !ya || !xa.p2l) return null;
    const r = g.getBoundingClientRect();
    const px = Math.max(0, Math.min(xa._length, ev.clientX - r.left - xa._offset));
    const py = Math.max(0, Math.min(ya._length, ev.clientY - r.top - ya._offset));
    const clamp = (v, ax) => { const lo = Math.min(ax.range[0], ax.range[1]), hi = Math.max(ax.range[0], ax.range[1]);
                               return Math.max(lo, Math.min(hi, v)); };
    return [clamp(xa.p2l(px), xa), clamp(ya.p2l(py), ya)];
  }
  function hit(g, ev) {  // the start marker under the mouse (within 14 px), or -1
    const fl = g._fullLayout, xa = fl && fl.xaxis, ya = fl && fl.yaxis, si = startsIdx(g);
    if (!xa || !ya || si < 0) return -1;
    const r = g.getBoundingClientRect(), xs = arr(g, si, 'x'), ys = arr(g, si, 'y');
    let best = -1, bd = 14;
    xs.forEach((x, s) => {
      const d = Math.hypot(ev.clientX - (r.left + xa._offset + xa.l2p(x)), ev.clientY - (r.top + ya._offset + ya.l2p(ys[s])));
      if (d <= bd) { bd = d; best = s; }
    });
    return best;
  }
  function moveMarker(g) {  // the dragged ring moves at once, in the SVG itself (no Plotly redraw; its label follows with the answer)
    if (S.raf) return;
    S.raf = requestAnimationFrame(() => {
      S.raf = null;
      const si = startsIdx(g), fl = g._fullLayout;
      if (!S.drag || si < 0 || !fl || !fl.xaxis) return;
      const layer = Array.from(g.querySelectorAll('.scatterlayer .trace'))
        .find(el => el.__data__ && el.__data__[0] && el.__data__[0].trace && el.__data__[0].trace.index === si);
      if (!layer) return;
      const px = fl.xaxis.l2p(S.drag.x), py = fl.yaxis.l2p(S.drag.y);
      const pt = layer.querySelectorAll('.points path')[S.drag.s];
      if (pt) pt.setAttribute('transform', 'translate(' + px + ',' + py + ')');
    });
  }
  function down(ev) {
    if (ev.button !== 0 || !S.data) return;
    const g = gd();
    if (!g || !g._fullLayout || !g.contains(ev.target)) return;
    if (ev.target.closest && ev.target.closest('.modebar, .legend')) return;
    const s = hit(g, ev);
    if (s < 0) return;
    const pt = toData(g, ev);
    S.drag = {s, x: pt[0], y: pt[1], moved: false};
    root.dataset.dragging = '1';
    ev.preventDefault(); ev.stopPropagation();  // neither Plotly's zoom nor the map's click-to-add sees it
  }
  function move(ev) {
    if (!S.drag) return;
    const g = gd();
    const pt = g && toData(g, ev);
    if (!pt) return;
    S.drag.x = pt[0]; S.drag.y = pt[1]; S.drag.moved = true;
    moveMarker(g);
    request({kind: 'start', s: S.drag.s, x: pt[0], y: pt[1], changed: now()});
    ev.preventDefault(); ev.stopPropagation();
  }
  function released() {  // the pointer released after moving a slider: Streamlit commits, the page redraws
    if (!S.sliding) return;
    S.sliding = null;
    S.released = now();
    if (S.want && S.want.kind !== 'start') S.want = null;
  }
  function up(ev) {
    released();
    if (!S.drag) return;
    const d = S.drag; S.drag = null;
    S.released = now();
    delete root.dataset.dragging;
    ev.preventDefault(); ev.stopPropagation();
    if (!d.moved) return;
    S.want = null;  // the commit redraws everything
    S.set('drop', {s: d.s, x: d.x, y: d.y, n: Date.now()});
  }

  // ---- the τ / lr sliders ------------------------------------------------------------------------------------
  function watchSliders() {
    for (const [kind, key] of Object.entries(S.data.sliders || {})) {
      const el = document.querySelector('.st-key-' + key);
      const o = S.observers.find(x => x.kind === kind);
      if (o && o.el === el) continue;
      if (o) { o.obs.disconnect(); o.el.removeEventListener('pointerdown', o.press, true); S.observers.splice(S.observers.indexOf(o), 1); }
      if (!el) continue;
      S.seen[kind] = sliderValue(kind);
      const obs = new MutationObserver(() => {
        const v = sliderValue(kind);
        if (!Number.isFinite(v) || v === S.seen[kind]) return;
        S.seen[kind] = v;
        // a value that Streamlit commits now (the pointer released, a key pressed) redraws the whole page:
        // no live request then (one would race the page's run for the committed value)
        if (!S.sliding) return;
        request({kind, [kind]: v, changed: now()});
      });
      const press = () => { S.sliding = kind; };
      el.addEventListener('pointerdown', press, true);
      obs.observe(el, {subtree: true, attributes: true, attributeFilter: ['aria-valuetext'], characterData: true, childList: true});
      S.observers.push({kind, el, obs, press});
    }
  }

  // ---- the frame shown (heads of an answer are drawn at that step) ---------------------------------------------
  const onFrame = ev => { if (ev && ev.name !== undefined) S.frame = ev.name; };
  const onReact = () => { S.frame = null; };
  function bind() {
    if (!S.data) return;
    idle();
    watchSliders();
    const g = gd();
    if (!g || !g.on || g === S.bound) return;
    if (S.bound && S.bound.removeListener) { S.bound.removeListener('plotly_animatingframe', onFrame); S.bound.removeListener('plotly_react', onReact); }
    S.bound = g; S.frame = null;
    g.on('plotly_animatingframe', onFrame);
    g.on('plotly_react', onReact);
    root.dataset.bound = '1';
  }
  document.addEventListener('mousedown', down, true);
  document.addEventListener('mousemove', move, true);
  document.addEventListener('mouseup', up, true);
  document.addEventListener('pointerup', released, true);
  const timer = setInterval(bind, 400);
  return {
    update(data, set) {
      S.data = data; S.set = set;
      bind();
      if (data.answer) answered(data.answer);
    },
    cleanup() {
      clearInterval(timer);
      if (S.lostTimer) clearTimeout(S.lostTimer);
      if (S.raf) cancelAnimationFrame(S.raf);
      if (S.objTimer) clearTimeout(S.objTimer);
      S.observers.forEach(o => { o.obs.disconnect(); o.el.removeEventListener('pointerdown', o.press, true); });
      document.removeEventListener('mousedown', down, true);
      document.removeEventListener('mousemove', move, true);
      document.removeEventListener('mouseup', up, true);
      document.removeEventListener('pointerup', released, true);
      if (S.bound && S.bound.removeListener) { S.bound.removeListener('plotly_animatingframe', onFrame); S.bound.removeListener('plotly_react', onReact); }
      root.__pcdLive = null;
    },
  };
}
