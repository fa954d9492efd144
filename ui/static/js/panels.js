// @ts-check
// Panels: what the page says besides the canvas — the status line and error
// banners, the details panel, the g2 detail boxes (popups) drawn on the
// canvas, the `?` overlay and the copy-link box. Trace text goes in through
// textContent only.

'use strict';

import { KEYS, MOUSE } from './keys.js';
import { el, renderDetails, detailsTitle } from './dom.js';

/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').Details} Details */
/** @typedef {import('./model.js').Model} Model */

/**
 * @typedef {object} PanelsUI
 * @property {HTMLElement} status
 * @property {HTMLElement} message
 * @property {HTMLElement} details
 * @property {HTMLElement} detailsSummary
 * @property {HTMLElement} helpBox
 * @property {HTMLElement} help
 * @property {HTMLElement} helpClose
 * @property {HTMLCanvasElement} canvas
 * @property {HTMLInputElement} link
 */

export class Panels {
  /** @param {Model} m @param {PanelsUI} ui */
  constructor(m, ui) {
    this.m = m;
    this.ui = ui;
  }

  /** @param {string} text */
  status(text) {
    this.ui.message.textContent = text;
  }

  /** An error banner with a close button. @param {string} text */
  banner(text) {
    const b = el('div', { className: 'banner', role: 'alert' });
    const close = el('button', { type: 'button', className: 'close', title: 'dismiss' });
    close.textContent = '×';
    close.addEventListener('click', () => b.remove());
    const span = el('span');
    span.textContent = text;
    b.append(span, close);
    this.ui.status.append(b);
  }

  /**
   * Shows an event's details, else the selected track's, else the hint;
   * the panel's bar (detailspane.js) names what it shows.
   * @param {Details | null} d
   */
  showDetails(d) {
    const m = this.m;
    renderDetails(this.ui.details, d, m.trace, m.selTrack);
    const tr = m.trace.tracks[m.selTrack];
    this.ui.detailsSummary.textContent = d ? `${detailsTitle(d, m.trace)}${d.label ? ' · ' + d.label : ''}` : tr ? `track ${tr.name}` : '';
  }

  /** Opens the event's detail box on the canvas, or closes it. @param {Details} d */
  togglePopup(d) {
    const p = this.m.popups;
    const i = p.findIndex((x) => x.ref === d.ref);
    if (i >= 0) p.splice(i, 1);
    else p.push({ ref: d.ref, time: d.time, track: d.track, text: popupText(d, this.m.trace) });
  }

  get helpOpen() {
    return !this.ui.help.hidden;
  }

  /**
   * Opens or closes the `?` overlay. It opens at its top: focusing its
   * Close button (last in the box) must not scroll the box down to it.
   */
  toggleHelp() {
    const ui = this.ui;
    ui.help.hidden = !ui.help.hidden;
    if (ui.help.hidden) return;
    ui.helpClose.focus({ preventScroll: true });
    ui.helpBox.scrollTop = 0;
  }

  closeHelp() {
    this.ui.help.hidden = true;
    this.ui.canvas.focus();
  }

  /** Copies the page's URL, or shows it selected when the clipboard refuses. */
  async copyLink() {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.status('Link copied.');
    } catch {
      this.ui.link.value = url;
      this.ui.link.hidden = false;
      this.ui.link.select();
      this.status('Copy the selected link (Ctrl+C).');
    }
  }
}

/** The `?` overlay: the key table (keys.js) and the mouse bindings. */
export function buildHelp() {
  const help = el('div', { className: 'help', id: 'help', role: 'dialog' });
  help.setAttribute('aria-label', 'keyboard and mouse');
  help.hidden = true;
  const helpBox = el('div', { className: 'help-box' });
  const helpTitle = el('h2');
  helpTitle.textContent = 'Keys';
  const table = el('table');
  const row = (/** @type {string} */ k, /** @type {string} */ v) => {
    const tr = el('tr');
    const a = el('td');
    const kbd = el('kbd');
    kbd.textContent = k;
    a.append(kbd);
    const b = el('td');
    b.textContent = v;
    tr.append(a, b);
    table.append(tr);
  };
  for (const k of KEYS) row(k.keys, k.help);
  row('?', 'this overlay');
  const mouseTitle = el('h2');
  mouseTitle.textContent = 'Mouse';
  const mtable = el('table');
  for (const [k, v] of MOUSE) {
    const tr = el('tr');
    const a = el('td');
    a.textContent = k;
    const b = el('td');
    b.textContent = v;
    tr.append(a, b);
    mtable.append(tr);
  }
  const helpClose = el('button', { type: 'button' });
  helpClose.textContent = 'Close (Esc)';
  helpBox.append(helpTitle, table, mouseTitle, mtable, helpClose);
  help.append(helpBox);
  return { help, helpBox, helpClose };
}

/** @param {import('./source.js').EventType} t */
export function typeText(t) {
  return `[${t.code}] ${t.name}`;
}

/** The text of an event's detail box: its label, else its type. @param {Details} d @param {Meta} m */
export function popupText(d, m) {
  if (d.label) return d.label;
  const t = m.types[d.type];
  return t ? typeText(t) : `event ${d.ref}`;
}

/** @param {unknown} e */
export function errText(e) {
  return e instanceof Error ? e.message : String(e);
}
