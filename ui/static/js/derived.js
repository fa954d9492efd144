// @ts-check
// DerivedTracks: the page's controller of derived tracks (issue #15), for
// the App: learns the trace's derived tracks, asks for the rows near the
// view (debounced, latest wins) with the values counters enter the range
// with, selects slices (details from /spans/{track}/{slice}, ←/→ steps),
// collapses groups, snaps the ruler to slice edges and fetches flows
// (/flows) for the selected event and, with the toggle, for the view.
// What is drawn where is spans.js's and groups.js's; spandraw.js paints.

'use strict';

import { LatestWins } from './source.js';
import { Viewport } from './viewport.js';
import { centreOn } from './navigate.js';
import { layoutItems, itemAt, snapTime } from './spans.js';
import { rowKind } from './groups.js';
import { renderSliceDetails } from './dom.js';
import { errText } from './panels.js';

/** @typedef {import('./source.js').Source} Source */

const PAD = 0.5; // ask for half a width beyond each edge, as the App does for frames
const SPANS_DEBOUNCE_MS = 40; // derived tracks are asked for once a pan or zoom pauses this long
const SNAP_PX = 6; // the ruler snaps to a slice edge this close

export class DerivedTracks {
  /** @param {import('./app.js').App} app */
  constructor(app) {
    this.app = app;
    /** @type {string} the derived-track request last sent, as a key */
    this.spansAsked = '';
    this.spansTimer = 0;
    this.spanFrames = new LatestWins(
      (/** @type {import('./source.js').SpanQuery} */ q) => this.spansWithEntry(q),
      (/** @type {import('./spans.js').SpanFrame} */ f) => {
        this.m.spans = f;
        this.spanDraws++;
        this.app.schedule();
      },
      (/** @type {unknown} */ e) => this.panels.banner(`derived tracks request failed: ${errText(e)}`),
    );
    this.spanDraws = 0;
    /** @type {import('./source.js').SliceDetails | null} the selected slice's details */
    this.sliceDetails = null;
    this.sliceSeq = 0;
    this.flowsSeq = 0;
    this.selFlowsSeq = 0;
    this.flowsTimer = 0;
    this.spansRes = 0;
  }

  get m() { return this.app.m; }
  get source() { return this.app.source; }
  get panels() { return this.app.panels; }
  get ui() { return this.app.ui; }
  schedule() { this.app.schedule(); }
  layout() { this.app.layout(); }
  request() { this.app.request(); }
  /** @param {Viewport} vp @param {'push' | 'replace' | 'none'} url */
  setView(vp, url) { this.app.setView(vp, url); }

  /**
   * Learns the trace's derived tracks (one spans request over the whole
   * trace, one pixel wide: the tracks come with it).
   * @param {import('./source.js').Meta} meta
   */
  async load(meta) {
    const src = this.source;
    if (!src.spans) return;
    try {
      const f = await src.spans({ from: meta.first, to: meta.last + 1n, width: 1, tracks: null });
      this.m.derived = [...f.tracks.values()].map((t) => t.track);
      if (f.total > this.m.derived.length) this.panels.status(`${f.total} derived tracks; the first ${this.m.derived.length} are shown.`);
    } catch (e) {
      this.panels.banner(`derived tracks: ${errText(e)}`);
    }
  }

