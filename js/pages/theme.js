// quota-hub's pages in light or dark, as JupyterHub's own pages do (its darkmode.js): the choice
// kept in this browser, else the system's. Loaded as a classic script in <head>, before the page
// paints; the shell's "Theme" button switches it.
(() => {
  const KEY = 'quota-hub-bs-theme';
  const system = () => (window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  const apply = (theme) => document.documentElement.setAttribute('data-bs-theme', theme);
  apply(localStorage.getItem(KEY) ?? system());
  window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener('change', () => {
    if (!localStorage.getItem(KEY)) apply(system());
  });
  document.addEventListener('DOMContentLoaded', () => {
    const toggle = document.getElementById('theme-toggle');
    if (!toggle) return;
    toggle.addEventListener('click', () => {
      const next = document.documentElement.getAttribute('data-bs-theme') === 'dark' ? 'light' : 'dark';
      localStorage.setItem(KEY, next);
      apply(next);
    });
  });
})();
