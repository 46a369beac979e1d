// The HTTP API, as the page uses it. No cookie carries the token (a browser would send a host's
// cookies to every port of it): the page keeps it in its own origin's storage, which another port
// cannot read, and sends it as a header; `rgbaq gallery` opens `/?token=...`, which the server moves
// into the address's fragment, where the page takes it from. Images, which an <img> fetches without
// headers, carry a media key instead (an expiring HMAC that opens images and thumbnails only).
const kTokenKey = 'rgbaq_token';
let mediaKey = null;  // {key, expires_at}

function takeTokenFromAddress() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get('token');
  if (!token) return;
  localStorage.setItem(kTokenKey, token);
  fragment.delete('token');
  const rest = fragment.toString();
  history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
}
takeTokenFromAddress();

export const token = () => localStorage.getItem(kTokenKey);

function authorized(headers = {}) {
  const t = token();
  return t ? { ...headers, Authorization: `Bearer ${t}` } : headers;
}

export class Unauthorized extends Error {}

export async function api(path, options = {}) {
  const response = await fetch(path, { ...options, credentials: 'omit',
                                       headers: authorized({ 'Content-Type': 'application/json', ...(options.headers || {}) }) });
  const type = response.headers.get('content-type') || '';
  const body = type.includes('json') ? await response.json() : await response.text();
  if (response.status === 401) {
    localStorage.removeItem(kTokenKey);
    throw new Unauthorized('this page needs the daemon\'s token: open it with `rgbaq gallery`');
  }
  if (!response.ok) throw new Error((body && body.error && body.error.message) || `${response.status} ${response.statusText}`);
  return body;
}

export const post = (path, body) => api(path, { method: 'POST', body: JSON.stringify(body || {}) });

// Fetches the media key, and a fresh one an hour before it expires (a failed refresh, say while the
// daemon restarts, is tried again a minute later; a tab back from sleep checks at once).
export async function refreshMediaKey() {
  clearTimeout(refreshMediaKey.timer);
  try {
    mediaKey = await api('/api/v1/media-key');
  } catch (e) {
    if (!(e instanceof Unauthorized)) refreshMediaKey.timer = setTimeout(() => refreshMediaKey().catch(() => {}), 60000);
    throw e;
  }
  const left = mediaKey.expires_at * 1000 - Date.now();
  refreshMediaKey.timer = setTimeout(() => refreshMediaKey().catch(() => {}), Math.max(60000, left - 3600000));
}
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && mediaKey && mediaKey.expires_at * 1000 - Date.now() < 3600000) {
    refreshMediaKey().catch(() => {});
  }
});

// An image or thumbnail route's address, with the media key an <img> needs.
export function mediaUrl(path) {
  return `${path}${path.includes('?') ? '&' : '?'}key=${encodeURIComponent(mediaKey ? mediaKey.key : '')}`;
}

const kEvents = ['job_started', 'progress', 'decoding', 'job_done', 'job_failed', 'job_canceled', 'job_reseeded', 'run_done', 'resync'];

// Calls onEvent(name, data) for each event (of `run`, or of every run), onLive(true|false) as the
// stream connects and drops. The stream is read with fetch (EventSource cannot send the token) and,
// as EventSource does, resumed after a drop with Last-Event-ID. Returns a function that closes it.
export function watch(run, onEvent, onLive) {
  let closed = false, lastId = '', retry = 2000, controller = null;
  const dispatch = (block) => {
    let name = 'message', data = '', id = null;
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':');
      if (colon === 0) continue;  // a comment (keep-alive)
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') name = value;
      else if (field === 'data') data += (data ? '\n' : '') + value;
      else if (field === 'id') id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    }
    if (kEvents.includes(name)) {
      try {
        onEvent(name, data ? JSON.parse(data) : {});
      } catch (e) {
        console.warn(`event ${name}: ${e}`);  // one bad event does not end the stream
      }
    }
    if (id !== null) lastId = id;
  };
  const connect = async () => {
    controller = new AbortController();
    try {
      const headers = authorized(lastId ? { 'Last-Event-ID': lastId } : {});
      const response = await fetch('/api/v1/events' + (run ? `?run=${run}` : ''), { headers, credentials: 'omit', signal: controller.signal });
      if (response.status === 401) {
        localStorage.removeItem(kTokenKey);
        closed = true;  // the token is not this daemon's: retrying cannot help
      }
      if (!response.ok) throw new Error(`${response.status}`);
      onLive(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        // Line ends: CRLF, CR or LF; a CR at the end of a chunk may be the first half of a CRLF.
        const held = buffer.endsWith('\r') ? '\r' : '';
        buffer = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, '\n');
        for (let end; (end = buffer.indexOf('\n\n')) >= 0;) {
          dispatch(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        buffer += held;
      }
    } catch (e) {
      // dropped, refused or closed: retried below unless closed
    } finally {
      controller.abort();  // whatever ended the read, the response is let go
    }
    if (closed) return;
    onLive(false);
    setTimeout(() => { if (!closed) connect(); }, retry);
  };
  connect();
  return () => { closed = true; if (controller) controller.abort(); };
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
