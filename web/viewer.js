// The viewer: the image at the grid's cursor at full size with its metadata; the grid's keys (or its
// buttons, on a phone) step through it. Compare: pin one image and step the others beside it, or wipe
// between the two with a slider.
import { api, el, toast, mediaUrl } from './api.js';
import * as viewState from './view_state.js';

function timings(t) {
  const s = (v) => (typeof v === 'number' ? `${v.toFixed(2)} s` : '?');
  const steps = Array.isArray(t.steps_s) ? `${t.steps_s.length} steps ${s(t.steps_s.reduce((a, b) => a + b, 0))}` : '';
  return [t.total_s !== undefined ? `total ${s(t.total_s)}` : '', t.encode_s !== undefined ? `encode ${s(t.encode_s)}` : '', steps,
          t.decode_s !== undefined ? `decode ${s(t.decode_s)}` : ''].filter(Boolean).join(', ');
}

// The alpha check's flags and figures (rgbaq qa's), or nothing before the job is done.
function alphaCheckText(qa) {
  if (!qa || !Array.isArray(qa.flags)) return '';
  const pct = (f) => `${(100 * f).toFixed(1)}%`;
  const box = Array.isArray(qa.bbox) ? `${qa.bbox[0]},${qa.bbox[1]} ${qa.bbox[2]}x${qa.bbox[3]}` : 'none';
  return `${qa.flags.length ? qa.flags.join(', ') : 'ok'} (transparent ${pct(qa.transparent)}, opaque ${pct(qa.opaque)}, ` +
         `bbox ${box}, ${qa.components} components, edge ${pct(qa.edge)})`;
}

const fileName = (job) => String(job.output || '').split('/').pop();
const choicesText = (choices) => viewState.orderVariables(Object.keys(choices || {}))
  .map((n) => `${n} = ${choices[n] === '' ? '(empty)' : choices[n]}`).join(', ');
const imageUrl = (job) => mediaUrl(`/api/v1/jobs/${job.id}/image?v=${job.finished_at}`);
// The image's aspect, for the CSS that fits its own rectangle into the frame (gallery.css, .fit).
const aspect = (job) => `--w:${job.width || 1};--h:${job.height || 1}`;

export class Viewer {
  constructor(grid) {
    this.grid = grid;
    this.pinned = null;     // a job, when comparing
    this.mode = 'side';     // 'side' | 'slider'
    this.wipeAt = 50;       // the slider's place, % of the width from the left
    this.node = null;
    this.shown = '';        // what the stage shows: it is rebuilt only when that changes
  }

  isOpen() { return !!this.node; }

  open() {
    if (!this.grid.current()) return;
    if (!this.node) {
      this.stage = el('div', { id: 'stage' });
      this.meta = el('div', { id: 'meta' });
      this.node = el('div', { id: 'viewer', class: 'on' }, this.stage, this.meta);
      this.shown = '';
      document.body.append(this.node);
    }
    this.refresh();
  }

  close() {
    if (this.node) this.node.remove();
    this.node = null;
  }

  // p pins the image at the cursor; p again (on whichever image) unpins, as the key list says.
  pin() {
    const job = this.grid.current();
    if (this.pinned) {
      this.pinned = null;
      this.mode = 'side';
      toast('unpinned');
    } else if (job) {
      this.pinned = job;
      this.mode = 'side';
      toast(`pinned seed ${job.seed}: step to compare (p unpins, c slider)`);
      this.open();
    }
    this.refresh();
  }

  slider() {
    if (!this.pinned) return toast('pin an image first (p)');
    this.mode = this.mode === 'slider' ? 'side' : 'slider';
    this.open();
  }

  // The image's own rectangle on the background, with a thin outline: its canvas edges show.
  frame(job, tag) {
    const content = job.state === 'done'
      ? el('img', { class: 'fit backdrop', src: imageUrl(job), alt: `seed ${job.seed}`, style: aspect(job) })
      : el('div', { class: 'state' }, job.state === 'failed' ? `failed: ${job.error}` : job.state);
    return el('div', { class: 'frame', 'data-job': job.id }, tag ? el('span', { class: 'tag' }, tag) : '', el('div', { class: 'area' }, content));
  }

  // A wipe: both images in one box at one scale, the pinned one left of the divider and the current one
  // right of it, each clipped to its side on its own background (neither shows through the other).
  wipe(job) {
    const under = el('img', { class: 'backdrop', src: imageUrl(this.pinned), alt: `pinned: seed ${this.pinned.seed}` });
    const over = el('img', { class: 'backdrop', src: imageUrl(job), alt: `seed ${job.seed}` });
    const divider = el('div', { class: 'divider' });
    const place = (at) => {
      this.wipeAt = at;
      under.style.clipPath = `inset(0 ${100 - at}% 0 0)`;
      over.style.clipPath = `inset(0 0 0 ${at}%)`;
      divider.style.left = `${at}%`;
    };
    place(this.wipeAt);
    const range = el('input', { type: 'range', min: 0, max: 100, value: this.wipeAt, 'aria-label': 'compare slider',
                                oninput: (e) => place(Number(e.target.value)) });
    return el('div', { class: 'frame wipe-frame', 'data-job': job.id },
      el('span', { class: 'tag' }, `pinned: seed ${this.pinned.seed} | seed ${job.seed}`),
      el('div', { class: 'area' }, el('div', { class: 'fit wipe', style: aspect(job) }, under, over, divider)),
      range);
  }

