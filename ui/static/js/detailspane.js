// @ts-check
// DetailsPane: the frame of the details panel under the timeline — its bar,
// with the collapse toggle (also the V key) and a summary of what the panel
// shows, and the bar's drag that resizes the panel. The timeline takes the
// rest of the window's height. The state is a layout pref (prefs.js), kept
// in localStorage across reloads. The panel's content is panels.js's.

'use strict';

import { clampDetailsH, savePrefs } from './prefs.js';

/** The timeline keeps at least this many CSS px when the panel grows. */
const CANVAS_KEEP = 160;

export class DetailsPane {
  /**
   * @param {HTMLElement} root  main#viewer, the grid
   * @param {{details: HTMLElement, detailsBar: HTMLElement, detailsToggle: HTMLButtonElement, canvas: HTMLCanvasElement}} ui
   * @param {import('./prefs.js').Prefs} prefs the page's prefs, changed in place and saved
   */
  constructor(root, ui, prefs) {
    this.root = root;
    this.ui = ui;
    this.prefs = prefs;
    this.apply();
  }

  get open() {
    return this.prefs.detailsOpen;
  }

  /** Collapses an open panel, opens a collapsed one. */
  toggle() {
    this.prefs.detailsOpen = !this.prefs.detailsOpen;
    this.apply();
    savePrefs(this.prefs);
  }

  /** Sets the grid from the prefs. */
  apply() {
    const { details, detailsToggle } = this.ui;
    this.root.classList.toggle('details-collapsed', !this.prefs.detailsOpen);
    this.root.style.setProperty('--details-h', `${this.prefs.detailsH}px`);
    details.hidden = !this.prefs.detailsOpen;
    detailsToggle.setAttribute('aria-expanded', String(this.prefs.detailsOpen));
    detailsToggle.textContent = this.prefs.detailsOpen ? '▾ Details' : '▸ Details';
    detailsToggle.title = (this.prefs.detailsOpen ? 'collapse' : 'expand') + ' the details panel (V)';
  }

  /** Binds the toggle and the bar's drag (drag up: a taller panel). */
  bind() {
    const { detailsBar: bar, detailsToggle } = this.ui;
    detailsToggle.addEventListener('click', () => this.toggle());
    bar.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || e.target instanceof HTMLButtonElement) return;
      e.preventDefault();
      bar.setPointerCapture(e.pointerId);
      const y0 = e.clientY;
      const wasOpen = this.prefs.detailsOpen;
      const h0 = wasOpen ? this.ui.details.getBoundingClientRect().height : 0;
      // Everything but the panel and the timeline keeps its height.
      const keep = this.root.getBoundingClientRect().height - h0 - this.ui.canvas.getBoundingClientRect().height + CANVAS_KEEP;
      const move = (/** @type {PointerEvent} */ ev) => {
        const h = h0 + (y0 - ev.clientY);
        if (!this.prefs.detailsOpen) {
          if (y0 - ev.clientY < 8) return;
          this.prefs.detailsOpen = true;
        }
        this.prefs.detailsH = clampDetailsH(h, this.root.getBoundingClientRect().height, keep);
        this.apply();
      };
      const up = () => {
        bar.removeEventListener('pointermove', move);
        bar.removeEventListener('pointerup', up);
        bar.removeEventListener('pointercancel', up);
        savePrefs(this.prefs);
      };
      bar.addEventListener('pointermove', move);
      bar.addEventListener('pointerup', up);
      bar.addEventListener('pointercancel', up);
    });
  }
}
