// Every run: its prompts, a progress bar, state, ETA and failures, live as jobs finish.
import { api, el, duration, watch } from './api.js';

function runState(r) {
  const c = r.counts;
  if (c.running > 0) return 'rendering';
  if (c.queued > 0) return 'queued';
  if (c.failed > 0) return 'finished with failures';
  if (c.canceled > 0 && c.done === 0) return 'canceled';
  return 'done';
}

function eta(r) {
  const c = r.counts;
  const left = c.queued + c.running;
  if (left === 0) return '';
  const elapsed = Date.now() / 1000 - r.created_at;
  return c.done > 0 ? duration(left * elapsed / c.done) : '?';
}

function bar(r) {
  const total = Math.max(1, r.total);
  const part = (n, cls) => el('div', { class: cls, style: `width:${(100 * n) / total}%` });
  return el('div', { class: 'progress', title: `${r.counts.done} done, ${r.counts.running} running, ${r.counts.failed} failed of ${r.total}` },
            part(r.counts.done, 'done'), part(r.counts.running, 'running'), part(r.counts.failed, 'failed'));
}

export function showRuns(main, setLive, openRun) {
  const box = el('div', { id: 'runs' });
  main.replaceChildren(box);
  document.getElementById('crumb').textContent = 'runs';
  let pending = null;
  const render = async () => {
    const { runs } = await api('/api/v1/runs');
    const rows = runs.slice().reverse().map((r) => {
      return el('tr', { 'data-run': r.id },
        el('td', {}, el('a', { href: `/?run=${r.id}`, onclick: (e) => { e.preventDefault(); openRun(r.id); } }, `#${r.id}`)),
        el('td', { class: 'name' }, r.name || ''),
        el('td', { class: 'hide-narrow' }, r.options && r.options.prompts !== undefined ? String(r.options.prompts) : '?'),
        el('td', {}, bar(r)),
        el('td', {}, `${r.counts.done} / ${r.total}`),
        el('td', {}, runState(r)),
        el('td', { class: 'hide-narrow' }, eta(r)),
        el('td', { class: r.counts.failed ? 'failures' : '' }, r.counts.failed ? `${r.counts.failed} failed` : ''));
    });
    box.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, el('th', {}, 'run'), el('th', {}, 'name'), el('th', { class: 'hide-narrow' }, 'prompts'), el('th', {}, 'progress'), el('th', {}, 'images'),
                          el('th', {}, 'state'), el('th', { class: 'hide-narrow' }, 'ETA'), el('th', {}, 'failures'))),
      el('tbody', {}, rows)));
    if (!runs.length) box.append(el('p', {}, 'No runs yet: rgbaq submit prompts.csv'));
  };
  render().catch((e) => box.replaceChildren(el('p', {}, e.message)));
  // Live: at most one refresh a second, whatever the rate of events.
  const close = watch(0, (name) => {
    if (name === 'progress' || pending) return;
    pending = setTimeout(() => { pending = null; render().catch(() => {}); }, 1000);
  }, setLive);
  return () => { close(); clearTimeout(pending); };
}
