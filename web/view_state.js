// What the page shows, kept in the address (so a view can be bookmarked and survives a reload):
// run, layout, filters, background; a template's choice filter (choice=NAME=VALUE) and the sheet's
// axes (x, y: seed, prompt or a template variable); the alpha check's filter (qa: ok or a flag).
const kKeys = ['run', 'layout', 'state', 'mark', 'q', 'seed', 'size', 'lora', 'bg', 'color', 'choice', 'x', 'y', 'qa'];

export function read() {
  const p = new URLSearchParams(location.search);
  const v = {};
  for (const k of kKeys) if (p.get(k)) v[k] = p.get(k);
  return v;
}

export function write(v, push = false) {
  const p = new URLSearchParams();
  for (const k of kKeys) if (v[k] !== undefined && v[k] !== null && v[k] !== '') p.set(k, v[k]);
  const url = '/' + (p.toString() ? `?${p}` : '');
  if (url === location.pathname + location.search) return;
  if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
}

// Whether `job` passes the filters of `v`.
export function passes(v, job) {
  if (v.state && job.state !== v.state) return false;
  if (v.mark === 'star' || v.mark === 'reject') { if (job.mark !== v.mark) return false; }
  else if (v.mark === 'none' && job.mark) return false;
  if (v.q && !job.prompt.toLowerCase().includes(v.q.toLowerCase())) return false;
  if (v.seed && String(job.seed) !== v.seed) return false;
  if (v.size && `${job.width}x${job.height}` !== v.size) return false;
  if (v.lora && !(job.lora || '').toLowerCase().includes(v.lora.toLowerCase())) return false;
  if (v.qa) {
    const flags = qaFlags(job);
    if (!flags || (v.qa === 'ok' ? flags.length > 0 : !flags.includes(v.qa))) return false;
  }
  if (v.choice) {
    const at = v.choice.indexOf('=');
    const name = at < 0 ? v.choice : v.choice.slice(0, at);
    const choices = job.choices || {};
    if (!(name in choices) || (at >= 0 && choices[name] !== v.choice.slice(at + 1))) return false;
  }
  return true;
}

// The alpha check's flags of a job (an empty list: ok), or null before its check (not done yet).
export function qaFlags(job) {
  return job.qa && Array.isArray(job.qa.flags) ? job.qa.flags : null;
}

// A template's variables in their order: numbered groups by number, then the named ones.
export function orderVariables(names) {
  const numbered = (n) => /^[0-9]+$/.test(n);
  return [...names].sort((a, b) => (numbered(a) && numbered(b) ? Number(a) - Number(b)
    : numbered(a) ? -1 : numbered(b) ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

// The value of a sheet axis for a job, as `rgbaq sheet --x/--y` labels it.
export function axisValue(job, axis) {
  if (axis === 'seed') return `seed ${job.seed}`;
  if (axis === 'prompt') return job.prompt;
  const choices = job.choices || {};
  if (!(axis in choices)) return '(none)';
  return choices[axis] === '' ? '(empty)' : choices[axis];
}

const kBackgrounds = ['checker', 'black', 'white', 'custom'];

export function applyBackground(v) {
  const bg = kBackgrounds.includes(v.bg) ? v.bg : 'checker';
  document.body.className = `bg-${bg}`;
  if (v.color) document.body.style.setProperty('--custom-bg', v.color);
}

// What the background in use is called, for the labels that show it.
export function backgroundName(v) {
  const bg = kBackgrounds.includes(v.bg) ? v.bg : 'checker';
  return bg === 'checker' ? 'checkerboard' : bg === 'custom' ? `colour ${v.color || '#808080'}` : bg;
}

export function nextBackground(v) {
  const i = kBackgrounds.indexOf(v.bg || 'checker');
  v.bg = kBackgrounds[(i + 1) % kBackgrounds.length];
  applyBackground(v);
  return v.bg;
}
