// Click or drag in a chart to move one of its vectors (pcd.ui.controls.vector_drag; st.components.v2).
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
