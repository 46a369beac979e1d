// One run: a grid of prompts down and seeds across (as the contact sheet) or a plain grid, virtualised
// (only the rows in sight are in the page), with a cursor, a selection, marks by key, filters in the
// address, and live updates from the event stream. A mouse click selects and a double click opens the
// viewer; on a touch screen a tap opens the viewer and a long press (or a tap in select mode) selects.
import { api, post, el, toast, watch, mediaUrl } from './api.js';
import * as viewState from './view_state.js';
import { Viewer } from './viewer.js';

const kLabel = 20;   // a sheet row's prompt line, px
// The alpha check's flags (assets/alpha_check.h), for its filter.
const kQaFlags = ['empty', 'no_alpha', 'cut_off', 'fragmented', 'fake_transparency'];

// A done job's alpha check as a badge on its cell: "ok", or its flags; none before the check.
function qaBadge(job) {
  const flags = viewState.qaFlags(job);
  if (!flags) return null;
  const text = flags.length ? flags.join(' · ') : 'ok';
  return el('div', { class: `qa-badge ${flags.length ? 'flagged' : 'ok'}`, title: `alpha check: ${text}` }, text);
}

export class RunView {
  constructor(main, v, setLive) {
    this.main = main;
    this.v = v;
    this.setLive = setLive;
    this.jobs = [];          // every job of the run, by id
    this.byId = new Map();
    this.rows = [];          // [{label, jobs: [...]}] after the filters
    this.cursor = { row: 0, col: 0 };
    this.selected = new Set();
    this.anchor = null;      // for shift-click ranges
    this.undo = [];          // [{marks: [[id, previous mark]...]}]
    this.selectMode = false; // taps select instead of opening the viewer (touch screens)
    this.press = null;       // a touch held on a cell: {timer}
    this.pointerType = '';   // of the last pointer down: a tap and a click differ
    this.longPressed = false;
    this.viewer = new Viewer(this);
  }

  async open() {
    const run = Number(this.v.run);
    this.run = await api(`/api/v1/runs/${run}`);
    document.getElementById('crumb').textContent = `run #${run}: ${this.run.name || ''} (${this.run.total} jobs)`;
    this.build();
    await this.load();
    this.closeEvents = watch(run, (name, data) => this.onEvent(name, data), this.setLive);
  }

  close() {
    if (this.closeEvents) this.closeEvents();
    this.viewer.close();
  }

  async load() {
    const jobs = [];
    for (let offset = 0; ; offset += 10000) {
      const page = (await api(`/api/v1/runs/${this.run.id}/jobs?limit=10000&offset=${offset}`)).jobs;
      jobs.push(...page);
      if (page.length < 10000) break;
    }
    this.jobs = jobs;
    this.byId = new Map(jobs.map((j) => [j.id, j]));
    this.fillTemplateTools();
    this.layout();
  }

  // The choice filter's options (each variable's values, in first appearance) and the axes' (seed,
  // prompt and each variable); hidden for a run without templates.
  fillTemplateTools() {
    const values = new Map();
    for (const j of this.jobs) {
      for (const [name, value] of Object.entries(j.choices || {})) {
        if (!values.has(name)) values.set(name, new Set());
        values.get(name).add(value);
      }
    }
    const names = viewState.orderVariables(values.keys());
    for (const node of [this.choiceSelect, this.xSelect, this.ySelect]) node.hidden = !names.length;
    const option = (key, value, label) => el('option', { value, selected: (this.v[key] || '') === value }, label);
    this.choiceSelect.setAttribute('aria-label', 'choice filter');
    this.choiceSelect.replaceChildren(option('choice', '', 'any choice'), ...names.flatMap((n) => [...values.get(n)].map(
      (value) => option('choice', `${n}=${value}`, `${n} = ${value === '' ? '(empty)' : value}`))));
    this.xSelect.setAttribute('aria-label', 'columns');
    this.xSelect.replaceChildren(option('x', '', 'across: seed'), option('x', 'prompt', 'across: prompt'),
                                 ...names.map((n) => option('x', n, `across: ${n}`)));
    this.ySelect.setAttribute('aria-label', 'rows');
    this.ySelect.replaceChildren(option('y', '', 'down: prompt'), option('y', 'seed', 'down: seed'),
                                 ...names.map((n) => option('y', n, `down: ${n}`)));
  }