  refresh() {
    if (!this.node) return;
    const job = this.grid.current();
    if (!job) return this.close();
    const comparing = this.pinned && this.pinned.id !== job.id && this.pinned.state === 'done';
    const slider = comparing && this.mode === 'slider' && job.state === 'done';
    const shown = [job.id, job.state, job.finished_at, this.pinned ? this.pinned.id : '', comparing ? this.mode : ''].join('|');
    if (shown !== this.shown) {
      this.shown = shown;
      if (slider) this.stage.replaceChildren(this.wipe(job));
      else if (comparing) this.stage.replaceChildren(this.frame(this.pinned, `pinned: seed ${this.pinned.seed}`), this.frame(job, `seed ${job.seed}`));
      else this.stage.replaceChildren(this.frame(job, this.pinned ? 'pinned' : ''));
    }
    this.showMeta(job);
  }

  showBackground() {
    if (this.backgroundButton) this.backgroundButton.textContent = `background: ${viewState.backgroundName(this.grid.v)} (b)`;
  }

  async showMeta(job) {
    const meta = job.metadata || {};
    const loras = (meta.loras || []).map((l) => `${l.name} ${l.weight}`).join(', ') || job.lora || 'none';
    const t = meta.timings || {};
    const row = (k, v) => [el('dt', {}, k), el('dd', {}, v === undefined || v === null || v === '' ? '—' : String(v))];
    const markText = job.mark === 'star' ? '★ starred' : job.mark === 'reject' ? '✕ rejected' : 'unmarked';
    const button = (label, fn, title) => el('button', { type: 'button', onclick: fn, title }, label);
    this.backgroundButton = button('', () => this.grid.nextBackground(), 'b');
    this.showBackground();
    this.meta.replaceChildren(
      el('div', { class: 'actions nav' },
        button('‹ prev', () => this.grid.move(-1, 0), 'left arrow'), button('next ›', () => this.grid.move(1, 0), 'right arrow'),
        button('close', () => this.close(), 'Esc')),
      el('dl', {},
        row('prompt', job.prompt),
        // A template's job: the prompt as written and what it chose ({...} groups by number, wildcards by name).
        ...(job.template ? [...row('template', job.template), ...row('choices', choicesText(job.choices))] : []),
        el('dt', {}, 'file'), el('dd', { class: 'file', title: job.output || '' }, fileName(job) || '—'),
        row('seed', job.seed), row('size', `${job.width}x${job.height}`), row('LoRAs', loras),
        row('model', meta.model ? `${meta.model.name} (${String(meta.model.identity || '').slice(0, 10)})` : ''),
        row('host and device', [job.host, job.device || meta.device || meta.engine].filter(Boolean).join(', ')),
        row('timings', timings(t)),
        row('job', `#${job.id}, ${job.state}${job.error ? ': ' + job.error : ''}${job.replaces ? `, re-seeds #${job.replaces}` : ''}` +
                   `${job.replaced_by ? `, re-seeded by #${job.replaced_by}` : ''}`),
        row('alpha check', alphaCheckText(job.qa)),
        el('dt', {}, 'mark'), el('dd', { class: `mark-${job.mark || 'none'}` }, markText)),
      el('div', { class: 'actions' },
        button('★ s', () => this.grid.mark('star', [job.id])),
        button('✕ x', () => this.grid.mark('reject', [job.id])),
        button('clear u', () => this.grid.mark(null, [job.id])),
        button(this.pinned ? 'unpin p' : 'pin p', () => this.pin()),
        this.pinned && this.pinned.id !== job.id ? button(this.mode === 'slider' ? 'side by side c' : 'slider c', () => this.slider()) : '',
        this.backgroundButton,
        button('copy parameters', () => this.copyParameters(job)),
        job.state === 'failed' ? button('retry', () => this.grid.retry([job.id])) : ''));
    if (job.metadata === undefined && job.state === 'done') {
      const full = await api(`/api/v1/jobs/${job.id}`);
      Object.assign(job, full);
      if (this.grid.current() === job && this.node) this.showMeta(job);
    }
  }

  async copyParameters(job) {
    try {
      const { parameters } = await api(`/api/v1/jobs/${job.id}/parameters`);
      await navigator.clipboard.writeText(parameters);
      toast('parameters copied');
    } catch (e) { toast(`not copied: ${e.message}`); }
  }
}
