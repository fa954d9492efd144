// @ts-check
// Track order: which tracks the timeline shows, top to bottom, and which row
// is on top. Pure functions over track ids (no DOM), used by the model and
// the actions, and tested under node (ui/jstest).

'use strict';

/** @typedef {import('./source.js').Track} Track */

/**
 * Natural order: meta order (by track id), tracks without events last (a
 * perf.data file names every thread of the machine, most of them silent).
 * @param {Track[]} tracks
 * @returns {number[]}
 */
export function naturalOrder(tracks) {
  return tracks.filter((t) => t.events !== 0).map((t) => t.id)
    .concat(tracks.filter((t) => t.events === 0).map((t) => t.id));
}

/**
 * Explicit order first, then any track it misses, in natural order.
 * @param {number[]} order @param {number[]} natural
 */
export function mergeOrder(order, natural) {
  const seen = new Set(order);
  return [...order, ...natural.filter((id) => !seen.has(id))];
}

/**
 * The order in force (a new array): the explicit order (raise, sink, chase)
 * completed by the natural one, or the natural order when there is none.
 * @param {number[]} order @param {number[]} natural
 */
export function currentOrder(order, natural) {
  return order.length ? mergeOrder(order, natural) : [...natural];
}

/**
 * @typedef {object} RowsInput
 * @property {number[]} order     explicit order, empty for the natural one
 * @property {number[]} natural
 * @property {number[]} pins      pinned tracks, in pin order
 * @property {Set<number>} hide   hidden tracks
 * @property {string} filter      track-name filter (case-insensitive substring), "" for none
 * @property {Track[]} tracks     the trace's tracks, indexed by id
 */

/**
 * The rows shown, top to bottom: pinned tracks (that exist) first, then the
 * order in force, leaving out hidden tracks and those the filter rejects.
 * @param {RowsInput} s
 * @returns {number[]}
 */
export function layoutRows(s) {
  const base = s.order.length ? mergeOrder(s.order, s.natural) : s.natural;
  const f = s.filter.toLowerCase();
  const ok = (/** @type {number} */ id) => !s.hide.has(id) && (!f || (s.tracks[id]?.name ?? '').toLowerCase().includes(f));
  const pinned = s.pins.filter((id) => s.tracks[id] && ok(id));
  const pinSet = new Set(pinned);
  return [...pinned, ...base.filter((id) => !pinSet.has(id) && ok(id))];
}

/** Moves id to the top of order. @param {number[]} order @param {number} id */
export function raise(order, id) {
  return [id, ...order.filter((x) => x !== id)];
}

/** Moves id to the bottom of order. @param {number[]} order @param {number} id */
export function sink(order, id) {
  return [...order.filter((x) => x !== id), id];
}

/** Pins id (last), or unpins it; changes pins in place. @param {number[]} pins @param {number} id */
export function togglePin(pins, id) {
  const i = pins.indexOf(id);
  if (i >= 0) pins.splice(i, 1);
  else pins.push(id);
  return pins;
}

/**
 * Chase (g2): the tracks holding a hit at or after `from`, ordered by that
 * first hit (ties by track id), then the rest of `order` as it was.
 * @param {{time: bigint, track: number}[]} hits in time order
 * @param {bigint} from
 * @param {number[]} order the order in force
 * @returns {{chased: number[], order: number[]}}
 */
export function chaseOrder(hits, from, order) {
  /** @type {Map<number, bigint>} */
  const first = new Map();
  for (const h of hits) if (h.time >= from && !first.has(h.track)) first.set(h.track, h.time);
  const chased = [...first.keys()].sort((a, b) => {
    const x = /** @type {bigint} */ (first.get(a)), y = /** @type {bigint} */ (first.get(b));
    return x < y ? -1 : x > y ? 1 : a - b;
  });
  return { chased, order: [...chased, ...order.filter((id) => !first.has(id))] };
}

/**
 * The top row kept within [0, rows - visible] (0 when all rows fit).
 * @param {number} top @param {number} rows @param {number} visible
 */
export function clampTop(top, rows, visible) {
  return Math.max(0, Math.min(top, rows - visible));
}

/**
 * The top row after scrolling by n rows.
 * @param {number} top @param {number} n @param {number} rows @param {number} visible
 */
export function scrollTop(top, n, rows, visible) {
  const max = Math.max(0, rows - visible);
  return Math.max(0, Math.min(max, top + n));
}

/**
 * The top row that brings row i into view, moving as little as possible.
 * @param {number} top @param {number} i @param {number} visible
 */
export function revealTop(top, i, visible) {
  if (i < top) return i;
  if (i >= top + visible) return i - visible + 1;
  return top;
}

/**
 * The row the selection moves to by d (±1): next to the selected track's
 * row, or, with no selected track shown, the top visible row going down and
 * the bottom visible row going up. -1 when there are no rows.
 * @param {number[]} rows @param {number} sel @param {number} d
 * @param {number} top @param {number} visible
 */
export function stepRow(rows, sel, d, top, visible) {
  if (rows.length === 0) return -1;
  let i = rows.indexOf(sel);
  i = i < 0 ? (d > 0 ? top : top + visible - 1) : i + d;
  return Math.max(0, Math.min(rows.length - 1, i));
}
