// @ts-check
// Offsets: the user's per-trace offsets of a combined view (g2's time
// slew; web/PROTOCOL.md §together). Alt+drag on a trace's rows (its group
// header, its tracks' names or its events) moves that trace's events by
// the drag; the side panel lists the traces with their offsets, typed in
// milliseconds, and how each was placed. The offsets live in the source
// (together.js, which sends them with every request) and in the URL.

'use strict';

import { el, clear } from './dom.js';
import { rowKind } from './groups.js';
import { formatDuration } from './viewport.js';

/** Pixels an Alt+drag must move before it moves the trace. */
const DRAG_PX = 2;

export class Offsets {
  /**
   * @param {import('./app.js').App} app
   * @param {import('./together.js').TogetherSource} source
   */
  constructor(app, source) {
    this.app = app;
    this.source = source;
    this.box = el('section', { className: 'together', id: 'together' });
    /** @type {HTMLInputElement[]} one per trace */
    this.inputs = [];
  }

  /** Builds the panel and takes Alt+drags and Back/Forward (after the App started). */
  bind() {
    const app = this.app;
    const side = app.ui.filter.parentElement;
    if (side) side.prepend(this.box);
    this.build();
    /** @type {any} */ (app).altDrag = (/** @type {PointerEvent} */ e, /** @type {number} */ row, /** @type {number} */ track) => this.drag(e, row, track);
    app.url.onPop((st) => {
      this.source.setOffsets(st.offsets ?? []);
      this.changed('none');
    });
    for (const n of this.source.notices ?? []) app.panels.status(n);
  }

  build() {
    const src = this.source;
    clear(this.box);
    const head = el('div', { className: 'types-head' });
    head.textContent = 'Traces (Alt+drag to slew)';
    this.box.append(head);
    this.inputs = src.traces.map((t, k) => {
      const row = el('label', { className: 'together-trace' });
      const name = el('span', { className: 'together-name', title: t.id });
      name.textContent = t.name;
      const p = src.placed[k];
      const how = el('span', { className: 'together-how' });
      how.textContent = p ? (p.how === 'first event' ? 'no clock: first event' : `by ${p.how}`) : '';
      const input = /** @type {HTMLInputElement} */ (el('input', { type: 'text', className: 'together-offset', title: 'offset in ms (+ later, − earlier)' }));
      input.dataset.trace = String(k);
      input.setAttribute('aria-label', `offset of ${t.name} in milliseconds`);
      input.addEventListener('change', () => {
        const ms = Number(input.value.replace(/\s*ms$/, '').replace('−', '-'));
        if (!Number.isFinite(ms)) {
          this.show();
          return;
        }
        src.setOffset(k, BigInt(Math.round(ms * 1e6)));
        this.changed('push');
      });
      row.append(name, input, how);
      return input;
    });
    this.box.append(...this.inputs.map((i) => /** @type {HTMLElement} */ (i.parentElement)));
    this.show();
  }

  /** Shows the offsets in the inputs. */
  show() {
    for (const [k, input] of this.inputs.entries()) {
      if (document.activeElement === input) continue;
      const ns = this.source.offsets[k] ?? 0n;
      input.value = `${ns < 0n ? '−' : '+'}${(Math.abs(Number(ns)) / 1e6).toFixed(6).replace(/\.?0+$/, '')} ms`;
    }
  }

  /**
   * The offsets changed: the frames held are stale, the span moved.
   * @param {'push' | 'replace' | 'none'} url
   */
  changed(url) {
    const app = this.app;
    app.asked = null;
    app.request();
    app.schedule();
    this.show();
    if (url === 'push') app.pushURL();
    else if (url === 'replace') app.replaceURL(200);
  }

  /**
   * The trace of a row: a trace group's header, or a track's trace; -1.
   * @param {number} row @param {number} track
   */
  traceAt(row, track) {
    if (track >= 0) return this.source.traceOf(track);
    const r = rowKind(row);
    const g = r.kind === 'group' ? this.app.m.groups[r.id] : undefined;
    return g && g.key.startsWith('x') ? Number(g.key.slice(1)) : -1;
  }

  /**
   * An Alt+drag that starts on a trace's row moves the trace; false when
   * the pointer is on no trace.
   * @param {PointerEvent} e @param {number} row @param {number} track
   */
  drag(e, row, track) {
    const k = this.traceAt(row, track);
    if (k < 0) return false;
    const app = this.app;
    const c = app.ui.canvas;
    e.preventDefault();
    c.setPointerCapture(e.pointerId);
    const x0 = e.clientX;
    const base = this.source.offsets[k] ?? 0n;
    const nsPerPx = app.m.vp.nsPerPx;
    let moved = false;
    const move = (/** @type {PointerEvent} */ ev) => {
      const dx = ev.clientX - x0;
      if (!moved && Math.abs(dx) < DRAG_PX) return;
      moved = true;
      this.source.setOffset(k, base + BigInt(Math.round(dx * nsPerPx)));
      this.changed('none');
      app.panels.status(`${this.source.traces[k]?.name}: offset ${formatDuration(Number(this.source.offsets[k]))}`);
    };
    const up = (/** @type {PointerEvent} */ ev) => {
      c.removeEventListener('pointermove', move);
      c.removeEventListener('pointerup', up);
      c.removeEventListener('pointercancel', up);
      move(ev);
      if (moved) this.changed('push');
    };
    c.addEventListener('pointermove', move);
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
    return true;
  }
}
