// @ts-check
// Virtual scrolling math for the events table (eventtable.js), no DOM:
// which rows a scroll position shows, the scroller's height (browsers cap
// an element's height, so a long table is scaled to MAX_SCROLL_PX and a
// pixel of scrolling then passes several rows), and which server pages
// hold them, ascending or descending in time.

'use strict';

/** The tallest scroller used: below every browser's element-height cap. */
export const MAX_SCROLL_PX = 8_000_000;

/**
 * The scroller's height for total rows of rowH px.
 * @param {number} total @param {number} rowH
 */
export function scrollHeight(total, rowH) {
  return Math.min(total * rowH, MAX_SCROLL_PX);
}

/**
 * The rows a scroll position shows: first (inclusive) to last
 * (exclusive), overscan rows more on each side, and the y of the first
 * row's top inside the scroller.
 * @param {number} scrollTop @param {number} viewH @param {number} rowH
 * @param {number} total @param {number} [overscan]
 * @returns {{first: number, last: number, y: number}}
 */
export function visibleRows(scrollTop, viewH, rowH, total, overscan = 4) {
  if (total <= 0 || rowH <= 0) return { first: 0, last: 0, y: 0 };
  const full = total * rowH;
  const h = scrollHeight(total, rowH);
  const maxTop = Math.max(0, h - viewH);
  const top = Math.max(0, Math.min(scrollTop, maxTop));
  // Scaled: the scroll fraction picks the first row, so the end of the
  // scroller is the end of the table.
  const topRow = full <= h ? top / rowH : maxTop > 0 ? (top / maxTop) * Math.max(0, total - viewH / rowH) : 0;
  const r0 = Math.floor(topRow);
  const first = Math.max(0, r0 - overscan);
  const last = Math.min(total, Math.ceil(topRow + viewH / rowH) + overscan);
  const y = top - (topRow - first) * rowH;
  return { first, last, y };
}

/**
 * The pages (of size rows each, in display order) that hold rows first
 * to last (exclusive).
 * @param {number} first @param {number} last @param {number} size
 * @returns {number[]}
 */
export function pagesOf(first, last, size) {
  const out = [];
  if (last <= first) return out;
  for (let p = Math.floor(first / size); p * size < last; p++) out.push(p);
  return out;
}

/**
 * What to ask the server for display page p: the first server row and
 * the rows, in time order. Descending, display row k is server row
 * total-1-k, so a page is read ascending and reversed.
 * @param {number} p @param {number} size @param {number} total @param {boolean} desc
 * @returns {{row: number, limit: number}}
 */
export function pageRequest(p, size, total, desc) {
  const a = p * size;
  const b = Math.min(total, a + size);
  if (!desc) return { row: a, limit: Math.max(0, b - a) };
  const row = Math.max(0, total - b);
  return { row, limit: Math.max(0, total - a - row) };
}

/**
 * Display row k's place in its page's rows as the server sent them.
 * @param {number} k @param {number} size @param {number} total @param {boolean} desc
 * @returns {{page: number, i: number}}
 */
export function rowPlace(k, size, total, desc) {
  const page = Math.floor(k / size);
  if (!desc) return { page, i: k - page * size };
  const { row } = pageRequest(page, size, total, true);
  return { page, i: total - 1 - k - row };
}
