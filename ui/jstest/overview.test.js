// Overview marks (ui/static/js/overview.js): hit times and the server's
// hit counts per time bin mapped onto the strip's pixel columns, checked
// against brute force on random hits.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hitMarks, binMarks, binCount, stripX, MAX_BINS } from '../static/js/overview.js';

const FIRST = 1n << 56n;

/** The server's binning (web/searchbins.go, PROTOCOL.md §3). */
function serverBins(/** @type {bigint[]} */ times, /** @type {bigint} */ from, /** @type {bigint} */ to, /** @type {number} */ n) {
  const counts = new Array(n).fill(0);
  const len = to - from + 1n;
  for (const t of times) counts[Number(((t - from) * BigInt(n)) / len)]++;
  return { from, to, counts, complete: true };
}

/** @param {number} seed */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('bins of one per pixel mark where the hits are, and only there', () => {
  for (let k = 0; k < 200; k++) {
    const r = rng(k + 1);
    const span = BigInt(1 + Math.floor(r() * 1e12));
    const last = FIRST + span;
    const w = 50 + Math.floor(r() * 1500);
    const x0 = Math.floor(r() * 300);
    const times = [];
    const n = Math.floor(r() * 400);
    // Clustered hits, with the trace's ends among them sometimes.
    for (let i = 0; i < n; i++) times.push(FIRST + BigInt(Math.floor(r() ** (1 + (k % 3)) * Number(span))));
    if (k % 5 === 0) times.push(FIRST, last);
    times.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const want = hitMarks(times, FIRST, last, x0, w);
    const got = binMarks(serverBins(times, FIRST, last, binCount(w)), FIRST, last, x0, w);
    const gotX = new Set(got.map((m) => m.x));
    for (const m of want) assert.ok(gotX.has(m.x), `case ${k}: hit column ${m.x} not marked`);
    for (const m of got) {
      assert.ok(m.x >= x0 && m.x <= x0 + w - 1, `case ${k}: mark ${m.x} off the strip`);
      assert.ok(want.some((h) => Math.abs(h.x - m.x) <= 1), `case ${k}: mark ${m.x} not next to a hit`);
    }
    const total = got.reduce((a, m) => a + m.count, 0);
    assert.ok(Math.abs(total - times.length) < 1e-6, `case ${k}: ${total} hits marked, want ${times.length}`);
    for (let i = 1; i < got.length; i++) assert.ok(got[i].x > got[i - 1].x);
  }
});

test('hits past a cut list are marked over the whole strip', () => {
  // 30,000 hits spread evenly: a list cut at 10,000 reaches a third of the
  // strip; the bins reach its end.
  const last = FIRST + 3_000_000n;
  const times = Array.from({ length: 30000 }, (_, i) => FIRST + BigInt(i * 100));
  const w = 900;
  const cut = hitMarks(times.slice(0, 10000), FIRST, last, 0, w);
  assert.ok(cut[cut.length - 1].x < w / 3 + 1);
  const marks = binMarks(serverBins(times, FIRST, last, binCount(w)), FIRST, last, 0, w);
  assert.ok(marks[marks.length - 1].x >= w - 2, `last mark at ${marks[marks.length - 1].x}`);
  assert.equal(marks.filter((m) => m.x > (2 * w) / 3).length > 250, true);
});

test('coarser bins spread their hits over the columns they cover', () => {
  const last = FIRST + 999n;
  const bins = { from: FIRST, to: last, counts: [0, 10, 0, 0], complete: true };
  const marks = binMarks(bins, FIRST, last, 100, 101); // 1000 ns on 100 px
  assert.equal(marks[0].x, 125);
  assert.equal(marks[marks.length - 1].x, 150);
  assert.ok(Math.abs(marks.reduce((a, m) => a + m.count, 0) - 10) < 1e-9);
  assert.deepEqual(binMarks({ from: FIRST, to: last, counts: [], complete: true }, FIRST, last, 0, 10), []);
});

test('one bin per strip pixel, within the server bound', () => {
  assert.equal(binCount(812.6), 812);
  assert.equal(binCount(0), 1);
  assert.equal(binCount(10000), MAX_BINS);
  assert.equal(stripX(FIRST, FIRST, FIRST, 5, 10), 5); // an empty trace maps to the start
});
