// @ts-check
// TogetherSource: a combined view of several traces (web/PROTOCOL.md
// §together) as the page's one source. The server serves the traces as
// one trace: tracks and event types renumbered, times on one aligned
// axis. What differs from WsSource is where the endpoints are
// (/api/together/…?t=…&off=…), the user's per-trace offsets (sent with
// every request; the view's span follows them), the traces' names (the
// tracks' groups) and what a combined view does not have yet (stacks,
// derived tracks, flows, search bins: left out, so the page does without).

'use strict';

import { WsSource, big } from './conn.js';
import { formatOffsets } from './urlstate.js';
import { VIEWPORT_LIMITS } from './urlspec.js';

/**
 * One trace of the view, as the meta reply places it.
 * @typedef {object} Placed
 * @property {string} id
 * @property {string} name
 * @property {bigint} first  its own first event time
 * @property {bigint} last
 * @property {bigint} shift  its Time t is at aligned t + shift + its offset
 * @property {string} how    "wall", "domain" or "first event"
 */

const MAX_OFFSET = BigInt(VIEWPORT_LIMITS.offset);

export class TogetherSource extends WsSource {
  /**
   * @param {any} page the viewer page data (page.together: traces, query)
   * @param {{trace: number, ns: bigint}[]} offsets the URL's offsets
   */
  constructor(page, offsets) {
    super(page);
    /** @type {{id: string, name: string}[]} */
    this.traces = (page.together?.traces ?? []).map((/** @type {any} */ t) => ({ id: String(t.id), name: String(t.name ?? t.id) }));
    /** The user's offset of each trace, ns. @type {bigint[]} */
    this.offsets = this.traces.map(() => 0n);
    this.setOffsets(offsets);
    /** @type {Placed[]} */
    this.placed = [];
    const self = /** @type {any} */ (this);
    // What a combined view has not yet: the page leaves these out.
    for (const k of ['spans', 'slice', 'flows', 'flowsIn', 'stackEvents', 'stacks', 'stackSamples', 'stacksExportURL', 'searchBins', 'stop']) self[k] = undefined;
  }

  /** The `t` and `off` of the URL grammar, as a query. */
  query() {
    const off = formatOffsets(this.offsetList());
    return `t=${this.traces.map((t) => t.id).join(',')}${off ? '&off=' + off : ''}`;
  }

  /** @param {string} path */
  api(path) {
    return `/api/together/${path}${path.includes('?') ? '&' : '?'}${this.query()}`;
  }

  viewFields() {
    return { off: formatOffsets(this.offsetList()) };
  }

  /** The non-zero offsets as the URL writes them. */
  offsetList() {
    return this.offsets.flatMap((ns, trace) => (ns !== 0n ? [{ trace, ns }] : []));
  }

  /** Takes the URL's offsets (Back/Forward, a reload). @param {{trace: number, ns: bigint}[]} offs */
  setOffsets(offs) {
    this.offsets = this.traces.map(() => 0n);
    for (const o of offs) if (o.trace < this.offsets.length) this.offsets[o.trace] = clampOffset(o.ns);
    if (this.meta) this.fitSpan(this.meta);
  }

  /** Sets trace k's offset and moves the view's span with it. @param {number} k @param {bigint} ns */
  setOffset(k, ns) {
    if (k < 0 || k >= this.offsets.length) return;
    this.offsets[k] = clampOffset(ns);
    if (this.meta) this.fitSpan(this.meta);
  }

  /** Adds the view's traces and offsets to a URL state. @param {import('./urlstate.js').ViewState} st */
  addState(st) {
    st.traces = this.traces.map((t) => t.id);
    st.offsets = this.offsetList();
    return st;
  }

  async loadMeta() {
    const meta = await super.loadMeta();
    const j = /** @type {any} */ (this).metaJSON ?? {};
    this.placed = (Array.isArray(j.traces) ? j.traces : []).map((/** @type {any} */ t) => ({
      id: String(t.id), name: String(t.name ?? ''), first: big(t.first), last: big(t.last), shift: big(t.shift), how: String(t.how ?? ''),
    }));
    meta.traces = this.traces.map((t) => t.name);
    meta.name = meta.traces.join(' + ');
    /** The server's notices (a trace without a wall clock), for the page to show. @type {string[]} */
    this.notices = Array.isArray(j.notices) ? j.notices.map(String) : [];
    this.fitSpan(meta);
    return meta;
  }

  /**
   * The aligned span of the traces with their offsets now (the meta
   * reply's is that of the offsets it was asked with).
   * @param {import('./source.js').Meta} meta
   */
  fitSpan(meta) {
    let first = null, last = null;
    for (const [k, p] of this.placed.entries()) {
      const d = p.shift + (this.offsets[k] ?? 0n);
      if (first === null || p.first + d < first) first = p.first + d;
      if (last === null || p.last + d > last) last = p.last + d;
    }
    if (first !== null && last !== null) {
      meta.first = first;
      meta.last = last;
    }
  }

  /** The trace a track belongs to, -1 for none. @param {number} track */
  traceOf(track) {
    return this.meta?.tracks[track]?.trace ?? -1;
  }

  /** An event's details, saying which trace it came from. @param {string} ref */
  async details(ref) {
    const d = await super.details(ref);
    const k = this.traceOf(d.track);
    if (k >= 0) d.labels.unshift({ key: 'trace', value: this.traces[k]?.name ?? String(k) });
    return d;
  }
}

/** @param {bigint} ns */
function clampOffset(ns) {
  return ns > MAX_OFFSET ? MAX_OFFSET : ns < -MAX_OFFSET ? -MAX_OFFSET : ns;
}
