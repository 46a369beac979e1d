// The HTTP API, as the page uses it: JSON requests on this origin (the session cookie carries the
// token), and the event stream, which EventSource resumes by itself with Last-Event-ID.
export async function api(path, options = {}) {
  const response = await fetch(path, { credentials: 'same-origin', ...options,
                                       headers: { 'Content-Type': 'application/json', ...(options.headers || {}) } });
  const type = response.headers.get('content-type') || '';
  const body = type.includes('json') ? await response.json() : await response.text();
  if (!response.ok) throw new Error((body && body.error && body.error.message) || `${response.status} ${response.statusText}`);
  return body;
}

export const post = (path, body) => api(path, { method: 'POST', body: JSON.stringify(body || {}) });

const kEvents = ['job_started', 'progress', 'decoding', 'job_done', 'job_failed', 'job_canceled', 'run_done', 'resync'];

// Calls onEvent(name, data) for each event (of `run`, or of every run), onLive(true|false) as the
// stream connects and drops. Returns a function that closes it.
export function watch(run, onEvent, onLive) {
  const source = new EventSource('/api/v1/events' + (run ? `?run=${run}` : ''));
  source.onopen = () => onLive(true);
  source.onerror = () => onLive(false);
  for (const name of kEvents) {
    source.addEventListener(name, (e) => onEvent(name, e.data ? JSON.parse(e.data) : {}));
  }
  return () => source.close();
}

export function toast(text) {
  const t = document.getElementById('toast');
  t.textContent = text;
  t.classList.add('show');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.classList.remove('show'), 2500);
}

// Text for the page: never HTML.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) {
    if (k === 'class') node.className = v;
    else if (k === 'style') node.style.cssText = v;  // CSSOM: allowed by the page's CSP, unlike a style attribute
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

export function duration(seconds) {
  if (!isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
