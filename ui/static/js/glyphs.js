// @ts-check
// Selection math over a frame: the events a track shows, the one a click
// lands on and the one an arrow key steps to. Pure (no DOM); tested under
// node (ui/jstest).

'use strict';

import { eventID } from './source.js';

/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./viewport.js').Viewport} Viewport */

/** How far from a glyph (CSS px) a click still picks it. */
export const PICK_PX = 5;
/** Width of an event box in event mode: a click anywhere on it picks it. */
export const BOX_PX = 14;

/**
 * Glyphs of a track in a frame, in time order, leaving out hidden types:
 * individual events and the first event of each aggregate bucket.
 * @param {Frame | null} f @param {number} track @param {Set<number>} hidden types
 * @returns {{time: bigint, ref: string}[]}
 */
export function glyphs(f, track, hidden) {
  const sl = f?.tracks.get(track);
  if (!f || !sl) return [];
  const out = [];
  for (let i = 0; i < sl.n; i++) if (!hidden.has(sl.type[i])) out.push({ time: f.base + BigInt(Math.round(sl.off[i])), ref: eventID(track, sl.first[i]) });
  for (let i = 0; i < sl.an; i++) if (!hidden.has(sl.atype[i])) out.push({ time: f.base + BigInt(Math.round(sl.aoff[i])), ref: eventID(track, sl.afirst[i]) });
  return out.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}

/**
 * The first glyph after `from` (d > 0) or the last before it (d < 0).
 * @param {{time: bigint, ref: string}[]} g in time order @param {bigint} from @param {number} d
 */
export function nextGlyph(g, from, d) {
  return d > 0 ? g.find((x) => x.time > from) : g.findLast((x) => x.time < from);
}

/**
 * Hit test at plot position x on a track: the event id of the nearest glyph
 * within PICK_PX (an event box or aggregate counts from any point on it), or
 * "" when none is that close.
 * @param {Frame | null} f @param {Viewport} vp @param {number} track @param {number} x
 * @param {Set<number>} hidden types @param {'event' | 'summary'} mode
 */
export function hitTest(f, vp, track, x, hidden, mode) {
  const sl = f?.tracks.get(track);
  if (!f || !sl) return '';
  const dx0 = Number(f.base - vp.start);
  const npp = vp.nsPerPx;
  let best = '';
  let bestD = PICK_PX;
  const boxW = mode === 'event' ? BOX_PX : 0;
  for (let i = 0; i < sl.n; i++) {
    if (hidden.has(sl.type[i])) continue;
    const gx = (dx0 + sl.off[i]) / npp;
    const d = x >= gx && x <= gx + boxW ? 0 : Math.abs(x - gx);
    if (d < bestD) {
      bestD = d;
      best = eventID(track, sl.first[i]);
    }
  }
  for (let i = 0; i < sl.an; i++) {
    if (hidden.has(sl.atype[i])) continue;
    const a = (dx0 + sl.aoff[i]) / npp;
    const b = Math.max(a + 1, (dx0 + sl.aoff[i] + sl.adur[i]) / npp);
    const d = x >= a && x <= b ? 0 : Math.min(Math.abs(x - a), Math.abs(x - b));
    if (d < bestD) {
      bestD = d;
      best = eventID(track, sl.afirst[i]);
    }
  }
  return best;
}
