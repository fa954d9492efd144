// @ts-check
// URL syncing: the address bar follows the view. Discrete steps push a
// history entry, so Back/Forward walk through views like g2's snapshot ring;
// continuous moves (drag, wheel) replace the current one, throttled; Back
// and Forward hand the entry's state back. The grammar is urlstate.js's.

'use strict';

import { formatState, parseState } from './urlstate.js';

/** @typedef {import('./urlstate.js').ViewState} ViewState */

/** URL replace throttle while dragging or wheeling, ms. */
export const REPLACE_MS = 200;

/**
 * The parts of `window` used (a stand-in in tests).
 * @typedef {object} Win
 * @property {{search: string}} location
 * @property {{pushState: (data: any, unused: string, url: string) => void, replaceState: (data: any, unused: string, url: string) => void}} history
 * @property {(f: () => void, ms: number) => number} setTimeout
 * @property {(id: number) => void} clearTimeout
 * @property {(type: 'popstate', f: () => void) => void} addEventListener
 */

export class UrlSync {
  /**
   * @param {() => ViewState} state the view's state now
   * @param {Win} [win]
   */
  constructor(state, win = /** @type {Win} */ (/** @type {unknown} */ (globalThis))) {
    this.state = state;
    this.win = win;
    this.timer = 0;
  }

  /** Records the view as a new history entry (a discrete step). */
  push() {
    this.win.clearTimeout(this.timer);
    const q = '?' + formatState(this.state());
    if (q !== this.win.location.search) this.win.history.pushState(null, '', q);
  }

  /** Rewrites the current history entry (continuous moves), after `delay` ms. */
  replace(delay = 0) {
    this.win.clearTimeout(this.timer);
    const run = () => {
      const q = '?' + formatState(this.state());
      if (q !== this.win.location.search) this.win.history.replaceState(null, '', q);
    };
    if (delay) this.timer = this.win.setTimeout(run, delay);
    else run();
  }

  /** Calls f with the state of the entry Back/Forward lands on. @param {(st: ViewState) => void} f */
  onPop(f) {
    this.win.addEventListener('popstate', () => f(parseState(this.win.location.search)));
  }
}
