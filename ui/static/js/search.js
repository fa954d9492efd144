// @ts-check
// Search: the search box, the hit list (drawn as marks on the overview) and
// stepping through hits with N / Shift+N / Enter, wrapping around, asking the
// source for more when its list was cut short. A cut list covers only the
// start of the trace, so the overview then marks the hits the source counts
// per time bin over the whole trace (overview.js). The query grammar is the
// server's (web/PROTOCOL.md); the newest query wins.

'use strict';

import { errText } from './panels.js';
import { binCount } from './overview.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Hit} Hit */

/**
 * What search needs from the page.
 * @typedef {object} SearchHost
 * @property {() => void} schedule   redraw
 * @property {() => void} pushURL
 * @property {(text: string) => void} status
 * @property {(text: string) => void} banner
 * @property {(ref: string, opt: {push: boolean, reveal: boolean, popup: boolean, center?: boolean}) => void} select
 * @property {() => number} overviewWidth  px of the overview strip (one bin per pixel)
 */

export class Search {
  /**
   * @param {Model} m @param {{search: HTMLInputElement, hitCount: HTMLElement}} ui
   * @param {Source} source @param {SearchHost} host
   */
  constructor(m, ui, source, host) {
    this.m = m;
    this.ui = ui;
    this.source = source;
    this.host = host;
    this.seq = 0;
  }

  /** Enter in the box: the next hit (Shift: previous) of the same query, else a new search. */
  bind() {
    const box = this.ui.search;
    box.addEventListener('keydown', (e) => {
      if (e.code === 'Enter') {
        e.preventDefault();
        const q = box.value;
        if (q.trim() === this.m.query && this.m.hits.length) this.step(e.shiftKey ? -1 : 1);
        else this.run(q, true).then(() => this.host.pushURL());
      }
    });
  }

  /** Runs a query; with jump, selects the first hit from the view on. @param {string} q @param {boolean} jump */
  async run(q, jump) {
    const m = this.m;
    const ui = this.ui;
    m.query = q.trim();
    const seq = ++this.seq;
    m.hits = [];
    m.hitTotal = 0;
    m.hitBins = null;
    ui.hitCount.textContent = '';
    ui.hitCount.title = '';
    if (!m.query) {
      this.host.schedule();
      return;
    }
    ui.hitCount.textContent = 'searching…';
    try {
      const r = await this.source.search(m.query);
      if (seq !== this.seq) return;
      m.hits = r.hits;
      m.hitTotal = r.total;
      m.hitsMore = !!r.more;
      ui.hitCount.textContent = r.total === 0 ? 'no match' : `${r.hits.length}${r.more ? '+' : ''} hits`;
      if (r.notice) this.host.status(`Search for “${m.query}”: ${r.notice}`);
      else if (r.total === 0) this.host.status(`Search for “${m.query}” found nothing.`);
      this.host.schedule();
      if (jump && m.hits.length) this.step(1);
      if (m.hitsMore && this.source.searchBins) {
        this.bins(seq).catch((e) => {
          if (seq === this.seq) this.host.status(`The overview marks only the first ${m.hits.length.toLocaleString('en-US')} hits: ${errText(e)}`);
        });
      }
    } catch (e) {
      if (seq === this.seq) {
        ui.hitCount.textContent = 'error';
        this.host.banner(`search: ${errText(e)}`);
      }
    }
  }

  /**
   * Asks for the hits of the current query per overview pixel over the
   * whole trace, for a list the source cut short; says how many there are.
   * @param {number} seq the search it belongs to
   */
  async bins(seq) {
    const m = this.m;
    const q = m.query;
    if (!this.source.searchBins) return;
    const list = m.hits;
    const b = await this.source.searchBins(q, binCount(this.host.overviewWidth()));
    // A newer search, or a stack node's samples marked meanwhile, wins.
    if (seq !== this.seq || m.hits !== list) return;
    let n = 0;
    for (const c of b.counts) n += c;
    m.hitBins = b;
    m.hitTotal = n;
    const shown = m.hits.length.toLocaleString('en-US');
    this.ui.hitCount.textContent = `${n.toLocaleString('en-US')}${b.complete ? '' : '+'} hits`;
    this.ui.hitCount.title = `${shown} listed for N / Shift+N, the rest fetched as you step; the overview marks all of them`;
    this.host.schedule();
  }

  /**
   * How many hits there are, for "3 / N": the whole trace's count when the
   * bins gave it (the list runs from the trace's start, so a hit's place
   * in it is its place among all), else the list's length, "+" when cut.
   */
  totalText() {
    const m = this.m;
    if (m.hitBins) return `${m.hitTotal.toLocaleString('en-US')}${m.hitBins.complete ? '' : '+'}`;
    return `${m.hits.length}${m.hitsMore ? '+' : ''}`;
  }

  /** Next/previous hit from the selected event (or the view's start), wrapping. @param {number} d */
  step(d) {
    const m = this.m;
    const ui = this.ui;
    const host = this.host;
    if (m.hits.length === 0) {
      if (ui.search.value.trim() && ui.search.value.trim() !== m.query) this.run(ui.search.value, true);
      else host.status('No search hits: type a query and press Enter.');
      return;
    }
    const h = m.hits;
    const sel = m.selEvent;
    const from = sel ? sel.time : d > 0 ? m.vp.start : m.vp.end;
    const now = m.pendingRef ?? sel?.ref;
    const cur = now ? h.findIndex((x) => x.ref === now) : -1;
    // Past the end of a list the source cut short: ask for the next hit.
    if (m.hitsMore && cur === h.length - 1 && d > 0 && this.source.searchFrom) {
      this.source.searchFrom(m.query, h[cur].ref, 1).then((hit) => {
        if (!hit) {
          host.status('Search wrapped around.');
          ui.hitCount.textContent = `1 / ${this.totalText()}`;
          host.select(h[0].ref, { push: true, reveal: true, popup: false, center: true });
          return;
        }
        h.push(hit);
        ui.hitCount.textContent = `${h.length} / ${this.totalText()}`;
        host.select(hit.ref, { push: true, reveal: true, popup: false, center: true });
      }, (e) => host.banner(`search: ${errText(e)}`));
      return;
    }
    const { i, wrapped } = stepHit(h, cur, from, d);
    if (wrapped) host.status('Search wrapped around.');
    ui.hitCount.textContent = `${i + 1} / ${this.totalText()}`;
    host.select(h[i].ref, { push: true, reveal: true, popup: false, center: true });
  }
}

/**
 * The hit to step to: from the current hit (index cur) by d, wrapping; with
 * no current hit, the first at or after `from` (d > 0) or the last at or
 * before it, wrapping to the other end when there is none.
 * @param {{time: bigint}[]} hits in time order, not empty
 * @param {number} cur index of the selected hit, or -1
 * @param {bigint} from @param {number} d
 * @returns {{i: number, wrapped: boolean}}
 */
export function stepHit(hits, cur, from, d) {
  let i;
  if (cur >= 0) i = (cur + d + hits.length) % hits.length;
  else if (d > 0) {
    i = hits.findIndex((x) => x.time >= from);
    if (i < 0) i = 0;
  } else {
    i = hits.findLastIndex((x) => x.time <= from);
    if (i < 0) i = hits.length - 1;
  }
  return { i, wrapped: cur >= 0 && ((d > 0 && i < cur) || (d < 0 && i > cur)) };
}
