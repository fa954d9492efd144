// Viewport math (ui/static/js/viewport.js): the time ↔ pixel mapping, zoom,
// pan and clamp steps, ticks, and the time formatters, with BigInt times
// past 2^53 ns.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Viewport, MIN_NS_PER_PX, UNITS, unitFor, formatTime, formatDuration, parseNs } from '../static/js/viewport.js';

const [S, MS, US, NS] = UNITS;
const EPOCH = 1_700_000_000_123_456_789n; // ns since 1970: far past 2^53

test('time and pixels map both ways, exactly past 2^53', () => {
  const vp = new Viewport(EPOCH, 2.5, 1000);
  assert.equal(vp.x(EPOCH), 0);
  assert.equal(vp.x(EPOCH + 250n), 100);
  assert.equal(vp.x(EPOCH - 25n), -10);
  assert.equal(vp.time(100), EPOCH + 250n);
  assert.equal(vp.time(0.3), EPOCH + 1n); // 0.75 ns rounds to 1
  assert.equal(vp.xOff(EPOCH - 100n, 350), 100);
  // time() rounds to whole ns: back in pixels, within half a ns.
  for (const x of [0, 1, 17, 999, 1000]) assert.ok(Math.abs(vp.x(vp.time(x)) - x) <= 0.5 / vp.nsPerPx + 1e-9, `x ${x}`);
  assert.equal(vp.x(vp.time(2)), 2);
});

test('end and span', () => {
  const vp = new Viewport(EPOCH, 0.25, 10);
  assert.equal(vp.span, 2.5);
  assert.equal(vp.end, EPOCH + 3n); // rounded up
  assert.equal(new Viewport(0n, 2, 500).end, 1000n);
});

test('constructor keeps nsPerPx and width in range', () => {
  const vp = new Viewport(0n, 0, 0);
  assert.equal(vp.nsPerPx, MIN_NS_PER_PX);
  assert.equal(vp.width, 1);
  assert.equal(new Viewport(0n, -3, -5).nsPerPx, MIN_NS_PER_PX);
});

test('fromRange', () => {
  const vp = Viewport.fromRange(EPOCH, EPOCH + 1_000_000n, 500);
  assert.equal(vp.start, EPOCH);
  assert.equal(vp.nsPerPx, 2000);
  assert.equal(vp.end, EPOCH + 1_000_000n);
  // An empty or reversed range is one nanosecond wide.
  assert.equal(Viewport.fromRange(10n, 10n, 4).nsPerPx, 0.25);
  assert.equal(Viewport.fromRange(10n, 10n, 1000).nsPerPx, MIN_NS_PER_PX);
  assert.equal(Viewport.fromRange(10n, 5n, 1).nsPerPx, 1);
  // Width below 1 counts as 1.
  assert.equal(Viewport.fromRange(0n, 100n, 0).nsPerPx, 100);
});

test('zoom keeps the time under the pointer', () => {
  const vp = new Viewport(EPOCH, 1000, 1200);
  for (const [f, x] of [[0.5, 300], [2, 0], [1 / 3, 1199], [4 / 6, 600]]) {
    const z = vp.zoom(f, x);
    assert.equal(z.time(x), vp.time(x), `factor ${f} at ${x}`);
    assert.equal(z.nsPerPx, 1000 * f);
    assert.equal(z.width, 1200);
  }
  // No closer than MIN_NS_PER_PX.
  assert.equal(new Viewport(0n, 0.1, 100).zoom(0.01, 50).nsPerPx, MIN_NS_PER_PX);
});

test('pan moves by whole ns of the pixel distance', () => {
  const vp = new Viewport(EPOCH, 2.5, 100);
  assert.equal(vp.pan(10).start, EPOCH + 25n);
  assert.equal(vp.pan(-10).start, EPOCH - 25n);
  assert.equal(vp.pan(0.3).start, EPOCH + 1n);
  assert.equal(vp.pan(10).nsPerPx, 2.5);
});

test('resize keeps the range', () => {
  const vp = new Viewport(100n, 10, 100).resize(50);
  assert.equal(vp.start, 100n);
  assert.equal(vp.end, 1100n);
  assert.equal(vp.nsPerPx, 20);
});

