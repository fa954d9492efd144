// @ts-check
// AreaTables: the area-selection panel (O). Its area is the ruler's
// interval, else the visible range (a Shift+drag fence zooms to it), ×
// the selected track, else every track, × the timeline filter's query.
// It shows the area's events counted per event type and per track (GET
// /counts, the numbers as the server sends them) and, for a numeric field
// the reader names, a histogram with percentiles (Tracy's "find zone",
// histogram.js lays it out). A click on a type, a track or a bar searches
// for those events in the area, so they are marked on the timeline and N
// steps through them; "Events" opens the area's events table
// (eventtable.js), "Search events" the current search's.

'use strict';

import { el, clear } from './dom.js';
import { errText } from './panels.js';
import { relTime } from './timebase.js';
import { histBars, binQuery } from './histogram.js';
import { EventsTable } from './eventtable.js';

/**
 * @typedef {object} AreaHost
 * @property {import('./model.js').Model} m
 * @property {() => string} filterQuery   the timeline filter's query, "" for none
 * @property {(q: string) => void} search  run a search and show its hits
 * @property {(ref: string) => void} select  select and centre an event
 * @property {(text: string) => void} status
 */

/** Quotes a value for the query grammar (PROTOCOL.md §5: Go-quoted). @param {string} s */
export function quote(s) {
  return JSON.stringify(s);
}

/**
 * The query for an area's events: its time range, its tracks' names and
 * the filter, and the extra terms (a type, a track, a bin).
 * @param {{from: bigint, to: bigint, q: string}} a @param {string[]} terms
 */
export function areaQuery(a, terms) {
  const parts = [`@time >= ${a.from}`, `@time <= ${a.to}`, ...terms];
  if (a.q) parts.push(`(${a.q})`);
  return parts.join(' and ');
}

/** Whether a source can answer the panel (the server can). @param {any} s */
export function canTable(s) {
  return typeof s?.counts === 'function' && typeof s?.table === 'function';
}

export class AreaTables {
  /** @param {HTMLElement} root @param {any} source @param {AreaHost} host */
  constructor(root, source, host) {
    this.source = source;
    this.host = host;
    this.seq = 0;
    this.panel = el('section', { className: 'area-panel', id: 'area' });
    this.panel.hidden = true;
    this.panel.setAttribute('aria-label', 'area selection');
    const bar = el('div', { className: 'area-bar' });
    this.title = el('span', { className: 'area-title' });
    const refresh = el('button', { type: 'button', title: 'count the current area again' });
    refresh.textContent = 'Refresh';
    refresh.addEventListener('click', () => this.refresh());
    this.eventsBtn = el('button', { type: 'button', id: 'area-events', title: "the area's events, one row each" });
    this.eventsBtn.textContent = 'Events';
    this.eventsBtn.addEventListener('click', () => this.showEvents(false));
    this.searchBtn = el('button', { type: 'button', id: 'search-events', title: "the search's events, one row each" });
    this.searchBtn.textContent = 'Search events';
    this.searchBtn.addEventListener('click', () => this.showEvents(true));
    const close = el('button', { type: 'button', className: 'area-close', title: 'close (O)' });
    close.textContent = '×';
    close.addEventListener('click', () => this.toggle());
    bar.append(this.title, refresh, this.eventsBtn, this.searchBtn, close);
    this.counts = el('div', { className: 'area-counts', id: 'area-counts' });
    const hbar = el('form', { className: 'area-hist-bar' });
    this.field = /** @type {HTMLInputElement} */ (el('input', { type: 'text', id: 'area-field', placeholder: 'numeric field for a histogram (Size, @time…)' }));
    this.field.setAttribute('aria-label', 'histogram field');
    const go = el('button', { type: 'submit' });
    go.textContent = 'Histogram';
    hbar.append(this.field, go);
    hbar.addEventListener('submit', (e) => {
      e.preventDefault();
      this.refresh();
    });
    this.hist = el('div', { className: 'area-hist', id: 'area-hist' });
    this.tableBox = el('div', { className: 'area-events', id: 'area-table' });
    this.tableBox.hidden = true;
    this.panel.append(bar, this.counts, hbar, this.hist, this.tableBox);
    root.append(this.panel);
    this.table = new EventsTable(this.tableBox, source, {
      get meta() { return /** @type {import('./source.js').Meta} */ (host.m.meta); },
      select: (ref) => host.select(ref),
      status: (t) => host.status(t),
    });
    this.key = '';
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    /** @type {any} the last counts reply */
    this.reply = null;
    /** @type {{from: bigint, to: bigint, tracks: number[] | null, q: string} | null} */
    this.area = null;
  }

  get isOpen() { return !this.panel.hidden; }

