// @ts-check
// Tip: the hover tooltip of the canvas's track names, which the name column
// may cut short: the full name, and the names the track had before
// (meta `names`, oldest first, e.g. "sh → ls"). trackTip is pure (tested
// under node); Tip owns the one tooltip element and puts text in it
// through textContent only.

'use strict';

/** @typedef {import('./source.js').Track} Track */

/**
 * The name history of a track, oldest first, ending with its name:
 * "launcher → sh → ls"; just the name when it was never renamed.
 * @param {Track} t
 */
export function nameHistory(t) {
  return [...(t.names ?? []), t.name].join(' → ');
}

/**
 * A track's tooltip: its full name, then its names over time when it was
 * renamed, then its ids.
 * @param {Track} t
 */
export function trackTip(t) {
  const lines = [t.name];
  if (t.names && t.names.length) lines.push(`names: ${nameHistory(t)}`);
  const ids = [];
  if (t.pid !== undefined && t.pid >= 0) ids.push(`pid ${t.pid}`);
  if (t.tid !== undefined && t.tid >= 0) ids.push(`tid ${t.tid}`);
  if (t.events !== undefined) ids.push(`${t.events.toLocaleString('en-US')} events`);
  if (ids.length) lines.push(`${t.kind} · ${ids.join(' · ')}`);
  return lines.join('\n');
}

/** The one tooltip element, placed next to the pointer within the window. */
export class Tip {
  /** @param {HTMLElement} e */
  constructor(e) {
    this.e = e;
    this.key = '';
  }

  /**
   * Shows text at page coordinates (x, y); a new key replaces the text.
   * @param {string} key @param {string} text @param {number} x @param {number} y
   */
  show(key, text, x, y) {
    if (key !== this.key) {
      this.key = key;
      this.e.textContent = text;
    }
    this.e.hidden = false;
    const r = this.e.getBoundingClientRect();
    const left = Math.max(0, Math.min(x + 12, window.innerWidth - r.width - 4));
    const top = y + 16 + r.height > window.innerHeight ? Math.max(0, y - r.height - 8) : y + 16;
    this.e.style.left = `${left}px`;
    this.e.style.top = `${top}px`;
  }

  hide() {
    this.e.hidden = true;
    this.key = '';
  }
}