  build() {
    const v = this.v;
    const input = (key, attrs) => el('input', { ...attrs, value: v[key] || '', 'data-filter': key,
                                                 oninput: (e) => { v[key] = e.target.value.trim(); this.filtersChanged(); } });
    const select = (key, options) => el('select', { 'data-filter': key, onchange: (e) => { v[key] = e.target.value; this.filtersChanged(); } },
      options.map(([value, label]) => el('option', { value, selected: (v[key] || '') === value }, label)));
    this.count = el('span', { class: 'count' });
    this.tools = el('div', { id: 'tools' },
      input('q', { type: 'search', placeholder: 'prompt contains…', 'aria-label': 'prompt filter', id: 'filter-q' }),
      input('seed', { type: 'search', placeholder: 'seed', size: 8, 'aria-label': 'seed filter' }),
      input('size', { type: 'search', placeholder: 'WxH', size: 8, 'aria-label': 'size filter' }),
      input('lora', { type: 'search', placeholder: 'LoRA', size: 8, 'aria-label': 'LoRA filter' }),
      select('state', [['', 'any state'], ['done', 'done'], ['queued', 'queued'], ['running', 'running'], ['failed', 'failed'], ['canceled', 'canceled']]),
      select('mark', [['', 'any mark'], ['star', 'starred'], ['reject', 'rejected'], ['none', 'unmarked']]),
      select('qa', [['', 'any alpha'], ['ok', 'alpha ok'], ...kQaFlags.map((f) => [f, f])]),
      // A run of templates: a filter by one choice, and the sheet's axes (filled in once its jobs are in).
      this.choiceSelect = select('choice', []), this.xSelect = select('x', []), this.ySelect = select('y', []),
      el('button', { type: 'button', onclick: () => this.toggleLayout(), title: 'g' }, 'layout'),
      this.backgroundButton = el('button', { type: 'button', onclick: () => this.nextBackground(), title: 'b', id: 'background' }, ''),
      el('input', { type: 'color', 'aria-label': 'background colour', value: v.color || '#808080',
                    oninput: (e) => { v.color = e.target.value; v.bg = 'custom'; viewState.applyBackground(v); viewState.write(v); this.showBackground(); } }),
      this.selectModeButton = el('button', { type: 'button', id: 'select-mode', 'aria-pressed': 'false', onclick: () => this.toggleSelectMode(),
                                             title: 'taps select (a long press selects too)' }, 'select'),
      this.count);
    this.showBackground();
    const act = (label, fn, title) => el('button', { type: 'button', onclick: fn, title }, label);
    this.selectionCount = el('span');
    this.moreSeeds = el('input', { type: 'number', min: 1, max: 64, value: 4, size: 3, 'aria-label': 'how many more seeds' });
    this.selectionBar = el('div', { id: 'selection' }, this.selectionCount,
      act('★ star', () => this.mark('star'), 's'), act('✕ reject', () => this.mark('reject'), 'x'), act('clear', () => this.mark(null), 'u'),
      act('retry failed', () => this.retrySelected()), act('export JSONL', () => this.exportSelection('jsonl')),
      act('export CSV', () => this.exportSelection('csv')), act('copy PNGs to…', () => this.copySelection()), act('export assets to…', () => this.exportAssets()), this.moreSeeds, act('more seeds like these', () => this.queueMoreSeeds()),
      act('select none', () => this.clearSelection(), 'Esc'));
    this.spacer = el('div', { id: 'spacer' });
    this.scroller = el('div', { id: 'scroller', tabindex: 0, onscroll: () => this.schedule() }, this.spacer);
    this.main.replaceChildren(this.tools, this.selectionBar, this.scroller);
    this.resize = new ResizeObserver(() => this.layout());
    this.resize.observe(this.scroller);
    this.scroller.focus();
  }