  /** After a draw: counts again, debounced, when the area has changed. */
  check() {
    const a = this.currentArea();
    const key = `${a.from}|${a.to}|${a.tracks}|${a.q}`;
    if (key === this.key) return;
    this.key = key;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 250);
  }

  toggle() {
    this.panel.hidden = !this.panel.hidden;
    if (this.isOpen) this.refresh();
  }

  /** The area now: the ruler, else the view; the selected track, else all. */
  currentArea() {
    const m = this.host.m;
    let from = m.vp.start, to = m.vp.end;
    if (m.ruler) {
      from = m.ruler.t0 < m.ruler.t1 ? m.ruler.t0 : m.ruler.t1;
      to = m.ruler.t0 < m.ruler.t1 ? m.ruler.t1 : m.ruler.t0;
    }
    return { from, to, tracks: m.selTrack >= 0 ? [m.selTrack] : null, q: this.host.filterQuery() };
  }

  /** Counts the current area (and the histogram of the field named). */
  async refresh() {
    if (!canTable(this.source)) {
      this.title.textContent = 'area tables need the server';
      return;
    }
    const a = this.currentArea();
    this.area = a;
    this.key = `${a.from}|${a.to}|${a.tracks}|${a.q}`;
    const meta = /** @type {import('./source.js').Meta} */ (this.host.m.meta);
    const tr = a.tracks ? (meta.tracks[a.tracks[0]]?.name ?? String(a.tracks[0])) : 'all tracks';
    this.title.textContent = `${relTime(a.from, meta.first)} – ${relTime(a.to, meta.first)} × ${tr}${a.q ? ' × ' + a.q : ''}`;
    const p = new URLSearchParams({ from: String(a.from), to: String(a.to) });
    if (a.q) p.set('q', a.q);
    if (a.tracks) p.set('tracks', a.tracks.join(','));
    const field = this.field.value.trim();
    if (field) {
      p.set('field', field);
      p.set('bins', '40');
    }
    const seq = ++this.seq;
    this.counts.textContent = 'counting…';
    let j;
    try {
      j = await this.source.counts(p);
    } catch (e) {
      if (seq === this.seq) this.counts.textContent = errText(e);
      return;
    }
    if (seq !== this.seq) return;
    this.reply = j;
    this.drawCounts(j);
    this.drawHist(j.histogram ?? null);
    if (j.cut_off) this.host.status(`Area counts: ${j.notice}`);
  }

  /** The type and track tables. @param {any} j */
  drawCounts(j) {
    clear(this.counts);
    const total = el('div', { className: 'area-total', id: 'area-total' });
    total.textContent = `${Number(j.total).toLocaleString('en-US')} events${j.complete ? '' : ' (cut off)'}`;
    const a = /** @type {{from: bigint, to: bigint, q: string}} */ (this.area);
    const types = this.tableOf('event type', (j.types ?? []).map((/** @type {any} */ t) => ({
      key: `type-${t.type}`, name: t.provider ? `${t.provider}/${t.event}` : t.event || `#${t.type}`, count: Number(t.count),
      query: areaQuery(a, [...(t.provider ? [`@provider = ${quote(t.provider)}`] : []), `@event = ${quote(t.event)}`]),
    })));
    const tracks = this.tableOf('track', (j.tracks ?? []).map((/** @type {any} */ t) => ({
      key: `track-${t.track}`, name: t.name || `track ${t.track}`, count: Number(t.count),
      query: areaQuery(a, [`@track = ${quote(t.name)}`]),
    })));
    types.id = 'area-types';
    tracks.id = 'area-tracks';
    this.counts.append(total, types, tracks);
  }

  /**
   * A table of names and counts whose rows search for their events.
   * @param {string} what
   * @param {{key: string, name: string, count: number, query: string}[]} rows
   */
  tableOf(what, rows) {
    const t = el('table', { className: 'area-table' });
    const head = el('tr');
    for (const h of [what, 'count']) {
      const th = el('th');
      th.textContent = h;
      head.append(th);
    }
    t.append(head);
    for (const r of rows) {
      const tr = el('tr', { title: 'search for these events' });
      tr.dataset.key = r.key;
      tr.dataset.query = r.query;
      const name = el('td');
      name.textContent = r.name;
      const c = el('td', { className: 'num' });
      c.textContent = r.count.toLocaleString('en-US');
      c.dataset.count = String(r.count);
      tr.append(name, c);
      tr.addEventListener('click', () => this.host.search(r.query));
      t.append(tr);
    }
    return t;
  }

  /** The field's histogram: bars, percentiles. @param {import('./histogram.js').Histogram | null} h */
  drawHist(h) {
    clear(this.hist);
    if (!h) return;
    const line = el('div', { className: 'area-pct' });
    const f = (/** @type {number} */ v) => (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toPrecision(4));
    line.textContent = `${h.field}: ${h.count.toLocaleString('en-US')} values (${h.missing} without) · min ${f(h.min)} · mean ${f(h.mean)} · p50 ${f(h.p50)} · p90 ${f(h.p90)} · p99 ${f(h.p99)} · max ${f(h.max)}${h.complete ? '' : ' · partial'}`;
    const W = 480, H = 80;
    const bars = el('div', { className: 'area-bars' });
    bars.style.width = `${W}px`;
    bars.style.height = `${H}px`;
    const a = /** @type {{from: bigint, to: bigint, q: string}} */ (this.area);
    for (const b of histBars(h, W, H)) {
      const d = el('div', { className: 'area-bar-bin', title: `${f(b.lo)} … ${f(b.hi)}: ${b.count}` });
      d.style.left = `${b.x}px`;
      d.style.width = `${b.w}px`;
      d.style.height = `${b.h}px`;
      d.dataset.count = String(b.count);
      d.addEventListener('click', () => this.host.search(areaQuery(a, [binQuery(h, b.i)])));
      bars.append(d);
    }
    this.hist.append(line, bars);
  }

  /** Opens the events table of the area (or of the search). @param {boolean} search */
  showEvents(search) {
    const m = this.host.m;
    this.tableBox.hidden = false;
    if (search) {
      this.table.show({ q: m.query, from: null, to: null, tracks: null, title: m.query ? `search “${m.query}”` : 'every event' });
      return;
    }
    const a = this.area ?? this.currentArea();
    this.table.show({ q: a.q, from: a.from, to: a.to, tracks: a.tracks, title: 'area' });
  }
}