test('clamp: g2 9/8 rule', () => {
  // Trace [0, 8000]: margin 1000, widest span 10000.
  const wide = new Viewport(-50_000n, 1000, 100).clamp(0n, 8000n);
  assert.equal(wide.span, 10_000);
  assert.equal(wide.start, -1000n);
  const late = new Viewport(20_000n, 10, 100).clamp(0n, 8000n);
  assert.equal(late.start, 9000n - 1000n); // ends at hi + margin
  const inside = new Viewport(3000n, 10, 100);
  assert.equal(inside.clamp(0n, 8000n), inside); // unchanged: the same object
  const early = new Viewport(-5000n, 10, 100).clamp(0n, 8000n);
  assert.equal(early.start, -1000n);
});

test('ticks: 1-2-5 steps, aligned to the origin', () => {
  const vp = new Viewport(1_000_003n, 10, 1000); // 10 µs wide
  const { step, ticks } = vp.ticks(90);
  assert.equal(step, 1000n); // 900 ns wanted → 1 µs
  assert.equal(ticks[0], 1_001_000n);
  assert.equal(ticks.at(-1), 1_010_000n);
  assert.equal(ticks.length, 10);
  // From an origin: ticks sit on origin + k·step, also before the origin.
  const o = new Viewport(-2_500n, 5, 600).ticks(100, 7n); // 500 ns wanted, up to 500
  assert.equal(o.step, 500n);
  assert.deepEqual(o.ticks, [-2493n, -1993n, -1493n, -993n, -493n, 7n]);
  // A tick exactly at the start is kept.
  assert.equal(new Viewport(2000n, 10, 100).ticks(100).ticks[0], 2000n);
  // Steps past 2^53.
  const big = new Viewport(EPOCH, 1e13, 1000).ticks(100);
  assert.equal(big.step, 1_000_000_000_000_000n);
  assert.equal(big.ticks[0] % big.step, 0n);
});

test('unitFor: the largest unit not above the value', () => {
  assert.equal(unitFor(0n), NS);
  assert.equal(unitFor(999n), NS);
  assert.equal(unitFor(1000n), US);
  assert.equal(unitFor(999_999n), US);
  assert.equal(unitFor(1_000_000n), MS);
  assert.equal(unitFor(999_999_999n), MS);
  assert.equal(unitFor(1_000_000_000n), S);
  assert.equal(unitFor(EPOCH), S);
  assert.equal(unitFor(-5n), NS); // negative: the smallest
});

test('formatTime: just enough decimals for the step', () => {
  assert.equal(formatTime(1_250_000_000n, S, 10_000_000n), '1.25 s');
  assert.equal(formatTime(2_000_000_000n, S, 1_000_000_000n), '2 s');
  assert.equal(formatTime(2_000_000_000n, S, 500_000_000n), '2.0 s');
  assert.equal(formatTime(-1_500_000n, MS, 100_000n), '-1.5 ms');
  assert.equal(formatTime(-500_000n, MS, 100_000n), '-0.5 ms');
  assert.equal(formatTime(1_005n, US, 5n), '1.005 µs');
  assert.equal(formatTime(42n, NS, 1n), '42 ns');
  assert.equal(formatTime(0n, MS, 3000n), '0.000 ms');
  assert.equal(formatTime(0n, MS, 3n), '0.000000 ms');
  // Exact far past 2^53 (a Number would round the last digits).
  assert.equal(formatTime(EPOCH, S, 1n), '1700000000.123456789 s');
  assert.equal(formatTime(2n ** 63n - 1n, S, 1n), '9223372036.854775807 s');
  // Neighbouring ticks never print the same text.
  const step = 2_000n;
  const a = formatTime(EPOCH, MS, step), b = formatTime(EPOCH + step, MS, step);
  assert.notEqual(a, b);
});

test('formatDuration: about four significant digits', () => {
  assert.equal(formatDuration(0), '0 ns');
  assert.equal(formatDuration(1.5), '1.50 ns');
  assert.equal(formatDuration(7), '7 ns');
  assert.equal(formatDuration(999), '999 ns');
  assert.equal(formatDuration(1000), '1.000 µs');
  assert.equal(formatDuration(-2500), '-2.500 µs');
  assert.equal(formatDuration(1_234_567), '1.235 ms');
  assert.equal(formatDuration(1.5e9), '1.5000 s');
  assert.equal(formatDuration(1e11), '100.0 s');
  assert.equal(formatDuration(Number(EPOCH)), '1700000000.1 s');
});

test('parseNs', () => {
  assert.equal(parseNs('0'), 0n);
  assert.equal(parseNs('-42'), -42n);
  assert.equal(parseNs('1700000000123456789'), EPOCH);
  for (const bad of [null, '', 'abc', '1.5', '1e9', ' 1', '123456789012345678901', '+1']) assert.equal(parseNs(bad), undefined, String(bad));
});
