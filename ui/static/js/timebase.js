// @ts-check
// Timebase: the page's one time base. Every time the page prints counts
// from the trace's first event, as the time axis and the range line do, in
// the same units and digits (viewport.js formatTime); the absolute value —
// ns on the trace's clock, and the wall clock when the trace knows it —
// goes in a hover title, never beside it. Pure: tested under node.

'use strict';

import { formatTime, unitFor } from './viewport.js';

/** Fewest decimals a relative time keeps ("127.360 ms", as the ruler prints). */
const MIN_DECIMALS = 3;

/**
 * t relative to the trace's first event, exact to the ns in the largest
 * unit not above it: "127.360 ms", "127.360123 ms", "-2.500 µs", "0 ns".
 * Trailing zeros past the third decimal are dropped (they add nothing to
 * an exact value).
 * @param {bigint} t absolute time, ns
 * @param {bigint} first the trace's first event
 */
export function relTime(t, first) {
  const rel = t - first;
  const unit = unitFor(rel < 0n ? -rel : rel);
  const text = formatTime(rel, unit, 1n); // every decimal down to the ns
  const m = /^(-?\d+)(?:\.(\d+))? (.+)$/.exec(text);
  if (!m || m[2] === undefined) return text;
  let frac = m[2];
  while (frac.length > MIN_DECIMALS && frac.endsWith('0')) frac = frac.slice(0, -1);
  return `${m[1]}.${frac} ${m[3]}`;
}

/**
 * The absolute value of t for a hover title: its ns on the trace's clock,
 * and the wall-clock time when the trace knows its origin.
 * @param {bigint} t @param {string} [wall] RFC 3339 wall clock at time 0, or ""
 */
export function absTitle(t, wall) {
  const ns = `${t} ns on the trace's clock`;
  return wall ? `${ns}\n${wallTime(wall, t)} wall clock` : ns;
}

/**
 * The wall-clock time of t ns after the RFC 3339 origin, to the
 * nanosecond (Date alone keeps milliseconds), in UTC.
 * @param {string} origin @param {bigint} t
 */
export function wallTime(origin, t) {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(origin);
  if (!m) return origin;
  const base = Date.parse(m[1] + m[3]);
  if (Number.isNaN(base)) return origin;
  const ns = BigInt(base) * 1000000n + BigInt((m[2] ?? '').padEnd(9, '0') || '0') + t;
  const ms = ns / 1000000n - (ns % 1000000n < 0n ? 1n : 0n);
  const frac = ns - ms * 1000000n;
  const iso = new Date(Number(ms)).toISOString(); // ...T..:..:..sssZ in UTC
  return iso.slice(0, 23) + frac.toString().padStart(6, '0') + 'Z';
}
