// @ts-check
// Progress: what the page says while the source indexes the trace, on the
// toolbar and drawn on the canvas (render.js drawProgress). The percentage
// shown is rounded down and stays below 100 until the trace is ready, so a
// build at 99.6 % never reads "100 %". Pure: tested under node.

'use strict';

/**
 * A source's progress report (the websocket's `progress` message,
 * PROTOCOL.md §4).
 * @typedef {object} Progress
 * @property {string} state      "queued", "indexing", …
 * @property {number} percent    0 to 100; the server never sends 100 before ready
 * @property {number} events     events indexed so far
 * @property {number} [rate]     events per second
 */

/**
 * The whole percentage to show: rounded down, within 0..99.
 * @param {number} percent
 */
export function shownPercent(percent) {
  if (!Number.isFinite(percent) || percent <= 0) return 0;
  return Math.min(99, Math.floor(percent));
}

/**
 * The progress line: "indexing: 1,234,567 events, 2,500,000 events/s · 41 %";
 * a live trace's has no percentage.
 * @param {Progress} p
 */
export function progressText(p) {
  const events = Math.max(0, Math.floor(p.events || 0)).toLocaleString('en-US');
  const rate = p.rate && p.rate > 0 ? `, ${Math.round(p.rate).toLocaleString('en-US')} events/s` : '';
  // A live trace has no end to count towards (PROTOCOL.md §live).
  if (p.state === 'live') return `live: ${events} events${rate}`;
  return `${p.state || 'indexing'}: ${events} events${rate} · ${shownPercent(p.percent)} %`;
}

/**
 * The progress message of the websocket as a Progress, whatever its fields
 * hold (the server is trusted less than it might be).
 * @param {any} m
 * @returns {Progress}
 */
export function progressOf(m) {
  const num = (/** @type {unknown} */ v) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    state: typeof m?.state === 'string' ? m.state : 'indexing',
    percent: Math.max(0, Math.min(100, num(m?.percent))),
    events: Math.max(0, num(m?.events)),
    rate: Math.max(0, num(m?.events_per_s)),
  };
}
