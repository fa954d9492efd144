// @ts-check
// The compare table's data, no DOM: GET /api/compare's rows (web/PROTOCOL.md
// §8) checked and typed, sorted by any column, filtered by a text, and
// their values formatted (durations as times, rates per second, relative
// deltas as percentages, "new" and "gone"). Tested under node
// (ui/jstest/comparetable.test.js).

'use strict';

/**
 * @typedef {object} Row
 * @property {string} kind     type, track, slices, slice or field
 * @property {string} key
 * @property {string} measure  count, rate, mean, p50, p99, min or max
 * @property {number} a
 * @property {number} b
 * @property {number} delta    b − a
 * @property {number | null} rel  delta / |a|; null when a is 0 and b is not
 * @property {number} score
 * @property {number} rank     the row's place in the server's order (by score)
 */

/** @typedef {'rank' | 'score' | 'kind' | 'key' | 'measure' | 'a' | 'b' | 'delta' | 'rel'} Column */

/** The table's columns, left to right: [column, heading, numeric]. @type {[Column, string, boolean][]} */
export const COLUMNS = [
  ['score', 'score', true], ['kind', 'kind', false], ['key', 'key', false], ['measure', 'measure', false],
  ['a', 'A', true], ['b', 'B', true], ['delta', 'delta', true], ['rel', 'change', true],
];

/**
 * The rows of a reply; throws on a malformed one.
 * @param {any} j @returns {Row[]}
 */
export function parseRows(j) {
  if (!Array.isArray(j?.rows)) throw new Error('compare: the reply has no rows');
  return j.rows.map((/** @type {any} */ r, /** @type {number} */ i) => {
    const num = (/** @type {any} */ v) => {
      const x = Number(v);
      if (typeof v !== 'number' || !Number.isFinite(x)) throw new Error(`compare: row ${i}: not a number`);
      return x;
    };
    return {
      kind: String(r?.kind ?? ''), key: String(r?.key ?? ''), measure: String(r?.measure ?? ''),
      a: num(r.a), b: num(r.b), delta: num(r.delta), rel: r.rel === null ? null : num(r.rel), score: num(r.score), rank: i,
    };
  });
}

/**
 * A sort key of a row for a column: a relative delta of null ("new",
 * from 0 to something) sorts above every percentage.
 * @param {Row} r @param {Column} col
 */
function sortKey(r, col) {
  if (col === 'rel') return r.rel === null ? Infinity * Math.sign(r.delta) : r.rel;
  return r[col];
}

/**
 * The rows sorted by a column (a copy), ties in the server's order;
 * desc puts the largest (or last by name) first.
 * @param {readonly Row[]} rows @param {Column} col @param {boolean} desc
 */
export function sortRows(rows, col, desc) {
  const sign = desc ? -1 : 1;
  return rows.slice().sort((x, y) => {
    const p = sortKey(x, col), q = sortKey(y, col);
    let c = 0;
    if (typeof p === 'string' && typeof q === 'string') c = p < q ? -1 : p > q ? 1 : 0;
    else c = Number(p) < Number(q) ? -1 : Number(p) > Number(q) ? 1 : 0;
    return sign * c || x.rank - y.rank;
  });
}

/**
 * The rows every word of q (case-insensitive, separated by spaces) is
 * found in: in the kind, the key or the measure. Empty q keeps all.
 * @param {readonly Row[]} rows @param {string} q
 */
export function filterRows(rows, q) {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return rows.slice();
  return rows.filter((r) => {
    const s = `${r.kind} ${r.key} ${r.measure}`.toLowerCase();
    return words.every((w) => s.includes(w));
  });
}

/** Whether a row's values are durations in ns: the slice measures but their count. @param {Row} r */
export function isDuration(r) {
  return (r.kind === 'slices' || r.kind === 'slice') && r.measure !== 'count';
}

/** A number with up to 4 significant digits, integers as they are. @param {number} v */
export function num(v) {
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e15)) return v.toExponential(3);
  return Number(v.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** A duration in ns as text with a unit (ns, µs, ms, s). @param {number} ns */
export function duration(ns) {
  const a = Math.abs(ns);
  const [div, unit] = a >= 1e9 ? [1e9, 's'] : a >= 1e6 ? [1e6, 'ms'] : a >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  return `${Number((ns / div).toPrecision(4))} ${unit}`;
}

/**
 * A row's value (A, B) as shown: durations with a unit, rates per second.
 * @param {Row} r @param {number} v
 */
export function formatValue(r, v) {
  if (isDuration(r)) return duration(v);
  if (r.measure === 'rate') return `${num(v)}/s`;
  return num(v);
}

/** A row's delta, signed. @param {Row} r */
export function formatDelta(r) {
  const s = formatValue(r, r.delta);
  return r.delta > 0 ? `+${s}` : s;
}

/** A row's relative change: "+12.5%", "new" (from 0), "gone" (to 0). @param {Row} r */
export function formatRel(r) {
  if (r.rel === null) return 'new';
  if (r.rel === -1 && r.b === 0 && r.a !== 0) return 'gone';
  const p = (100 * r.rel).toFixed(1);
  return r.rel > 0 ? `+${p}%` : `${p}%`;
}
