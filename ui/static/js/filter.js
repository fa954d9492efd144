// @ts-check
// TimelineFilter: the filter box (Q), whose query dims or hides the events
// it does not match on every track. The server evaluates a query once into
// per-track bitmaps (web/PROTOCOL.md §3, filter); the filter then asks for
// a filtered frame beside every plain one (latest wins: one in flight,
// only the newest pending kept, as for plain frames), which the renderer draws over the plain frame drawn dimmed, or
// alone when the mode is "hide". The matching events per track replace
// the track counts in the name column. Query and mode are URL state (w, wm).

'use strict';

import { el } from './dom.js';
import { errText } from './panels.js';
import { LatestWins } from './source.js';

/**
 * @typedef {object} FilterCounts
 * @property {number} total
 * @property {Map<number, number>} tracks  matching events per track id (absent: none)
 * @property {boolean} complete  false: the server cut the evaluation off
 * @property {string} notice
 *
 * @typedef {object} FilterSource
 * @property {(q: string) => Promise<FilterCounts>} filterCounts
 * @property {(q: string, req: import('./source.js').ViewRequest, signal?: AbortSignal) => Promise<import('./source.js').Frame>} filterView
 *
 * @typedef {object} FilterHost
 * @property {() => void} refresh   ask for frames again (the filter changed)
 * @property {() => void} schedule  redraw
 * @property {() => void} pushURL
 * @property {(text: string) => void} status
 * @property {(text: string) => void} banner
 */

/**
 * Whether a source can filter (the server can; the in-browser fake cannot).
 * @param {any} source @returns {source is FilterSource}
 */
export function canFilter(source) {
  return typeof source?.filterCounts === 'function' && typeof source?.filterView === 'function';
}

export class TimelineFilter {
  /**
   * @param {HTMLElement} after  the element the filter's controls follow
   * @param {import('./source.js').Source} source @param {FilterHost} host
   */
  constructor(after, source, host) {
    this.source = source;
    this.host = host;
    this.query = '';
    /** @type {'dim' | 'hide'} */
    this.mode = 'dim';
    /** @type {FilterCounts | null} */
    this.counts = null;
    /** @type {import('./source.js').Frame | null} */
    this.frame = null;
    this.seq = 0;
    /** Filtered frames, one in flight (cancelling the running one would starve a drag). */
    this.frames = new LatestWins(
      (/** @type {{q: string, req: import('./source.js').ViewRequest}} */ a) => /** @type {FilterSource} */ (/** @type {unknown} */ (this.source)).filterView(a.q, a.req),
      (/** @type {import('./source.js').Frame} */ f, /** @type {{q: string}} */ a) => {
        if (a.q !== this.query) return;
        this.frame = f;
        this.host.schedule();
      },
      (/** @type {unknown} */ e) => this.host.status(`filter: ${errText(e)}`),
    );
    this.box = /** @type {HTMLInputElement} */ (el('input', {
      type: 'search', id: 'where', placeholder: 'filter events: Reason = 4, GC and not Stop',
      title: 'filter the timeline by a query (Q): the events it does not match are dimmed or hidden',
    }));
    this.box.setAttribute('aria-label', 'filter events by a query');
    this.modeBtn = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id: 'where-mode', title: 'dim or hide the events the filter does not match' }));
    this.info = el('span', { className: 'hits', id: 'where-count' });
    this.modeBtn.textContent = 'dim';
    this.modeBtn.hidden = true;
    after.after(this.box, this.modeBtn, this.info);
    if (!canFilter(source)) this.box.hidden = true;
  }

  bind() {
    this.box.addEventListener('keydown', (e) => {
      if (e.code === 'Enter') {
        e.preventDefault();
        this.apply(this.box.value, this.mode);
        this.host.pushURL();
      } else if (e.code === 'Escape' && this.box.value === '' && this.query) {
        this.apply('', this.mode);
        this.host.pushURL();
      }
    });
    this.box.addEventListener('search', () => { // the box's clear button
      if (this.box.value === '' && this.query) {
        this.apply('', this.mode);
        this.host.pushURL();
      }
    });
    this.modeBtn.addEventListener('click', () => {
      this.apply(this.query, this.mode === 'dim' ? 'hide' : 'dim');
      this.host.pushURL();
    });
  }

  focus() {
    this.box.focus();
    this.box.select();
  }

  /**
   * Sets the query and mode (typed, or from the URL), asks for the
   * counts and for frames again.
   * @param {string} q @param {'dim' | 'hide'} mode
   */
  apply(q, mode) {
    q = q.trim();
    this.mode = mode === 'hide' ? 'hide' : 'dim';
    this.modeBtn.textContent = this.mode;
    this.modeBtn.setAttribute('aria-pressed', String(this.mode === 'hide'));
    if (this.box.value.trim() !== q) this.box.value = q;
    if (q === this.query) {
      this.host.schedule();
      return;
    }
    this.query = q;
    this.counts = null;
    this.frame = null;
    this.modeBtn.hidden = !q;
    this.info.textContent = '';
    const seq = ++this.seq;
    if (q && canFilter(this.source)) {
      this.info.textContent = 'filtering…';
      this.source.filterCounts(q).then((c) => {
        if (seq !== this.seq) return;
        this.counts = c;
        this.info.textContent = `${c.total.toLocaleString('en-US')} match${c.complete ? '' : ' (partial)'}`;
        this.info.title = c.notice;
        if (!c.complete) this.host.status(`Filter “${q}”: ${c.notice}`);
        this.host.schedule();
      }, (e) => {
        if (seq !== this.seq) return;
        this.info.textContent = 'bad filter';
        this.host.banner(`filter “${q}”: ${errText(e)}`);
      });
    }
    this.host.refresh();
  }

  /**
   * Asks for the filtered frame of a plain request.
   * @param {import('./source.js').ViewRequest} req
   */
  request(req) {
    if (!this.query || !canFilter(this.source)) return;
    this.frames.push({ q: this.query, req });
  }

  /** Adds the filter to what the renderer draws. @param {import('./render.js').Scene} s */
  decorate(s) {
    if (!this.query) return s;
    s.filterFrame = this.frame;
    s.filterMode = this.mode;
    if (this.counts) s.trackCounts = this.counts.tracks;
    return s;
  }

  /** Adds the filter to a URL state. @param {import('./urlstate.js').ViewState} st */
  addState(st) {
    st.where = this.query;
    st.whereMode = this.mode;
    return st;
  }
}
