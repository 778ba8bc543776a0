// The studio chart component (pcd.ui.chart.plotly_chart; st.components.v2). plotly_loader.js is prepended.
export default function(component) {

  const FULLSCREEN_ICON = {width: 1000, height: 1000,
    path: 'M0 0h400v110H110v290H0zM600 0h400v400H890V110H600zM0 600h110v290h290v110H0zM890 600h110v400H600V890h290z'};
  const { data, parentElement, setStateValue } = component;
  let box = parentElement.querySelector('.pcd-chart');
  if (!box) {
    box = document.createElement('div');
    box.className = 'pcd-chart';
    parentElement.appendChild(box);
  }
  box.style.height = fitHeight(data) + 'px';
  const s = box.__pcd || (box.__pcd = {gd: null, spec: null, token: 0});
  s.data = data;
  s.setStateValue = setStateValue;
  // data.report (pcd.ui.chart.plotly_chart(report_drawn=True)): a number new for each run that asks; say once
  // when this figure is drawn -- or could not be, or after REPORT_MS (a chart below the window waits to be
  // scrolled near), or at once when the figure is the one already drawn: the page's run waits for it
  const REPORT_MS = 1500;
  const ask = data.report && data.report !== s.asked ? (s.asked = data.report) : 0;
  if (s.spec === data.spec) { if (ask) setStateValue('drawn', ask); return; }
  s.spec = data.spec;
  const token = ++s.token;
  let reported = !ask;
  const report = () => {  // once; not for a figure a newer one has replaced (that one reports)
    if (reported) return;
    reported = true;
    clearTimeout(timer);
    if (token === s.token) setStateValue('drawn', ask);
  };
  const timer = ask ? setTimeout(report, REPORT_MS) : null;
  window.__pcdLoadPlotly(data.src, data.chunk)
    .then(P => (s.gd && s.gd._fullLayout) ? P : whenNeeded(box).then(() => P))
    .then(P => { if (token === s.token) return draw(P, box, s, token); })
    .catch(err => {
      box.dataset.error = String(err);
      let note = box.querySelector('.pcd-chart-error');
      if (!note) { note = document.createElement('div'); note.className = 'pcd-chart-error'; box.prepend(note); }
      note.textContent = 'The figure could not be drawn: ' + err;
    })
    .finally(report);

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

  // Presenter mode (data.present = {room, player, font}): a figure taller than the screen's room (the window's
  // height less `room` px of header, title and settings drawer, and `player` px more for an animated figure's
  // controls under it) but not more than 1.6 times that is drawn
  // to fit it, so the whole figure is on the projector's screen; every font of the figure is scaled by
  // `font` (read from the back of a room): axes, titles, legend.
  function fitHeight(d) {
    if (!d.present) return d.height;
    const room = Math.max(260, window.innerHeight - d.present.room - (d.animated ? d.present.player : 0));
    return d.height > room && d.height <= 1.6 * room ? room : d.height;
  }
  function scaleFonts(o, k, depth) {
    if (!o || typeof o !== 'object' || depth > 8) return;
    if (Array.isArray(o)) { o.forEach(v => scaleFonts(v, k, depth + 1)); return; }
    for (const key of Object.keys(o)) {
      const v = o[key];
      if (v && typeof v === 'object' && /font$/i.test(key) && !Array.isArray(v)) {
        if (typeof v.size === 'number') v.size = Math.round(v.size * k * 10) / 10;
        else if (Array.isArray(v.size)) v.size = v.size.map(x => typeof x === 'number' ? Math.round(x * k * 10) / 10 : x);
      }
      scaleFonts(v, k, depth + 1);
    }
  }
  // the axes, titles and legend, and the annotations placed on the paper (subplot titles); not the labels
  // placed on the data nor the traces' text: insets and labels are laid out for their own sizes, and grow
  // into each other (pcd.ui.chart.present_fonts: the same rule for the charts Streamlit draws)
  function presentFonts(fig, k) {
    if (!k || k === 1) return;
    const { annotations, ...rest } = fig.layout;
    scaleFonts(rest, k, 0);
    (annotations || []).forEach(a => { if (a && a.xref === 'paper' && a.yref === 'paper') scaleFonts({font: a.font}, k, 0); });
    const lf = fig.layout.font = fig.layout.font || {};
    if (typeof lf.size !== 'number') lf.size = Math.round(12 * k);  // Plotly's default, 12 px
  }
  function width() { return Math.max(150, Math.round(box.getBoundingClientRect().width || 700)); }
  function height() { return document.fullscreenElement === box ? Math.round(box.clientHeight) : fitHeight(s.data); }
  function draw(P, box, s, token) {
    const fig = JSON.parse(s.data.spec);
    const layout = fig.layout = fig.layout || {};
    if (s.data.present) presentFonts(fig, s.data.present.font);
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
        // twice: Plotly 4.1 lays out the margins a legend pushes (automargin) for the width before, the second
        // pass for the new one (else after a window resize the geometry figure's legend sat over its x ticks)
        if (gd._fullLayout && Math.abs(gd._fullLayout.width - w) > 1) P.relayout(gd, {width: w}).then(() => P.relayout(gd, {width: w}));
      });
    }).observe(box);
  }
}
