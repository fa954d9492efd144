// @ts-check
// EventsTable: one row per event of a selection (range × tracks × query)
// or of a search, with its time (timebase.js), track, name and one column
// per field. Virtualized: only the rows in view (and a few more) are in
// the DOM, a pool of row elements moved and refilled as the table
// scrolls; rows come from the server a page at a time by row number
// (GET /table?row=K, web/PROTOCOL.md §3), cached, the pages in view asked
// first and the ones scrolled past dropped from the queue. The time
// column's header sorts ascending or descending. A click on a row selects
// its event on the timeline and centres it.

'use strict';

import { el, clear } from './dom.js';
import { errText } from './panels.js';
import { relTime, absTitle } from './timebase.js';
import { visibleRows, scrollHeight, pagesOf, pageRequest, rowPlace } from './vscroll.js';

/** Rows per server page. */
export const PAGE_ROWS = 500;
/** Row height in CSS px (the CSS sets the same). */
export const ROW_H = 20;
/** Pages kept in the cache (least recently used out). */
const CACHE_PAGES = 200;
/** Page requests running at once. */
const INFLIGHT = 2;

/**
 * @typedef {object} TableSelection
 * @property {string} q          query, "" for every event
 * @property {bigint | null} from   null with to: the whole trace
 * @property {bigint | null} to
 * @property {number[] | null} tracks  null: every track
 * @property {string} title      what the table shows, for its header
 *
 * @typedef {object} TableRow  one row as the server sends it
 * @property {string} ev
 * @property {string} time
 * @property {number} track
 * @property {string} event
 * @property {string} label
 * @property {unknown[]} values
 *
 * @typedef {object} TableHost
 * @property {import('./source.js').Meta} meta
 * @property {(ref: string) => void} select   select and centre an event
 * @property {(text: string) => void} status
 */

