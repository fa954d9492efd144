// Navigation steps (ui/static/js/navigate.js): the viewports zoom, pan and
// jump actions move to, and the range line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as N from '../static/js/navigate.js';
import { Viewport } from '../static/js/viewport.js';

const T0 = 1_700_000_000_000_000_000n;
const trace = { first: T0, last: T0 + 4_000_000_000n }; // 4 s

test('fullView: the whole trace and 1/40 each side', () => {
  const vp = N.fullView(trace, 1000);
  assert.equal(vp.start, T0 - 100_000_001n);
  const over = vp.end - (T0 + 4_100_000_001n); // end rounds up the float width
  assert.ok(over === 0n || over === 1n, String(over));
  assert.equal(vp.width, 1000);
  // A trace of one instant is shown 1 µs wide.
  const one = N.fullView({ first: T0, last: T0 }, 100);
  assert.equal(one.start, T0 - 26n);
  assert.equal(one.end, T0 + 26n);
});

test('zoomStep: each side by 1/6, around the centre; out undoes in', () => {
  const vp = new Viewport(T0, 6000, 600);
  const zin = N.zoomStep(vp, 1);
  assert.ok(Math.abs(zin.nsPerPx - 4000) < 1e-9, String(zin.nsPerPx));
  assert.equal(zin.time(300), vp.time(300));
  assert.equal(zin.start, T0 + 600_000n); // 1/6 of 3.6 ms
  assert.ok(N.zoomStep(vp, -1).nsPerPx > 8999 && N.zoomStep(vp, -1).nsPerPx < 9001);
  const back = N.zoomStep(zin, -1);
  assert.ok(Math.abs(back.nsPerPx - 6000) < 1e-9);
  assert.equal(back.start, T0);
});

test('panStep: 1/6 of the width', () => {
  const vp = new Viewport(T0, 6000, 600);
  assert.equal(N.panStep(vp, 1).start, T0 + 600_000n);
  assert.equal(N.panStep(vp, -1).start, T0 - 600_000n);
  assert.equal(N.panStep(vp, 1).nsPerPx, 6000);
});

test('startView and endView keep the width', () => {
  const vp = new Viewport(T0 + 1_000_000n, 1000, 400); // 400 µs wide
  const s = N.startView(vp, trace);
  assert.equal(s.start, T0 - 10_000n);
  assert.equal(s.nsPerPx, 1000);
  const e = N.endView(vp, trace);
  assert.equal(e.start, trace.last - 390_000n);
  assert.equal(e.end, trace.last + 10_000n);
});

test('centreOn and overviewView', () => {
  const vp = new Viewport(0n, 10, 100);
  assert.equal(N.centreOn(vp, T0).start, T0 - 500n);
  assert.equal(N.overviewView(vp, trace, 0.5).start, T0 + 2_000_000_000n - 500n);
  assert.equal(N.overviewView(vp, trace, 0).start, T0 - 500n);
});

test('zoomSelectionView: the ruler, else the selected event, else nothing', () => {
  const vp = new Viewport(T0, 1e6, 1000);
  const r = N.zoomSelectionView(vp, { t0: T0 + 2000n, t1: T0 + 1000n }, { time: T0 });
  assert.ok(r);
  assert.equal(r.start, T0 + 950n); // 5% each side
  assert.equal(r.end, T0 + 2050n);
  // A ruler of zero length falls back to the event: 100 ns per pixel, centred.
  const e = N.zoomSelectionView(vp, { t0: T0, t1: T0 }, { time: T0 + 1_000_000n });
  assert.ok(e);
  assert.equal(e.nsPerPx, 100);
  assert.equal(e.start, T0 + 1_000_000n - 50_000n);
  // Already closer than 100 ns per pixel: keep it.
  assert.equal(N.zoomSelectionView(new Viewport(T0, 2, 1000), null, { time: T0 })?.nsPerPx, 2);
  assert.equal(N.zoomSelectionView(vp, null, null), null);
});

test('clampView: within 1/8 of the trace', () => {
  const far = N.clampView(new Viewport(T0 + 100_000_000_000n, 1000, 1000), trace);
  assert.equal(far.end, trace.last + 500_000_000n);
  // A trace of one instant clamps as if it were 1 µs long.
  const one = N.clampView(new Viewport(T0, 1e6, 100), { first: T0, last: T0 });
  assert.equal(one.span, 1250);
});

test('rangeText: from the first event, in the unit of the far edge', () => {
  assert.equal(N.rangeText(new Viewport(T0, 1e6, 1000), trace), '0.000 s – 1.000 s (1.0000 s)');
  assert.equal(N.rangeText(new Viewport(T0 + 1_500_000n, 1000, 500), trace), '1.500 ms – 2.000 ms (500.000 µs)');
  // Before the first event: negative, in the unit of the start's distance.
  assert.equal(N.rangeText(new Viewport(T0 - 2000n, 1, 1000), trace), '-2.000 µs – -1.000 µs (1.000 µs)');
});