  filtersChanged() {
    viewState.write(this.v);
    this.layout();
  }

  toggleLayout() {
    this.v.layout = this.v.layout === 'grid' ? 'sheet' : 'grid';
    viewState.write(this.v);
    this.layout();
  }

  nextBackground() {
    viewState.nextBackground(this.v);
    viewState.write(this.v);
    this.showBackground();
  }

  // The background in use, named where it is chosen (and in the viewer), not only in a passing toast.
  showBackground() {
    this.backgroundButton.textContent = `background: ${viewState.backgroundName(this.v)}`;
    this.viewer.showBackground();
  }

  toggleSelectMode() {
    this.selectMode = !this.selectMode;
    this.selectModeButton.setAttribute('aria-pressed', String(this.selectMode));
    this.selectModeButton.classList.toggle('on', this.selectMode);
  }

  clearFilters() {
    for (const k of ['q', 'seed', 'size', 'lora', 'state', 'mark', 'choice', 'qa']) delete this.v[k];
    this.tools.querySelectorAll('[data-filter]').forEach((node) => { node.value = ''; });
    this.filtersChanged();
  }

  cellWidth() { return parseFloat(getComputedStyle(document.documentElement).getPropertyValue('--cell')) + 8; }
  rowHeight() { return this.cellWidth() + 22 + (this.sheet() ? kLabel : 0); }
  sheet() { return this.v.layout !== 'grid'; }

  // The filtered jobs as rows: one per prompt (seeds in order) on a sheet, else as many as fit a row.
  layout() {
    const shown = this.jobs.filter((j) => viewState.passes(this.v, j));
    this.rows = [];
    if (this.sheet() && this.axes()) {
      this.rows = this.axisRows(shown);
    } else if (this.sheet()) {
      const byPrompt = new Map();
      for (const j of shown) {
        const key = `${j.prompt}\u0000${j.width}x${j.height}\u0000${j.lora}`;
        if (!byPrompt.has(key)) byPrompt.set(key, { label: j.prompt, jobs: [] });
        byPrompt.get(key).jobs.push(j);
      }
      for (const row of byPrompt.values()) {
        row.jobs.sort((a, b) => (a.seed < b.seed ? -1 : a.seed > b.seed ? 1 : a.id - b.id));
        this.rows.push(row);
      }
    } else {
      const per = Math.max(1, Math.floor((this.scroller.clientWidth - 24) / this.cellWidth()));
      for (let i = 0; i < shown.length; i += per) this.rows.push({ label: '', jobs: shown.slice(i, i + per) });
    }
    this.shownCount = shown.length;
    this.count.textContent = `${shown.length} of ${this.jobs.length} shown`;
    this.cursor.row = Math.min(this.cursor.row, Math.max(0, this.rows.length - 1));
    this.clampCursor();
    const widest = Math.max(0, ...this.rows.map((r) => r.jobs.length));
    this.spacer.style.height = `${this.rows.length * this.rowHeight() + 12}px`;
    this.spacer.style.width = `${widest * this.cellWidth() + 24}px`;
    this.rendered = new Map();
    this.spacer.replaceChildren();
    if (!shown.length && this.jobs.length) {
      this.spacer.style.height = '';
      this.spacer.append(el('p', { class: 'no-match' }, `no image matches these filters (of ${this.jobs.length}) `,
                            el('button', { type: 'button', onclick: () => this.clearFilters() }, 'clear the filters')));
    }
    this.draw();
  }

  // The sheet's axes when chosen (x across, y down) and different: {x, y}, else null (prompts x seeds).
  axes() {
    const x = this.v.x || 'seed', y = this.v.y || 'prompt';
    return (this.v.x || this.v.y) && x !== y ? { x, y } : null;
  }