  /**
   * Asks for the derived tracks among the rows near the view over the
   * padded range, once a pan or zoom pauses (latest wins), and, with the
   * flows toggle on, for the chains of related events in view.
   * @param {number[]} near  rows near the view
   */
  requestSpans(near) {
    const m = this.m;
    if (!this.source.spans || !m.derived.length) return;
    const ids = [];
    for (const r of near) {
      const k = rowKind(r);
      if (k.kind === 'derived') ids.push(k.id);
    }
    const vp = m.vp;
    const f = m.spans;
    const key = ids.join(',');
    // The frame held (or the one asked for) covers the view at its zoom: nothing to ask.
    if (f && this.spansAsked.startsWith(key + '|') && f.from <= vp.start && f.to >= vp.end &&
      Math.abs(Math.log2(this.spansRes / vp.nsPerPx)) < 0.01) return;
    if (ids.length === 0) return;
    const pad = BigInt(Math.round(vp.span * PAD));
    const q = { from: vp.start - pad, to: vp.end + pad, width: Math.min(8192, Math.round(vp.width * (1 + 2 * PAD))), tracks: ids };
    const k2 = `${key}|${q.from}|${q.to}|${q.width}`;
    if (k2 === this.spansAsked) return;
    this.spansAsked = k2;
    this.spansRes = vp.nsPerPx;
    clearTimeout(this.spansTimer);
    this.spansTimer = setTimeout(() => {
      this.spanFrames.push(q);
    }, m.spans ? SPANS_DEBOUNCE_MS : 0);
  }

  /** The flows in view asked for again once a pan or zoom pauses. */
  flowsSoon() {
    clearTimeout(this.flowsTimer);
    this.flowsTimer = setTimeout(() => this.requestAllFlows(), SPANS_DEBOUNCE_MS);
  }

  /**
   * A spans frame, with the values its counter tracks hold when its range
   * begins (the last sample before it: one more request, one bucket
   * wide, over the trace up to the range), so a counter zoomed in between
   * two samples is still drawn.
   * @param {import('./source.js').SpanQuery} q
   */
  async spansWithEntry(q) {
    const src = this.source;
    const spans = (/** @type {import('./source.js').SpanQuery} */ x) => /** @type {NonNullable<Source['spans']>} */ (src.spans).call(src, x);
    const f = await spans(q);
    const first = this.m.trace.first;
    const counters = [...f.tracks.values()].filter((t) => t.track.kind === 'counter').map((t) => t.track.id);
    if (counters.length && q.from > first) {
      const before = await spans({ from: first, to: q.from, width: 1, tracks: counters });
      for (const [id, t] of before.tracks) {
        const c = t.counters[t.counters.length - 1];
        if (c) f.enter.set(id, c.last);
      }
    }
    return f;
  }

  /** The chains of related events in view (the flows toggle). */
  async requestAllFlows() {
    const src = this.source;
    if (!src.flowsIn) return;
    const seq = ++this.flowsSeq;
    const vp = this.m.vp;
    try {
      const chains = await src.flowsIn(vp.start, vp.end);
      if (seq !== this.flowsSeq) return;
      this.m.allFlows = chains;
      this.schedule();
    } catch (e) {
      this.panels.banner(`flows: ${errText(e)}`);
    }
  }

  /** Turns the arrows between all related events in view on or off. */
  toggleFlows() {
    const m = this.m;
    m.flowsAll = !m.flowsAll;
    this.panels.status(m.flowsAll ? 'Flows: arrows between related events in view.' : 'Flows: only the selected event\'s.');
    if (m.flowsAll) this.requestAllFlows();
    else m.allFlows = [];
    this.schedule();
  }

  /**
   * Collapses or expands a group (by its key), or the group of the
   * selected track when key is absent.
   * @param {string} [key]
   */
  toggleGroup(key) {
    const m = this.m;
    if (key === undefined) {
      const sel = m.selTrack >= 0 ? m.selTrack : -1;
      const i = sel >= 0 ? m.rows.indexOf(sel) : m.top;
      for (let r = Math.min(i, m.rows.length - 1); r >= 0; r--) {
        const k = rowKind(m.rows[r]);
        if (k.kind === 'group') {
          key = m.groups[k.id]?.key;
          break;
        }
      }
      if (key === undefined) return;
    }
    if (m.collapsed.has(key)) m.collapsed.delete(key);
    else m.collapsed.add(key);
    this.layout();
    this.request();
    this.schedule();
  }

