// @ts-check
// Histogram layout for the area-selection panel (areatable.js), no DOM:
// bars of a counts reply's field histogram (web/PROTOCOL.md §3, counts)
// and the value range a bar stands for.

'use strict';

/**
 * @typedef {object} Histogram  as the counts endpoint sends it
 * @property {string} field
 * @property {number} count
 * @property {number} missing
 * @property {number} min
 * @property {number} max
 * @property {number} mean
 * @property {number} p50
 * @property {number} p90
 * @property {number} p99
 * @property {number[]} bins
 * @property {boolean} complete
 *
 * @typedef {object} Bar
 * @property {number} i      bin index
 * @property {number} x      left edge, px
 * @property {number} w      width, px (at least 1)
 * @property {number} h      height, px (0 for an empty bin, at least 1 otherwise)
 * @property {number} lo     the bin's values: lo ≤ v < hi (the last bin: ≤ hi)
 * @property {number} hi
 * @property {number} count
 */

/**
 * The bars of a histogram drawn width × height px: equal widths, heights
 * proportional to the counts (the largest bin is the full height).
 * @param {Histogram} h @param {number} width @param {number} height
 * @returns {Bar[]}
 */
export function histBars(h, width, height) {
  const n = h.bins.length;
  if (n === 0 || width <= 0) return [];
  const top = Math.max(1, ...h.bins);
  const bw = width / n;
  return h.bins.map((c, i) => {
    const [lo, hi] = binRange(h, i);
    const x = Math.round(i * bw);
    return {
      i, x, w: Math.max(1, Math.round((i + 1) * bw) - x),
      h: c > 0 ? Math.max(1, Math.round((c / top) * height)) : 0,
      lo, hi, count: c,
    };
  });
}

/**
 * The values of bin i: bins are equal widths from min to max.
 * @param {Histogram} h @param {number} i
 * @returns {[number, number]}
 */
export function binRange(h, i) {
  const n = h.bins.length;
  const w = (h.max - h.min) / n;
  const lo = h.min + i * w;
  const hi = i === n - 1 ? h.max : h.min + (i + 1) * w;
  return [lo, hi];
}

/**
 * The search query for a bin's events: the field within its range (the
 * last bin closed), as the query grammar (PROTOCOL.md §5) writes it.
 * @param {Histogram} h @param {number} i
 */
export function binQuery(h, i) {
  const [lo, hi] = binRange(h, i);
  const f = h.field;
  return i === h.bins.length - 1 ? `${f} >= ${lo} and ${f} <= ${hi}` : `${f} >= ${lo} and ${f} < ${hi}`;
}
