// @ts-check
// The event-type selector in the side panel: one checkbox per type, grouped
// by provider, each group with an all/none box in its legend; ALL and NONE
// above them. Unchecked types are the model's hideTypes, which the source
// leaves out of frames.

'use strict';

import { el, clear } from './dom.js';
import { typeText } from './panels.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./source.js').EventType} EventType */

export class TypeSelector {
  /**
   * @param {Model} m
   * @param {{types: HTMLElement, typesAll: HTMLElement, typesNone: HTMLElement}} ui
   * @param {import('./render.js').Renderer} renderer  holds the type colours
   * @param {() => void} changed called after hideTypes changed
   */
  constructor(m, ui, renderer, changed) {
    this.m = m;
    this.ui = ui;
    this.renderer = renderer;
    this.changed = changed;
    /** @type {HTMLInputElement[]} */
    this.boxes = [];
  }

  /** Builds the boxes for the trace's types and has the renderer pick their colours. @param {import('./render.js').Theme} theme */
  build(theme) {
    const m = this.m;
    const box = this.ui.types;
    clear(box);
    this.boxes = [];
    for (const [prov, types] of groupByProvider(m.trace.types)) {
      const fs = el('fieldset', { className: 'type-group' });
      const legend = el('legend');
      const all = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', title: 'all of this provider' }));
      legend.append(all, ' ', prov || 'events');
      fs.append(legend);
      const mine = /** @type {HTMLInputElement[]} */ ([]);
      for (const t of types) {
        const cb = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox' }));
        cb.dataset.type = String(t.id);
        cb.checked = !m.hideTypes.has(t.id);
        cb.addEventListener('change', () => {
          if (cb.checked) m.hideTypes.delete(t.id);
          else m.hideTypes.add(t.id);
          this.sync();
          this.changed();
        });
        // The side panel cuts long names short: the full one on hover.
        const label = el('label', { className: 'type', title: `${t.provider ? t.provider + '/' : ''}${t.name || '(no name)'} (code ${t.code})` });
        const sw = el('span', { className: 'swatch' });
        sw.style.background = this.renderer.typeColors[t.id] ?? '';
        label.append(cb, sw, typeText(t));
        fs.append(label);
        mine.push(cb);
        this.boxes.push(cb);
      }
      all.addEventListener('change', () => {
        for (const cb of mine) {
          const id = Number(cb.dataset.type);
          if (all.checked) m.hideTypes.delete(id);
          else m.hideTypes.add(id);
        }
        this.sync();
        this.changed();
      });
      box.append(fs);
    }
    this.renderer.colors(m.trace, theme);
    for (const cb of this.boxes) {
      const sw = /** @type {HTMLElement} */ (cb.nextSibling);
      sw.style.background = this.renderer.typeColors[Number(cb.dataset.type)] ?? '';
    }
  }

  /** ALL shows every type, NONE hides them all. */
  bind() {
    this.ui.typesAll.addEventListener('click', () => {
      this.m.hideTypes.clear();
      this.sync();
      this.changed();
    });
    this.ui.typesNone.addEventListener('click', () => {
      for (const t of this.m.trace.types) this.m.hideTypes.add(t.id);
      this.sync();
      this.changed();
    });
  }

  /** Sets the boxes from hideTypes; a group's box is checked when all its types are, mixed when some are. */
  sync() {
    for (const cb of this.boxes) cb.checked = !this.m.hideTypes.has(Number(cb.dataset.type));
    for (const fs of this.ui.types.querySelectorAll('fieldset')) {
      const boxes = [...fs.querySelectorAll('label input')].map((x) => /** @type {HTMLInputElement} */ (x));
      const all = /** @type {HTMLInputElement} */ (fs.querySelector('legend input'));
      all.checked = boxes.every((b) => b.checked);
      all.indeterminate = !all.checked && boxes.some((b) => b.checked);
    }
  }
}

/**
 * Event types grouped by provider, groups in order of first appearance,
 * types in meta order within a group.
 * @param {EventType[]} types
 * @returns {Map<string, EventType[]>}
 */
export function groupByProvider(types) {
  /** @type {Map<string, EventType[]>} */
  const groups = new Map();
  for (const t of types) {
    const g = groups.get(t.provider) ?? [];
    g.push(t);
    groups.set(t.provider, g);
  }
  return groups;
}