export class EventsTable {
  /**
   * @param {HTMLElement} box  the element the table fills
   * @param {any} source  a source with table(params, signal)
   * @param {TableHost} host
   */
  constructor(box, source, host) {
    this.box = box;
    this.source = source;
    this.host = host;
    /** @type {TableSelection | null} */
    this.sel = null;
    this.total = 0;
    this.desc = false;
    this.gen = 0;
    /** @type {Map<number, {rows: TableRow[], cols: string[], index: Map<string, number>}>} by display page */
    this.pages = new Map();
    /** @type {Set<number>} */
    this.loading = new Set();
    /** @type {number[]} pages wanted, nearest first */
    this.queue = [];
    /** @type {string[]} the columns seen so far, in order of first appearance */
    this.columns = [];
    this.head = el('div', { className: 'et-head' });
    this.info = el('div', { className: 'et-info' });
    this.scroller = el('div', { className: 'et-body', tabIndex: 0 });
    this.spacer = el('div', { className: 'et-spacer' });
    this.rowsBox = el('div', { className: 'et-rows' });
    this.scroller.append(this.spacer, this.rowsBox);
    /** @type {HTMLElement[]} */
    this.pool = [];
    this.renders = 0;
    box.append(this.info, this.head, this.scroller);
    this.scroller.addEventListener('scroll', () => this.render());
    this.rowsBox.addEventListener('click', (e) => {
      const row = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest('.et-row'));
      if (row?.dataset.ev) this.host.select(row.dataset.ev);
    });
  }

  /** Shows a selection's events from the first. @param {TableSelection} sel */
  async show(sel) {
    this.sel = sel;
    this.gen++;
    this.pages.clear();
    this.loading.clear();
    this.queue = [];
    this.columns = [];
    this.total = 0;
    this.info.textContent = `${sel.title}: counting…`;
    this.scroller.scrollTop = 0;
    const gen = this.gen;
    try {
      const j = await this.fetchPage(0, gen);
      if (gen !== this.gen) return;
      this.total = Number(j.total ?? 0);
      this.info.textContent = `${sel.title}: ${this.total.toLocaleString('en-US')} events${j.cut_off ? ' (cut off: ' + String(j.notice ?? '') + ')' : ''}`;
    } catch (e) {
      if (gen === this.gen) this.info.textContent = `${sel.title}: ${errText(e)}`;
      return;
    }
    this.spacer.style.height = `${scrollHeight(this.total, ROW_H)}px`;
    this.buildHead();
    this.render();
  }

  /** Sets the time order and starts again from the top. @param {boolean} desc */
  sort(desc) {
    if (this.desc === desc || !this.sel) return;
    this.desc = desc;
    this.gen++;
    this.pages.clear();
    this.loading.clear();
    this.queue = [];
    this.scroller.scrollTop = 0;
    this.buildHead();
    this.render();
  }

  /**
   * Fetches display page p (with the total, from row numbers).
   * @param {number} p @param {number} gen
   */
  async fetchPage(p, gen) {
    const sel = /** @type {TableSelection} */ (this.sel);
    const total = this.total || PAGE_ROWS; // the first page's size before the total is known
    const { row, limit } = pageRequest(p, PAGE_ROWS, Math.max(total, 1), this.desc && this.total > 0);
    const params = new URLSearchParams({ row: String(row), limit: String(Math.max(1, Math.min(limit, 1000))) });
    if (sel.q) params.set('q', sel.q);
    if (sel.from !== null && sel.to !== null) {
      params.set('from', String(sel.from));
      params.set('to', String(sel.to));
    }
    if (sel.tracks) params.set('tracks', sel.tracks.join(','));
    this.loading.add(p);
    try {
      const j = await this.source.table(params);
      if (gen !== this.gen) return j;
      const rows = /** @type {TableRow[]} */ (Array.isArray(j.rows) ? j.rows : []);
      const cols = /** @type {string[]} */ (Array.isArray(j.columns) ? j.columns.map(String) : []);
      if (this.desc && this.total > 0) rows.reverse();
      this.pages.set(p, { rows, cols, index: new Map(cols.map((c, j) => [c, j])) });
      if (this.pages.size > CACHE_PAGES) this.pages.delete(/** @type {number} */ (this.pages.keys().next().value));
      let grew = false;
      for (const c of cols) if (!this.columns.includes(c) && this.columns.length < 256) { this.columns.push(c); grew = true; }
      if (grew && this.total > 0) this.buildHead();
      return j;
    } finally {
      if (gen === this.gen) this.loading.delete(p);
    }
  }

  /** The header: time (sorts), track, event, label, the fields. */
  buildHead() {
    clear(this.head);
    const time = el('button', { type: 'button', className: 'et-sort', title: 'sort by time' });
    time.textContent = this.desc ? 'time ▼' : 'time ▲';
    time.addEventListener('click', () => this.sort(!this.desc));
    const cells = [time];
    for (const name of ['track', 'event', 'label', ...this.columns]) {
      const c = el('span');
      c.textContent = name;
      cells.push(c);
    }
    this.head.append(...cells);
    this.head.style.setProperty('--et-cols', String(this.columns.length));
    this.rowsBox.style.setProperty('--et-cols', String(this.columns.length));
    for (const r of this.pool) r.dataset.key = ''; // refill with the new columns
  }

  /** Places and fills the rows in view; asks for the pages they need. */
  render() {
    if (!this.sel) return;
    this.renders++;
    const viewH = this.scroller.clientHeight || 300;
    const { first, last, y } = visibleRows(this.scroller.scrollTop, viewH, ROW_H, this.total);
    const n = last - first;
    while (this.pool.length < n) {
      const r = el('div', { className: 'et-row' });
      this.pool.push(r);
      this.rowsBox.append(r);
    }
    this.rowsBox.style.transform = `translateY(${y}px)`;
    const meta = this.host.meta;
    for (let i = 0; i < this.pool.length; i++) {
      const r = this.pool[i];
      if (i >= n) {
        r.hidden = true;
        continue;
      }
      r.hidden = false;
      const k = first + i;
      const { page, i: at } = rowPlace(k, PAGE_ROWS, this.total, this.desc);
      const pg = this.pages.get(page);
      const row = pg?.rows[at];
      const key = row ? `${k}|${row.ev}` : `${k}|`;
      if (r.dataset.key === key) continue;
      r.dataset.key = key;
      r.dataset.row = String(k);
      // The row's cells are kept and refilled (time, track, event,
      // label, the fields): no elements made while scrolling.
      const cells = this.cellsOf(r);
      if (!row) {
        r.dataset.ev = '';
        for (const c of cells) c.textContent = '';
        cells[0].textContent = '…';
        cells[0].title = '';
        continue;
      }
      r.dataset.ev = row.ev;
      const t = BigInt(row.time);
      cells[0].textContent = relTime(t, meta.first);
      cells[0].title = absTitle(t, meta.wall ?? '');
      cells[1].textContent = meta.tracks[row.track]?.name ?? String(row.track);
      cells[2].textContent = row.event;
      cells[3].textContent = row.label;
      const byName = pg?.index;
      for (let c = 0; c < this.columns.length; c++) {
        const j = byName?.get(this.columns[c]);
        const v = j === undefined ? null : row.values[j];
        cells[4 + c].textContent = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      }
    }
    this.want(pagesOf(first, last, PAGE_ROWS));
  }

  /**
   * A row's cells, made once per column layout.
   * @param {HTMLElement} r @returns {HTMLElement[]}
   */
  cellsOf(r) {
    const want = 4 + this.columns.length;
    const have = /** @type {HTMLElement[]} */ ([...r.children]);
    if (have.length === want) return have;
    clear(r);
    const cells = [];
    for (let i = 0; i < want; i++) cells.push(el('span', { className: i === 0 ? 'et-time' : '' }));
    r.append(...cells);
    return cells;
  }

  /** Queues the pages in view (dropping the ones scrolled past). @param {number[]} pages */
  want(pages) {
    this.queue = pages.filter((p) => !this.pages.has(p) && !this.loading.has(p));
    this.pump();
  }

  pump() {
    const gen = this.gen;
    while (this.loading.size < INFLIGHT && this.queue.length) {
      const p = /** @type {number} */ (this.queue.shift());
      this.fetchPage(p, gen).then(() => {
        if (gen !== this.gen) return;
        this.render();
        this.pump();
      }, (e) => {
        if (gen === this.gen) this.host.status(`events table: ${errText(e)}`);
      });
    }
  }
}
