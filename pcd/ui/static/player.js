// The lecturer's frame controls (pcd.ui.controls.frame_controls; st.components.v2, markup in player.html).
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
