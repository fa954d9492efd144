// @ts-check
// Overview marks: where the overview strip marks search hits. A hit list
// the source cut short (10,000 hits) covers only the start of the trace;
// the server then counts the hits of the whole trace per time bin (the
// search endpoint's `bins=N`, PROTOCOL.md §3, one bin per overview pixel)
// and the strip marks those. Pure: tested under node; render.js draws.

'use strict';

/**
 * Hit counts per equal time bin of the whole trace (the search reply's
 * `bins`): an event at t counts in bin (t-from)*N/(to-from+1).
 * @typedef {object} HitBins
 * @property {bigint} from    the trace's first event
 * @property {bigint} to      its last event (inclusive)
 * @property {number[]} counts
 * @property {boolean} complete false: the server stopped counting early
 */

/**
 * A marked pixel column of the strip with the hits it stands for.
 * @typedef {object} Mark
 * @property {number} x      CSS px, an integer
 * @property {number} count
 */

/**
 * The strip's x of time t: the strip maps first..last onto x0..x0+w-1.
 * @param {bigint} t @param {bigint} first @param {bigint} last @param {number} x0 @param {number} w
 */
export function stripX(t, first, last, x0, w) {
  const span = Number(last - first) || 1;
  return x0 + (Number(t - first) / span) * (w - 1);
}

/**
 * The columns to mark for hit times (a list, in time order): one mark per
 * column, counting the hits in it.
 * @param {bigint[]} times @param {bigint} first @param {bigint} last @param {number} x0 @param {number} w
 * @returns {Mark[]}
 */
export function hitMarks(times, first, last, x0, w) {
  /** @type {Mark[]} */
  const out = [];
  for (const t of times) {
    const x = Math.round(stripX(t, first, last, x0, w));
    const prev = out[out.length - 1];
    if (prev && prev.x === x) prev.count++;
    else out.push({ x, count: 1 });
  }
  return out;
}

/**
 * The columns to mark for hit counts per bin: every column a non-empty
 * bin's time range covers, with the bin's hits shared among them; columns
 * in ascending order, clipped to the strip.
 * @param {HitBins} bins @param {bigint} first @param {bigint} last @param {number} x0 @param {number} w
 * @returns {Mark[]}
 */
export function binMarks(bins, first, last, x0, w) {
  const n = bins.counts.length;
  if (n === 0 || bins.to < bins.from) return [];
  const len = bins.to - bins.from + 1n;
  const N = BigInt(n);
  const lo = Math.floor(x0);
  const hi = Math.floor(x0 + w - 1);
  /** @type {Map<number, number>} */
  const cols = new Map();
  for (let i = 0; i < n; i++) {
    const c = bins.counts[i];
    if (!(c > 0)) continue;
    // The bin holds the times t with floor((t-from)*N/len) = i.
    const b = BigInt(i);
    const t0 = bins.from + ceilDiv(b * len, N);
    const t1 = bins.from + ceilDiv((b + 1n) * len, N) - 1n;
    if (t1 < t0) continue;
    const a = Math.max(lo, Math.round(stripX(t0, first, last, x0, w)));
    const z = Math.min(hi, Math.round(stripX(t1, first, last, x0, w)));
    if (z < a) continue;
    const each = c / (z - a + 1);
    for (let x = a; x <= z; x++) cols.set(x, (cols.get(x) ?? 0) + each);
  }
  return [...cols].sort((p, q) => p[0] - q[0]).map(([x, count]) => ({ x, count }));
}

/** @param {bigint} a @param {bigint} b a ≥ 0, b > 0 */
function ceilDiv(a, b) {
  return (a + b - 1n) / b;
}

/**
 * The bins to ask for: one per pixel of a strip w px wide, within the
 * server's bound (web.MaxSearchBins).
 * @param {number} w
 */
export function binCount(w) {
  return Math.max(1, Math.min(MAX_BINS, Math.floor(w)));
}

/** The most bins the search endpoint counts (web.MaxSearchBins). */
export const MAX_BINS = 4096;
