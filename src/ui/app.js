// Kiln's web UI: picks the screen from the path (/, /span, /usage, /targets),
// keeps the whole view state in the URL's query string (so a link restores
// it), and re-renders on every change. window.__kiln is the test hook.
import { readState, stateQuery, settled, track, refresh } from './api.js';
import { ProfilesScreen } from './profiles.js';
import { spanScreen, usageScreen, targetsScreen } from './screens.js';
import { h } from './dom.js';

const main = document.getElementById('main');
const hooks = {}; // the span screen's panel (test hook)
let profiles = null;

// Merges patch into the URL state; push adds a history entry. `redirect`
// marks a default filled in (service, type): replace, never push.
function go(patch, push, redirect) {
  const s = { ...readState(), ...patch };
  const url = `${location.pathname}?${stateQuery(s)}`;
  if (push && !redirect) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
  render();
}

const SCREENS = {
  '/span': (s) => spanScreen(main, s, go, hooks),
  '/usage': (s) => usageScreen(main, s, go),
  '/targets': (s) => targetsScreen(main, s, go),
};

function render() {
  const path = location.pathname === '/index.html' || location.pathname === '/profiles' ? '/' : location.pathname;
  for (const a of document.querySelectorAll('header nav a')) {
    if (a.getAttribute('href') === path) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const s = readState();
  const screen = SCREENS[path];
  if (screen) { profiles = null; return track(screen(s)); }
  if (!profiles) { profiles = new ProfilesScreen(main, go); main.replaceChildren(); }
  return track(profiles.update(s).catch((e) => {
    main.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message), h('p', {}, h('a', { href: '/' }, 'Start over: all services, last hour')));
    profiles = null; // rebuild the screen on the next change
  }));
}

window.addEventListener('popstate', render);
document.getElementById('refresh').addEventListener('click', () => { refresh(); if (profiles) profiles.layoutKey = null; render(); });
window.__kiln = {
  settled,
  // The drawn graph of the current screen (nodes(), draw(), zoom …).
  get flame() { return (profiles ? profiles.hooks : hooks).flame; },
  get sandwich() { return profiles?.hooks.sandwich; },
  state: readState,
};
render();
