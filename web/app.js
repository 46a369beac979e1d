// The gallery: the runs, one run's grid and its viewer; which one is in the address.
import { el, refreshMediaKey, token, Unauthorized } from './api.js';
import * as viewState from './view_state.js';
import { showRuns } from './runs_view.js';
import { RunView } from './run_view.js';

const main = document.getElementById('main');
const live = document.getElementById('live');
const setLive = (on) => live.classList.toggle('on', on);
let current = null;   // {close(), key?(event)}

// Without the token (a page opened by hand, or a token that changed) the page can show nothing.
function askForToken(message) {
  main.replaceChildren(el('p', { style: 'padding:12px' }, message || 'This page needs the daemon\'s token: open it with `rgbaq gallery` (or `rgbaq http-url`).'));
}

async function route() {
  if (current) current.close();
  current = null;
  if (!token()) return askForToken();
  const v = viewState.read();
  viewState.applyBackground(v);
  if (v.run) {
    const view = new RunView(main, v, setLive);
    current = view;
    try {
      await view.open();
    } catch (e) {
      if (e instanceof Unauthorized) return askForToken(e.message);
      main.replaceChildren(el('p', { style: 'padding:12px' }, `run ${v.run}: ${e.message} `, el('a', { href: '/' }, 'all runs')));
    }
  } else {
    const close = showRuns(main, setLive, (run) => { viewState.write({ ...viewState.read(), run }, true); route(); });
    current = { close };
  }
}

const help = document.getElementById('help');
document.addEventListener('keydown', (e) => {
  // The key list is modal: Esc (or ?) closes it, and no key reaches the grid behind it.
  if (help.open) {
    if (e.key === 'Escape' || e.key === '?') { help.close(); e.preventDefault(); }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '?' && !e.target.matches('input')) { help.showModal(); e.preventDefault(); return; }
  if (current && current.key && current.key(e)) e.preventDefault();
});
document.getElementById('help-button').addEventListener('click', () => help.showModal());
document.getElementById('home').addEventListener('click', (e) => {
  e.preventDefault();
  history.pushState(null, '', '/');
  route();
});
window.addEventListener('popstate', route);
if (token()) {
  refreshMediaKey().then(route, (e) => askForToken(e instanceof Unauthorized ? e.message : `the daemon did not answer: ${e.message}`));
} else {
  askForToken();
}
