// Start loading Plotly.js while the page runs (pcd.ui.preload; emitted with st.html, plotly_loader.js first).
// window.__pcdImportChunk(name): import Streamlit's own Plotly.js chunk (same URL as the frontend's own
// import, so the frontend gets the module already evaluated).
window.__pcdImportChunk = window.__pcdImportChunk || function (name) {
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  const url = new URL(name, main ? main.src : new URL('static/js/', document.baseURI)).href;
  return import(url).catch(() => {});
};
// window.__pcdPreloadCharts(src, chunk, now): the studio charts' bundle now, or once the page is idle.
window.__pcdPreloadCharts = window.__pcdPreloadCharts || function (src, chunk, now) {
  const go = () => window.__pcdLoadPlotly(src, chunk).catch(() => {});
  if (now) go(); else setTimeout(() => (window.requestIdleCallback || setTimeout)(go), 2500);
};
