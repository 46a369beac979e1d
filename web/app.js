// The gallery: the runs, one run's grid and its viewer; which one is in the address.
import { el } from './api.js';
import * as viewState from './view_state.js';
import { showRuns } from './runs_view.js';
import { RunView } from './run_view.js';

const main = document.getElementById('main');
const live = document.getElementById('live');
const setLive = (on) => live.classList.toggle('on', on);
let current = null;   // {close(), key?(event)}

async function route() {
  if (current) current.close();
  current = null;
  const v = viewState.read();
  viewState.applyBackground(v);
  if (v.run) {
    const view = new RunView(main, v, setLive);
    current = view;
    try {
      await view.open();
    } catch (e) {
      main.replaceChildren(el('p', { style: 'padding:12px' }, `run ${v.run}: ${e.message} `, el('a', { href: '/' }, 'all runs')));
    }
  } else {
    const close = showRuns(main, setLive, (run) => { viewState.write({ ...viewState.read(), run }, true); route(); });
    current = { close };
  }
}

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === '?' && !e.target.matches('input')) { document.getElementById('help').showModal(); e.preventDefault(); return; }
  if (current && current.key && current.key(e)) e.preventDefault();
});
document.getElementById('help-button').addEventListener('click', () => document.getElementById('help').showModal());
document.getElementById('home').addEventListener('click', (e) => {
  e.preventDefault();
  history.pushState(null, '', '/');
  route();
});
window.addEventListener('popstate', route);
route();
