// @ts-check
// Navigation: the viewports the zoom, pan and jump actions move to, relative
// to the trace's span, and the range line above the timeline. Pure (no DOM);
// tested under node (ui/jstest).

'use strict';

import { Viewport, formatDuration, formatTime, unitFor } from './viewport.js';

/** g2: zoom and pan move each side by 1/6 of the width. */
export const STEP = 1 / 6;

/**
 * @typedef {object} Span the trace's first and last event times
 * @property {bigint} first
 * @property {bigint} last
 */

/** The whole trace with a small margin. @param {Span} m @param {number} width */
export function fullView(m, width) {
  const span = m.last > m.first ? m.last - m.first : 1000n;
  const margin = span / 40n + 1n;
  return Viewport.fromRange(m.first - margin, m.last + margin, width);
}

/** Keeps vp near the trace (Viewport.clamp; a one-instant trace counts 1 µs). @param {Viewport} vp @param {Span} m */
export function clampView(vp, m) {
  return vp.clamp(m.first, m.last > m.first ? m.last : m.first + 1000n);
}

/** Zooms in (dir > 0) or out around the centre by STEP per side. @param {Viewport} vp @param {number} dir */
export function zoomStep(vp, dir) {
  return vp.zoom(dir > 0 ? 1 - 2 * STEP : 1 / (1 - 2 * STEP), vp.width / 2);
}

/** Pans right (dir > 0) or left by STEP of the width. @param {Viewport} vp @param {number} dir */
export function panStep(vp, dir) {
  return vp.pan(dir * vp.width * STEP);
}

/** Same width, starting just before the first event. @param {Viewport} vp @param {Span} m */
export function startView(vp, m) {
  return new Viewport(m.first - BigInt(Math.round(vp.span / 40)), vp.nsPerPx, vp.width, vp.spanNs);
}

/** Same width, ending just after the last event. @param {Viewport} vp @param {Span} m */
export function endView(vp, m) {
  const s = m.last - BigInt(Math.round(vp.span * (39 / 40)));
  return new Viewport(s, vp.nsPerPx, vp.width, vp.spanNs);
}

/** Same width, centred on t. @param {Viewport} vp @param {bigint} t */
export function centreOn(vp, t) {
  return new Viewport(t - BigInt(Math.round(vp.span / 2)), vp.nsPerPx, vp.width, vp.spanNs);
}

/** Same width, centred on fraction f (0…1) of the trace (a click on the overview). @param {Viewport} vp @param {Span} m @param {number} f */
export function overviewView(vp, m, f) {
  return centreOn(vp, m.first + BigInt(Math.round(f * Number(m.last - m.first))));
}

/**
 * Zoom selection (Z): the ruler's interval with 5% each side; else the
 * selected event centred at 100 ns per pixel (or closer if already zoomed
 * in); else null.
 * @param {Viewport} vp
 * @param {{t0: bigint, t1: bigint} | null} ruler
 * @param {{time: bigint} | null} sel
 */
export function zoomSelectionView(vp, ruler, sel) {
  if (ruler && ruler.t0 !== ruler.t1) {
    const [a, b] = ruler.t0 < ruler.t1 ? [ruler.t0, ruler.t1] : [ruler.t1, ruler.t0];
    const pad = (b - a) / 20n;
    return Viewport.fromRange(a - pad, b + pad, vp.width);
  }
  if (sel) {
    const npp = Math.min(vp.nsPerPx, 100);
    const half = BigInt(Math.round((npp * vp.width) / 2));
    return new Viewport(sel.time - half, npp, vp.width);
  }
  return null;
}

/** The range line: both edges from the trace's first event, and the width. @param {Viewport} vp @param {Span} m */
export function rangeText(vp, m) {
  const a = vp.start - m.first;
  const b = vp.end - m.first;
  const u = unitFor(b > 0n ? b : -a);
  const step = BigInt(Math.max(1, Math.floor(vp.nsPerPx)));
  return `${formatTime(a, u, step)} – ${formatTime(b, u, step)} (${formatDuration(vp.span)})`;
}
