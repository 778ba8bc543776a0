// Scroll the page to its top when a token changes (pcd.ui.controls.scroll_to_top; st.components.v2).
export default function(component) {
  const { data } = component;
  if (window.__pcdScrollToken === data.token) return;
  const first = window.__pcdScrollToken === undefined;
  window.__pcdScrollToken = data.token;
  if (first) return;  // a fresh page load is at the top already (and may be a deep link)
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  requestAnimationFrame(() => { if (main && main.scrollTo) main.scrollTo({top: 0}); window.scrollTo({top: 0}); });
}
