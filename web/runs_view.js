// Every run: its latest image, first prompt and submit time, a progress bar, counts, state, ETA and
// failures, live as jobs finish.
import { api, el, duration, watch, mediaUrl } from './api.js';

// [text, class of its chip]
function runState(r, paused) {
  const c = r.counts;
  if (c.running > 0) return ['rendering', 'running'];
  if (c.queued > 0) return paused ? ['paused', 'paused'] : ['queued', 'queued'];
  if (c.failed > 0) return ['finished with failures', 'failed'];
  if (c.canceled > 0 && c.done === 0) return ['canceled', 'canceled'];
  return ['done', 'done'];
}

function counts(r) {
  const c = r.counts;
  return [`${c.done} of ${r.total} done`, c.canceled ? `${c.canceled} canceled` : ''].filter(Boolean).join(', ');
}

function eta(r, paused) {
  const c = r.counts;
  const left = c.queued + c.running;
  if (left === 0 || (paused && c.running === 0)) return '';
  const elapsed = Date.now() / 1000 - r.created_at;
  return c.done > 0 ? duration(left * elapsed / c.done) : '?';
}

function submitted(seconds) {
  const t = new Date(seconds * 1000);
  const today = new Date().toDateString() === t.toDateString();
  return today ? t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
               : t.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function bar(r) {
  const total = Math.max(1, r.total);
  const part = (n, cls) => el('div', { class: cls, style: `width:${(100 * n) / total}%` });
  return el('div', { class: 'progress', title: `${r.counts.done} done, ${r.counts.running} running, ${r.counts.failed} failed, ${r.counts.canceled} canceled of ${r.total}` },
            part(r.counts.done, 'done'), part(r.counts.running, 'running'), part(r.counts.failed, 'failed'), part(r.counts.canceled, 'canceled'));
}

// At most `n` of the calls at a time: a list of many runs does not flood the daemon.
function limiter(n) {
  let active = 0;
  const waiting = [];
  const next = () => {
    if (active >= n || !waiting.length) return;
    const [fn, resolve, reject] = waiting.shift();
    ++active;
    fn().then(resolve, reject).finally(() => { --active; next(); });
  };
  return (fn) => new Promise((resolve, reject) => { waiting.push([fn, resolve, reject]); next(); });
}

export function showRuns(main, setLive, openRun) {
  const box = el('div', { id: 'runs' });
  main.replaceChildren(box);
  document.getElementById('crumb').textContent = 'runs';
  let pending = null;
  // What the run listing does not hold, asked once a run (its first prompt) or once its done count
  // changes (its latest image): run id -> promise.
  const limit = limiter(4);
  const prompts = new Map(), latest = new Map();
  const firstPrompt = (r) => {
    if (!prompts.has(r.id)) prompts.set(r.id, limit(() => api(`/api/v1/runs/${r.id}/jobs?limit=1`)).then((p) => (p.jobs[0] ? p.jobs[0].prompt : '')));
    return prompts.get(r.id);
  };
  const latestDone = (r) => {
    const known = latest.get(r.id);
    if (known && known.done === r.counts.done) return known.job;
    const job = r.counts.done === 0 ? Promise.resolve(null)
      : limit(() => api(`/api/v1/runs/${r.id}/jobs?state=done&limit=1&offset=${r.counts.done - 1}`)).then((p) => p.jobs[0] || null);
    latest.set(r.id, { done: r.counts.done, job });
    return job;
  };
  const render = async () => {
    const [{ runs }, status] = await Promise.all([api('/api/v1/runs'), api('/api/v1/status').catch(() => ({}))]);
    const paused = status.paused === true;
    const rows = runs.slice().reverse().map((r) => {
      const open = (e) => { e.preventDefault(); openRun(r.id); };
      // Empty (no image yet) looks unlike a transparent image: the checkerboard comes with the image.
      const thumb = el('a', { class: 'run-thumb', href: `/?run=${r.id}`, onclick: open, 'aria-label': `open run ${r.id}` });
      latestDone(r).then((job) => {
        if (!job) return;
        const img = el('img', { src: mediaUrl(`/api/v1/jobs/${job.id}/thumbnail?size=256&v=${job.finished_at}`), alt: `latest: seed ${job.seed}`,
                                onload: () => thumb.classList.add('backdrop') });
        thumb.append(img);
      }, () => {});
      const prompt = el('div', { class: 'prompt' });
      firstPrompt(r).then((p) => { if (p !== r.name) { prompt.textContent = p; prompt.title = p; } }, () => {});
      const [state, stateClass] = runState(r, paused);
      return el('tr', { 'data-run': r.id },
        el('td', { class: 'thumb' }, thumb),
        el('td', { class: 'name' },
          el('div', {}, el('a', { href: `/?run=${r.id}`, onclick: open }, `#${r.id}`), ' ', r.name || ''),
          prompt,
          el('div', { class: 'submitted' }, `submitted ${submitted(r.created_at)}`,
             r.options && r.options.prompts !== undefined ? el('span', { class: 'hide-narrow' }, `, ${r.options.prompts} prompts`) : '')),
        el('td', { class: 'images' }, bar(r), el('div', { class: 'counts' }, counts(r))),
        el('td', { class: 'state' }, el('span', { class: `chip chip-${stateClass}` }, state),
           r.counts.failed ? el('div', { class: 'failures' }, `${r.counts.failed} failed`) : ''),
        el('td', { class: 'hide-narrow' }, eta(r, paused)));
    });
    box.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, el('th', { class: 'thumb' }, ''), el('th', {}, 'run'), el('th', {}, 'images'), el('th', {}, 'state'),
                          el('th', { class: 'hide-narrow' }, 'ETA'))),
      el('tbody', {}, rows)));
    if (!runs.length) box.append(el('p', {}, 'No runs yet: rgbaq submit prompts.csv'));
  };
  render().catch((e) => box.replaceChildren(el('p', {}, e.message)));
  // Live: at most one refresh a second, whatever the rate of events; and every 15 s while in sight, for
  // what sends no event (a pause, a resume, a submit).
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(() => { pending = null; render().catch(() => {}); }, 1000);
  };
  const close = watch(0, (name) => { if (name !== 'progress') refresh(); }, setLive);
  const timer = setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, 15000);
  return () => { close(); clearTimeout(pending); clearInterval(timer); };
}
