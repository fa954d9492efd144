// @ts-check
// A live trace's state as its `live` messages tell it (web/PROTOCOL.md
// §live), with no DOM: the message parsed (times as BigInt), the events/s
// rate over the last seconds, whether the metadata must be loaded again
// (more tracks or types), the view that chases the newest event, whether
// a view covers the whole span (a stored trace's indexing refits it), and
// the status text. The controller is live.js. Tested under node (ui/jstest).

'use strict';

/**
 * One `live` message.
 * @typedef {object} LiveMsg
 * @property {boolean} ended   the stored index replaced the live one (or, indexing, the whole trace's replaced the prefix)
 * @property {boolean} indexing a stored trace's prefix grows as it indexes: not a live source (no Follow, no Stop)
 * @property {number} events   events indexed so far
 * @property {bigint} first    first event time (ns)
 * @property {bigint} last     newest event time (ns)
 * @property {number} tracks   tracks in the current snapshot
 * @property {number} types    event types in the current snapshot
 */

/** How far back the rate looks (ms): long enough not to jitter at ~10 messages/s. */
export const RATE_WINDOW_MS = 2000;

/** @param {unknown} v */
function count(v) {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

/** @param {unknown} v @returns {bigint | null} */
function time(v) {
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  return null;
}

/**
 * A `live` message as a LiveMsg, or null when it cannot be one (the server
 * is trusted less than it might be).
 * @param {any} m
 * @returns {LiveMsg | null}
 */
export function liveOf(m) {
  if (!m || m.type !== 'live') return null;
  const first = time(m.first);
  const last = time(m.last);
  if (first === null || last === null) return null;
  return { ended: m.ended === true, indexing: m.indexing === true, events: count(m.events), first, last: last < first ? first : last, tracks: count(m.tracks), types: count(m.types) };
}

/**
 * Events per second over the last RATE_WINDOW_MS, from (time, events)
 * samples: the growth between the oldest sample in the window and the
 * newest. Times are the caller's (performance.now() on the page).
 */
export class RateMeter {
  constructor(windowMs = RATE_WINDOW_MS) {
    this.windowMs = windowMs;
    /** @type {{t: number, n: number}[]} */
    this.samples = [];
  }

  /** @param {number} t ms @param {number} events the count so far */
  add(t, events) {
    const s = this.samples;
    // A count that went down is another index (the stored one): start over.
    if (s.length && events < s[s.length - 1].n) s.length = 0;
    s.push({ t, n: events });
    // Keep one sample at or before the window's start, so the rate spans it.
    while (s.length > 2 && s[1].t <= t - this.windowMs) s.shift();
  }

  /** Events per second, 0 until two samples apart in time. */
  rate() {
    const s = this.samples;
    if (s.length < 2) return 0;
    const a = s[0], b = s[s.length - 1];
    const dt = b.t - a.t;
    return dt > 0 ? ((b.n - a.n) * 1000) / dt : 0;
  }
}

/**
 * Whether a message names more tracks or types than the metadata held
 * has: the page then loads the metadata again.
 * @param {{tracks: unknown[], types: unknown[]}} meta @param {LiveMsg} msg
 */
export function metaStale(meta, msg) {
  return msg.tracks !== meta.tracks.length || msg.types !== meta.types.length;
}

/**
 * Whether a view shows the whole span: while a stored trace indexes, such
 * a view (the default one) is fitted to the span again as it grows.
 * @param {{start: bigint, end: bigint}} vp @param {{first: bigint, last: bigint}} span
 */
export function coversSpan(vp, span) {
  return vp.start <= span.first && vp.end >= span.last;
}

/**
 * The range of a chased view of span ns that ends just after the newest
 * event by a fiftieth of the span, as the server moves a chased request
 * (web/live.go serveLive).
 * @param {bigint} last the newest event @param {bigint} span the view's duration
 * @returns {{start: bigint, end: bigint}}
 */
export function chaseRange(last, span) {
  const d = span > 0n ? span : 1n;
  const end = last + d / 50n + 1n;
  return { start: end - d, end };
}

/**
 * The status line of a live trace: "LIVE · 12,000 events · 2,000 events/s".
 * @param {number} events @param {number} rate events per second
 */
export function liveText(events, rate) {
  const r = rate > 0 ? ` · ${Math.round(rate).toLocaleString('en-US')} events/s` : '';
  return `live · ${Math.max(0, Math.floor(events)).toLocaleString('en-US')} events${r}`;
}
