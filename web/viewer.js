// The viewer: the image at the grid's cursor at full size with its metadata; the grid's keys step
// through it. Compare: pin one image and step the others beside it, or a slider between the two.
import { api, el, toast, mediaUrl } from './api.js';

function timings(t) {
  const s = (v) => (typeof v === 'number' ? `${v.toFixed(2)} s` : '?');
  const steps = Array.isArray(t.steps_s) ? `${t.steps_s.length} steps ${s(t.steps_s.reduce((a, b) => a + b, 0))}` : '';
  return [t.total_s !== undefined ? `total ${s(t.total_s)}` : '', t.encode_s !== undefined ? `encode ${s(t.encode_s)}` : '', steps,
          t.decode_s !== undefined ? `decode ${s(t.decode_s)}` : ''].filter(Boolean).join(', ');
}

export class Viewer {
  constructor(grid) {
    this.grid = grid;
    this.pinned = null;     // a job, when comparing
    this.mode = 'side';     // 'side' | 'slider'
    this.node = null;
  }

  isOpen() { return !!this.node; }

  open() {
    if (!this.grid.current()) return;
    if (!this.node) {
      this.stage = el('div', { id: 'stage' });
      this.meta = el('div', { id: 'meta' });
      this.node = el('div', { id: 'viewer', class: 'on' }, this.stage, this.meta);
      document.body.append(this.node);
    }
    this.refresh();
  }

  close() {
    if (this.node) this.node.remove();
    this.node = null;
  }

  pin() {
    const job = this.grid.current();
    if (this.pinned && (!job || this.pinned.id === job.id)) {
      this.pinned = null;
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

  frame(job, tag) {
    const image = job.state === 'done'
      ? el('img', { src: mediaUrl(`/api/v1/jobs/${job.id}/image?v=${job.finished_at}`), alt: `seed ${job.seed}` })
      : el('div', { class: 'state' }, job.state === 'failed' ? `failed: ${job.error}` : job.state);
    return el('div', { class: 'frame', 'data-job': job.id }, tag ? el('span', { class: 'tag' }, tag) : '', el('div', { class: 'backdrop' }, image));
  }

  refresh() {
    if (!this.node) return;
    const job = this.grid.current();
    if (!job) return this.close();
    if (this.pinned && this.pinned.id !== job.id && this.mode === 'slider') {
      const under = el('img', { src: mediaUrl(`/api/v1/jobs/${this.pinned.id}/image`), alt: 'pinned' });
      const overImage = el('img', { src: mediaUrl(`/api/v1/jobs/${job.id}/image`), alt: 'current' });
      const over = el('div', { class: 'over', style: 'clip-path: inset(0 0 0 50%)' }, overImage);
      const range = el('input', { type: 'range', min: 0, max: 100, value: 50, 'aria-label': 'compare slider',
                                  oninput: (e) => { over.style.clipPath = `inset(0 0 0 ${e.target.value}%)`; } });
      this.stage.replaceChildren(el('div', { class: 'frame' }, el('span', { class: 'tag' }, `seed ${this.pinned.seed} | seed ${job.seed}`),
        el('div', { class: 'backdrop slider-wrap' }, under, over, range)));
    } else if (this.pinned && this.pinned.id !== job.id) {
      this.stage.replaceChildren(this.frame(this.pinned, `pinned: seed ${this.pinned.seed}`), this.frame(job, `seed ${job.seed}`));
    } else {
      this.stage.replaceChildren(this.frame(job, this.pinned ? 'pinned' : ''));
    }
    this.showMeta(job);
  }

  async showMeta(job) {
    const meta = job.metadata || {};
    const loras = (meta.loras || []).map((l) => `${l.name} ${l.weight}`).join(', ') || job.lora || 'none';
    const t = meta.timings || {};
    const row = (k, v) => [el('dt', {}, k), el('dd', {}, v === undefined || v === null || v === '' ? '—' : String(v))];
    const markText = job.mark === 'star' ? '★ starred' : job.mark === 'reject' ? '✕ rejected' : 'unmarked';
    this.meta.replaceChildren(
      el('dl', {},
        row('prompt', job.prompt), row('seed', job.seed), row('size', `${job.width}x${job.height}`), row('LoRAs', loras),
        row('model', meta.model ? `${meta.model.name} (${String(meta.model.identity || '').slice(0, 10)})` : ''),
        row('host and device', [job.host, job.device || meta.device || meta.engine].filter(Boolean).join(', ')),
        row('timings', timings(t)),
        row('job', `#${job.id}, ${job.state}${job.error ? ': ' + job.error : ''}`),
        el('dt', {}, 'mark'), el('dd', { class: `mark-${job.mark || 'none'}` }, markText)),
      el('div', { class: 'actions' },
        el('button', { type: 'button', onclick: () => this.grid.mark('star', [job.id]) }, '★ s'),
        el('button', { type: 'button', onclick: () => this.grid.mark('reject', [job.id]) }, '✕ x'),
        el('button', { type: 'button', onclick: () => this.grid.mark(null, [job.id]) }, 'clear u'),
        el('button', { type: 'button', onclick: () => this.copyParameters(job) }, 'copy parameters'),
        job.state === 'failed' ? el('button', { type: 'button', onclick: () => this.grid.retry([job.id]) }, 'retry') : '',
        el('button', { type: 'button', onclick: () => this.close() }, 'close Esc')));
    if (!job.metadata && job.state === 'done') {
      const full = await api(`/api/v1/jobs/${job.id}`);
      Object.assign(job, full);
      if (this.grid.current() === job) this.showMeta(job);
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
