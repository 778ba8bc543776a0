// One Plotly.js loader per browser page (pcd.ui.chart): the router's preload and every chart share it.
// Fetch and evaluate a bundle once, keep it as window.__pcdPlotly and give window.Plotly back to whoever had it
// (Streamlit's own charts on other pages use their module's instance, the controls use the gd's).
window.__pcdLoadPlotly = window.__pcdLoadPlotly || function (src, chunk) {
  const loads = window.__pcdPlotlyLoads = window.__pcdPlotlyLoads || {};  // one per bundle
  if (loads[src || '']) return loads[src || ''];
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  const base = main ? main.src.replace(/static\/js\/index\.[^/]*$/, '') : new URL('./', document.baseURI).href;
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