  /**
   * A click on a derived row or a group header: a group's header (or its
   * name) collapses it; a slice is selected; a summary zooms to its bucket.
   * @param {number} x plot x (-1: the name column) @param {number} row @param {number} dy from the row's top
   */
  clickRow(x, row, dy) {
    const m = this.m;
    const k = rowKind(row);
    if (k.kind === 'group') {
      const g = m.groups[k.id];
      if (g) this.toggleGroup(g.key);
      return;
    }
    if (k.kind !== 'derived') return;
    m.selDerived = k.id;
    const st = m.spans?.tracks.get(k.id);
    if (x < 0 || !st) {
      this.schedule();
      return;
    }
    const b = itemAt(layoutItems(st.items, st.depths, m.vp, m.rowH), x, dy);
    if (!b) {
      this.schedule();
      return;
    }
    if (b.item.summary) {
      this.setView(Viewport.fromRange(b.item.start, b.item.end > b.item.start ? b.item.end : b.item.start + 1n, m.vp.width), 'push');
      return;
    }
    this.selectSlice(k.id, b.item.slice);
  }

  /** Selects a derived slice: its details from the source. @param {number} track @param {number} slice */
  async selectSlice(track, slice) {
    const m = this.m;
    const src = this.source;
    if (!src.slice) return;
    const seq = ++this.sliceSeq;
    m.selSlice = { track, slice };
    this.schedule();
    let d;
    try {
      d = await src.slice(track, slice);
    } catch (e) {
      if (seq === this.sliceSeq) this.panels.banner(`slice ${track}/${slice}: ${errText(e)}`);
      return;
    }
    if (seq !== this.sliceSeq) return;
    this.sliceDetails = d;
    m.selEvent = null;
    m.details = null;
    m.flows = [];
    if (m.ruler && m.markKey) m.ruler = { t0: d.start, t1: d.end };
    renderSliceDetails(this.ui.details, d, m.derived.find((t) => t.id === track), m.trace);
    this.ui.detailsSummary.textContent = `slice ${d.name}`;
    this.schedule();
  }

  /** The events related to the selected one (flow arrows). @param {string} ref */
  async loadFlows(ref) {
    const m = this.m;
    m.flows = [];
    const src = this.source;
    if (!src.flows) return;
    const seq = ++this.selFlowsSeq;
    try {
      const f = await src.flows(ref);
      if (seq !== this.selFlowsSeq || m.selEvent?.ref !== ref) return;
      m.flows = f;
      this.schedule();
    } catch (e) {
      this.panels.status(`flows: ${errText(e)}`);
    }
  }

  /**
   * Selects the next (d 1) or previous (d -1) whole slice of the selected
   * derived row in the frame held, from the selected slice or the view's
   * edge. @param {number} d
   */
  stepSlice(d) {
    const m = this.m;
    const st = m.spans?.tracks.get(m.selDerived);
    if (!st) return;
    const cur = m.selSlice && m.selSlice.track === m.selDerived ? st.items.find((it) => it.slice === m.selSlice?.slice) : undefined;
    const from = cur ? cur.start : m.vp.time(d > 0 ? 0 : m.vp.width);
    /** @type {import('./spans.js').SpanItem | undefined} */
    let best;
    for (const it of st.items) {
      if (it.summary || it === cur) continue;
      if (d > 0 ? it.start > from || (it.start === from && cur && it.slice > cur.slice) : it.start < from) {
        if (!best || (d > 0 ? it.start < best.start : it.start > best.start)) best = it;
      }
    }
    if (!best) return;
    const x = m.vp.x(best.start);
    if (x < 0 || x > m.vp.width) this.setView(centreOn(m.vp, best.start), 'push');
    this.selectSlice(m.selDerived, best.slice);
  }

  /** t snapped to the nearest slice edge in view within a few pixels. @param {bigint} t */
  snap(t) {
    return snapTime(t, this.m.spans, SNAP_PX * this.m.vp.nsPerPx);
  }
}