  // The sheet by its axes, as `rgbaq sheet --x/--y` lays it: a row per y value and per value of what is
  // on neither axis (for a template variable's axis: the template and the other choices, not the
  // prompt; the seed, size and LoRAs), labelled with the y value (and that rest where it varies); in a
  // row, the jobs by their x value's first appearance in the run. Each cell's caption is its x value.
  axisRows(shown) {
    const { x, y } = this.axes();
    const variable = (a) => a !== 'seed' && a !== 'prompt';
    const restOf = (j) => {
      const parts = [];
      if (x !== 'prompt' && y !== 'prompt') {
        if (variable(x) || variable(y)) {
          parts.push(j.template || j.prompt);
          for (const n of viewState.orderVariables(Object.keys(j.choices || {}))) if (n !== x && n !== y) parts.push(`${n}=${j.choices[n]}`);
        } else parts.push(j.prompt);
      }
      if (x !== 'seed' && y !== 'seed') parts.push(`seed ${j.seed}`);
      parts.push(`${j.width}x${j.height}`, j.lora || '');
      return parts;
    };
    const columnOrder = new Map();
    const rows = new Map();
    for (const j of shown) {
      const column = viewState.axisValue(j, x);
      if (!columnOrder.has(column)) columnOrder.set(column, columnOrder.size);
      const rest = restOf(j);
      const key = JSON.stringify([viewState.axisValue(j, y), ...rest]);
      if (!rows.has(key)) rows.set(key, { value: viewState.axisValue(j, y), rest, jobs: [] });
      rows.get(key).jobs.push(j);
    }
    // The parts of the rest that differ between rows join the label.
    const all = [...rows.values()];
    const parts = all.reduce((n, r) => Math.max(n, r.rest.length), 0);
    const varies = Array.from({ length: parts }, (_, i) => new Set(all.map((r) => r.rest[i])).size > 1);
    return all.map((r) => {
      r.jobs.sort((a, b) => columnOrder.get(viewState.axisValue(a, x)) - columnOrder.get(viewState.axisValue(b, x)) || a.id - b.id);
      const detail = r.rest.filter((part, i) => part && varies[i]).join(', ');
      return { label: detail ? `${r.value} · ${detail}` : r.value, jobs: r.jobs };
    });
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = null; this.draw(); });
  }

  // Only the rows in sight (and one screen either side) are in the page.
  draw() {
    const h = this.rowHeight();
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / h) - 2);
    const last = Math.min(this.rows.length, Math.ceil((this.scroller.scrollTop + this.scroller.clientHeight) / h) + 2);
    for (const [i, node] of this.rendered) {
      if (i < first || i >= last) { node.remove(); this.rendered.delete(i); }
    }
    for (let i = first; i < last; ++i) {
      if (!this.rendered.has(i)) {
        const node = this.drawRow(i);
        this.rendered.set(i, node);
        this.spacer.append(node);
      }
    }
  }

  drawRow(i) {
    const row = this.rows[i];
    const top = i * this.rowHeight();
    const box = el('div', { class: 'row-box', 'data-row': i });
    if (this.sheet()) box.append(el('div', { class: 'row-label', style: `top:${top}px;max-width:${Math.max(300, this.scroller.clientWidth - 24)}px`, title: row.label }, row.label));
    const cells = el('div', { class: 'row', style: `top:${top + (this.sheet() ? kLabel : 0)}px` });
    row.jobs.forEach((job, col) => cells.append(this.drawCell(job, i, col)));
    box.append(cells);
    return box;
  }

  cellClasses(job, row, col) {
    const classes = ['cell', job.state];
    if (job.mark) classes.push(job.mark);
    if (this.selected.has(job.id)) classes.push('selected');
    if (this.cursor.row === row && this.cursor.col === col) classes.push('cursor');
    return classes.join(' ');
  }

  // Marks, the selection and the cursor change only classes: the cells (and their images) stay.
  restyle() {
    for (const [i, node] of this.rendered) {
      node.querySelectorAll('.cell').forEach((cell, col) => {
        const job = this.rows[i].jobs[col];
        const cls = this.cellClasses(job, i, col);
        if (cell.className !== cls) cell.className = cls;
      });
    }
    this.viewer.refresh();
  }

  // The checkerboard (or colour) is behind a loaded image only: a thumbnail on its way, or a cell with no
  // image, is plain (a fully transparent image would look the same on the checkerboard).
  drawCell(job, row, col) {
    let backdrop;
    if (job.state === 'done') {
      backdrop = el('div', { class: 'backdrop loading' });
      backdrop.append(el('img', { src: mediaUrl(`/api/v1/jobs/${job.id}/thumbnail?size=256&v=${job.finished_at}`), loading: 'lazy', alt: `seed ${job.seed}`,
                                  draggable: 'false', onload: () => { backdrop.className = 'backdrop loaded'; },
                                  onerror: () => { backdrop.className = 'backdrop broken'; } }));
    } else if (job.state === 'failed') {
      backdrop = el('div', { class: 'backdrop empty' }, el('div', { class: 'state' }, 'failed: ', job.error || '',
        el('div', {}, el('button', { type: 'button', onclick: (e) => { e.stopPropagation(); this.retry([job.id]); } }, 'retry'))));
    } else {
      backdrop = el('div', { class: 'backdrop empty' },
                    el('div', { class: 'state' }, job.state === 'running' ? `rendering ${job.step || 0}/${job.steps || '?'}` : job.state));
    }
    return el('div', { class: this.cellClasses(job, row, col), 'data-job': job.id, title: `${job.prompt}\nseed ${job.seed}`,
                       onpointerdown: (e) => this.pointerDown(job, row, col, e), onclick: (e) => this.activate(job, row, col, e),
                       ondblclick: () => { if (!this.touched()) this.viewer.open(); },
                       oncontextmenu: (e) => { if (this.touched()) e.preventDefault(); } },
              backdrop, ...[qaBadge(job)].filter(Boolean),
              el('div', { class: 'caption' }, this.sheet() && this.axes() ? viewState.axisValue(job, this.axes().x) : `seed ${job.seed}`));
  }

  touched() { return this.pointerType === 'touch' || this.pointerType === 'pen'; }

  // A touch held still for half a second selects the cell (and the click that follows does nothing else).
  pointerDown(job, row, col, e) {
    this.pointerType = e.pointerType || '';
    this.longPressed = false;
    if (this.press) clearTimeout(this.press.timer);
    this.press = null;
    if (!this.touched()) return;
    const cell = e.currentTarget;
    const end = () => {
      if (this.press) clearTimeout(this.press.timer);
      this.press = null;
      cell.removeEventListener('pointermove', moved);
      cell.removeEventListener('pointerup', end);
      cell.removeEventListener('pointercancel', end);
    };
    const moved = (m) => { if (Math.hypot(m.clientX - e.clientX, m.clientY - e.clientY) > 10) end(); };
    cell.addEventListener('pointermove', moved);
    cell.addEventListener('pointerup', end);
    cell.addEventListener('pointercancel', end);
    this.press = { timer: setTimeout(() => {
      end();
      this.longPressed = true;
      this.click(job, row, col, {});
    }, 500) };
  }

  // A click: with a mouse it selects; a tap opens the viewer on the image tapped, unless selecting.
  activate(job, row, col, e) {
    if (this.longPressed) { this.longPressed = false; return; }
    if (this.touched() && !this.selectMode && !this.selected.size) {
      this.cursor = { row, col };
      this.restyle();
      this.viewer.open();
      return;
    }
    this.click(job, row, col, e);
  }

  redraw(jobIds) {
    for (const [i, node] of this.rendered) {
      if (!jobIds || this.rows[i].jobs.some((j) => jobIds.has(j.id))) {
        const fresh = this.drawRow(i);
        node.replaceWith(fresh);
        this.rendered.set(i, fresh);
      }
    }
    this.viewer.refresh();
  }

  current() {
    const row = this.rows[this.cursor.row];
    return row ? row.jobs[this.cursor.col] : undefined;
  }

  clampCursor() {
    const row = this.rows[this.cursor.row];
    this.cursor.col = row ? Math.min(this.cursor.col, row.jobs.length - 1) : 0;
    if (this.cursor.col < 0) this.cursor.col = 0;
  }

  // Moves the cursor: dx through a row (seeds), dy through rows (prompts); rolls over row ends.
  move(dx, dy) {
    if (!this.rows.length) return;
    let { row, col } = this.cursor;
    if (dy) {
      row = Math.max(0, Math.min(this.rows.length - 1, row + dy));
    } else {
      col += dx;
      if (col >= this.rows[row].jobs.length) { if (row + 1 < this.rows.length) { row += 1; col = 0; } else col -= dx; }
      if (col < 0) { if (row > 0) { row -= 1; col = this.rows[row].jobs.length - 1; } else col = 0; }
    }
    this.cursor = { row, col };
    this.clampCursor();
    this.reveal();
    this.restyle();
  }

  reveal() {
    const top = this.cursor.row * this.rowHeight();
    if (top < this.scroller.scrollTop) this.scroller.scrollTop = top;
    else if (top + this.rowHeight() > this.scroller.scrollTop + this.scroller.clientHeight) this.scroller.scrollTop = top + this.rowHeight() - this.scroller.clientHeight;
    const left = this.cursor.col * this.cellWidth();
    if (left < this.scroller.scrollLeft) this.scroller.scrollLeft = left;
    else if (left + this.cellWidth() > this.scroller.scrollLeft + this.scroller.clientWidth) this.scroller.scrollLeft = left + this.cellWidth() - this.scroller.clientWidth + 24;
    this.draw();
  }

  shownJobs() { return this.rows.flatMap((r) => r.jobs); }

  click(job, row, col, e) {
    this.cursor = { row, col };
    if (e.shiftKey && this.anchor !== null) {
      const all = this.shownJobs();
      const a = all.findIndex((j) => j.id === this.anchor), b = all.findIndex((j) => j.id === job.id);
      for (let i = Math.min(a, b); i <= Math.max(a, b); ++i) this.selected.add(all[i].id);
    } else {
      if (this.selected.has(job.id)) this.selected.delete(job.id); else this.selected.add(job.id);
      this.anchor = job.id;
    }
    this.selectionChanged();
  }

  selectionChanged() {
    this.selectionBar.classList.toggle('on', this.selected.size > 0);
    this.selectionCount.textContent = `${this.selected.size} selected`;
    this.restyle();
  }

  clearSelection() {
    this.selected.clear();
    this.selectionChanged();
  }

  // The jobs an action is for: the selection, or the one at the cursor (or in the viewer).
  targets() {
    if (this.selected.size) return [...this.selected];
    const job = this.current();
    return job ? [job.id] : [];
  }

  async mark(mark, ids = this.targets(), remember = true) {
    if (!ids.length) return;
    const previous = ids.map((id) => [id, this.byId.get(id).mark || null]);
    for (const id of ids) this.byId.get(id).mark = mark;  // at once: the request follows
    this.restyle();
    try {
      await post('/api/v1/marks', { jobs: ids, mark });
      if (remember) this.undo.push(previous);
      toast(`${ids.length} ${mark ? (mark === 'star' ? 'starred' : 'rejected') : 'cleared'}${remember ? ' (z: undo)' : ''}`);
    } catch (e) {
      for (const [id, m] of previous) this.byId.get(id).mark = m;
      this.restyle();
      toast(`not marked: ${e.message}`);
    }
    if (this.v.mark) this.layout();
  }

  async undoMark() {
    const last = this.undo.pop();
    if (!last) return toast('nothing to undo');
    const byMark = new Map();
    for (const [id, m] of last) { if (!byMark.has(m)) byMark.set(m, []); byMark.get(m).push(id); }
    for (const [m, ids] of byMark) await this.mark(m, ids, false);
  }

  async retry(ids) {
    try {
      const r = await post('/api/v1/jobs/retry', { jobs: ids });
      toast(`${r.requeued} queued again`);
      await this.load();
    } catch (e) { toast(`not retried: ${e.message}`); }
  }

  retrySelected() {
    const failed = this.targets().filter((id) => ['failed', 'canceled'].includes(this.byId.get(id).state));
    if (!failed.length) return toast('no failed job selected');
    this.retry(failed);
  }

  exportSelection(format) {
    const jobs = this.targets().map((id) => this.byId.get(id));
    const columns = ['id', 'run', 'state', 'mark', 'prompt', 'seed', 'width', 'height', 'name', 'lora', 'output', 'host', 'error'];
    const cell = (v) => {
      let s = v === null || v === undefined ? '' : String(v);
      if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;  // a spreadsheet must not run it as a formula
      return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    };
    const text = format === 'csv'
      ? [columns.join(','), ...jobs.map((j) => columns.map((c) => cell(j[c])).join(','))].join('\n') + '\n'
      : jobs.map((j) => JSON.stringify(j)).join('\n') + '\n';
    const a = el('a', { href: URL.createObjectURL(new Blob([text], { type: format === 'csv' ? 'text/csv' : 'application/x-ndjson' })),
                        download: `run-${this.run.id}-selection.${format}` });
    document.body.append(a);
    a.click();
    a.remove();
  }

  async copySelection() {
    const folder = prompt('Copy the selected PNGs into this folder: ~/picked is "picked" in the home folder of the daemon\'s user ' +
                          '(~ and ~/... are expanded there), or any absolute path under it or under an rgbaqd --copy-root:',
                          localStorage.getItem('rgbaq-copy-folder') || '');
    if (!folder) return;
    localStorage.setItem('rgbaq-copy-folder', folder);
    try {
      const r = await post('/api/v1/jobs/copy', { jobs: this.targets(), folder });
      toast(`${r.copied} copied to ${r.folder}${r.already_there ? `, ${r.already_there} already there` : ''}${r.skipped.length ? `, ${r.skipped.length} not done` : ''}`);
    } catch (e) { toast(`not copied: ${e.message}`); }
  }

  // The selection as finished assets (rgbaq export --assets on the daemon's side): a folder as copy
  // takes it, then the CLI's options (--trim --pad PX --premultiplied --format F --sizes S,S --atlas NAME
  // --atlas-max PX), both remembered.
  async exportAssets() {
    const folder = prompt('Export the selected images as assets into this folder (~/... in the home folder of the daemon\'s user, ' +
                          'or an absolute path under it or under an rgbaqd --copy-root):',
                          localStorage.getItem('rgbaq-assets-folder') || '~/assets');
    if (!folder) return;
    const options = prompt('Options, as rgbaq export --assets takes them: --trim --pad PX --premultiplied --format png|webp ' +
                           '--sizes 64,128 --atlas NAME --atlas-max PX',
                           localStorage.getItem('rgbaq-assets-options') ?? '--trim --pad 2 --sizes 64,128 --atlas items');
    if (options === null) return;
    const body = { jobs: this.targets(), folder };
    const words = options.trim().split(/\s+/).filter(Boolean);
    const number = (w, v) => (/^-?\d+$/.test(v || '') ? Number(v) : (() => { throw new Error(`${w} takes a number, not "${v ?? ''}"`); })());
    try {
      for (let i = 0; i < words.length; ++i) {
        const w = words[i];
        if (w === '--trim' || w === '--premultiplied') body[w.slice(2)] = true;
        else if (w === '--pad') body.pad = number(w, words[++i]);
        else if (w === '--atlas-max') body.atlas_max = number(w, words[++i]);
        else if (w === '--format' || w === '--atlas') body[w.slice(2)] = words[++i] || '';
        else if (w === '--sizes') body.sizes = (words[++i] || '').split(',').map((v) => number(w, v));
        else throw new Error(`"${w}" is not an option of the export`);
      }
    } catch (e) { return toast(`not exported: ${e.message}`); }
    localStorage.setItem('rgbaq-assets-folder', folder);
    localStorage.setItem('rgbaq-assets-options', options);
    try {
      const r = await post('/api/v1/jobs/export-assets', body);
      toast(`${r.images} exported (${r.files} files) to ${r.folder}${r.skipped.length ? `, ${r.skipped.length} skipped (see manifest.json)` : ''}`);
    } catch (e) { toast(`not exported: ${e.message}`); }
  }

  // N new seeds of each selected prompt, drawn below 2^32 (as A1111 draws them: short file names, seeds
  // that other tools take) and none that the run already has for that prompt.
  async queueMoreSeeds() {
    const count = Math.max(1, Math.min(64, Number(this.moreSeeds.value) || 1));
    const keyOf = (j) => `${j.prompt}\u0000${j.width}x${j.height}\u0000${j.lora}\u0000${j.name || ''}`;
    const seen = new Map();
    for (const id of this.targets()) {
      const j = this.byId.get(id);
      const key = keyOf(j);
      if (!seen.has(key)) seen.set(key, { prompt: j.prompt, seed: [], size: `${j.width}x${j.height}`, ...(j.lora ? { lora: j.lora } : {}), ...(j.name ? { name: j.name } : {}) });
    }
    if (!seen.size) return toast('select images first');
    const taken = new Map([...seen.keys()].map((k) => [k, new Set()]));
    for (const j of this.jobs) if (taken.has(keyOf(j))) taken.get(keyOf(j)).add(Number(j.seed));
    for (const [key, row] of seen) {
      const used = taken.get(key);
      while (row.seed.length < count) {
        const drawn = crypto.getRandomValues(new Uint32Array(count));
        for (const s of drawn) if (row.seed.length < count && !used.has(s)) { used.add(s); row.seed.push(s); }
      }
    }
    try {
      // The prompts are expanded ones already: taken as written, not as templates.
      const r = await post('/api/v1/runs', { rows: [...seen.values()], out_dir: this.run.out_dir, name: `${this.run.name || 'run'} (more seeds)`,
                                             templates: false });
      toast(`run #${r.run}: ${r.jobs} more images queued`);
    } catch (e) { toast(`not queued: ${e.message}`); }
  }

  async onEvent(name, data) {
    // A re-seeded job is new to the page: the run's jobs again (its badge's job is refreshed below too).
    if (name === 'resync' || name === 'job_reseeded') return this.load();
    const job = this.byId.get(data.job);
    if (!job) return;
    if (name === 'job_started') job.state = 'running';
    if (name === 'progress') { job.state = 'running'; job.step = data.step; job.steps = data.steps; }
    if (name === 'job_done' || name === 'job_failed' || name === 'job_canceled') {
      const fresh = await api(`/api/v1/jobs/${data.job}`);
      fresh.mark = fresh.mark === undefined ? job.mark : fresh.mark;
      Object.assign(job, fresh);
    }
    if (this.v.state) this.layout(); else this.redraw(new Set([job.id]));
  }

  key(e) {
    // Typing goes to the field; on the compare slider the arrows move it, and the other keys still work.
    if (e.target.matches('input:not([type=range]), select, textarea') && e.key !== 'Escape') return false;
    if (e.target.matches('input[type=range]') && e.key.startsWith('Arrow')) return false;
    const k = e.key;
    if (k === 'ArrowRight') this.move(1, 0);
    else if (k === 'ArrowLeft') this.move(-1, 0);
    else if (k === 'ArrowDown') this.move(0, 1);
    else if (k === 'ArrowUp') this.move(0, -1);
    else if (k === 'Enter') this.viewer.open();
    else if (k === 's') this.mark('star');
    else if (k === 'x') this.mark('reject');
    else if (k === 'u') this.mark(null);
    else if (k === 'z') this.undoMark();
    else if (k === ' ') { const j = this.current(); if (j) this.click(j, this.cursor.row, this.cursor.col, {}); }
    else if (k === 'a') { for (const j of this.shownJobs()) this.selected.add(j.id); this.selectionChanged(); }
    else if (k === 'Escape') { if (this.viewer.isOpen()) this.viewer.close(); else if (e.target.matches('input')) e.target.blur(); else this.clearSelection(); }
    else if (k === 'b') this.nextBackground();
    else if (k === 'g') this.toggleLayout();
    else if (k === 'p') this.viewer.pin();
    else if (k === 'c') this.viewer.slider();
    else if (k === '/') document.getElementById('filter-q').focus();
    else return false;
    return true;
  }
}
