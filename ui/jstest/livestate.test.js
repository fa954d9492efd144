// A live trace's state (ui/static/js/livestate.js): the `live` message read
// safely, the events/s rate against brute force, when the metadata is
// stale, the chased range as the server computes it (web/live.go).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liveOf, RateMeter, metaStale, chaseRange, liveText, coversSpan, RATE_WINDOW_MS } from '../static/js/livestate.js';

test('a live message: times become BigInt past 2^53, counts are whole and not negative', () => {
  assert.deepEqual(liveOf({ type: 'live', ended: false, events: 4000, first: '500000', last: '9007199254740993', tracks: 7, types: 12 }),
    { ended: false, indexing: false, events: 4000, first: 500000n, last: 9007199254740993n, tracks: 7, types: 12 });
  assert.deepEqual(liveOf({ type: 'live', ended: true, events: -3, first: 5, last: '7', tracks: 'x', types: 2.5 }),
    { ended: true, indexing: false, events: 0, first: 5n, last: 7n, tracks: 0, types: 2 });
  // ended must be true itself; a last before first is first.
  assert.equal(liveOf({ type: 'live', ended: 'yes', first: '9', last: '3' })?.ended, false);
  assert.equal(liveOf({ type: 'live', first: '9', last: '3' })?.last, 9n);
  // indexing (a stored trace's prefix) likewise must be true itself.
  assert.equal(liveOf({ type: 'live', indexing: true, first: '1', last: '2' })?.indexing, true);
  assert.equal(liveOf({ type: 'live', indexing: 1, first: '1', last: '2' })?.indexing, false);
});

test('a view covers the span when it holds both ends, as brute force over small ranges says', () => {
  for (let s = 0n; s < 6n; s++) {
    for (let e = s + 1n; e < 8n; e++) {
      // The span 2..4: covered when every instant of it is in the view.
      let all = true;
      for (let t = 2n; t <= 4n; t++) all = all && t >= s && t <= e;
      assert.equal(coversSpan({ start: s, end: e }, { first: 2n, last: 4n }), all, `view ${s}..${e}`);
    }
  }
});

test('a message that is not a live one, or has no times, is null', () => {
  assert.equal(liveOf(null), null);
  assert.equal(liveOf({ type: 'progress', first: '1', last: '2' }), null);
  assert.equal(liveOf({ type: 'live', first: '1' }), null);
  assert.equal(liveOf({ type: 'live', first: '1.5', last: '2' }), null);
  assert.equal(liveOf({ type: 'live', first: 1e300, last: '2' }), null);
});

test('the rate is the growth over the last window, as brute force computes it', () => {
  // Samples every 100 ms with a rate changing over time; the meter must
  // agree with the growth between the newest sample and the newest one at
  // least a window older (or the oldest).
  const r = new RateMeter();
  /** @type {{t: number, n: number}[]} */
  const all = [];
  let n = 0;
  for (let i = 0; i < 100; i++) {
    const t = i * 100;
    n += i < 50 ? 200 : 1000 + (i % 7) * 10;
    r.add(t, n);
    all.push({ t, n });
    const olds = all.filter((s) => s.t <= t - RATE_WINDOW_MS);
    const a = olds.length ? olds[olds.length - 1] : all[0];
    const want = t > a.t ? ((n - a.n) * 1000) / (t - a.t) : 0;
    assert.ok(Math.abs(r.rate() - want) < 1e-9, `at ${t} ms: ${r.rate()} want ${want}`);
  }
  assert.ok(r.samples.length <= RATE_WINDOW_MS / 100 + 2, `${r.samples.length} samples kept`);
});

test('the rate is 0 before two samples and starts over when the count goes down', () => {
  const r = new RateMeter();
  assert.equal(r.rate(), 0);
  r.add(0, 100);
  assert.equal(r.rate(), 0);
  r.add(500, 600);
  assert.equal(r.rate(), 1000);
  r.add(600, 50); // the stored index replaced the live one
  assert.equal(r.rate(), 0);
  r.add(1600, 2050);
  assert.equal(r.rate(), 2000);
  r.add(1600, 2050); // no time passed
  assert.equal(r.rate(), 2000);
});

test('the metadata is stale when the tracks or types counts differ', () => {
  const meta = { tracks: [1, 2, 3], types: [1, 2] };
  const msg = (/** @type {number} */ tracks, /** @type {number} */ types) => ({ ended: false, events: 1, first: 0n, last: 1n, tracks, types });
  assert.equal(metaStale(meta, msg(3, 2)), false);
  assert.equal(metaStale(meta, msg(4, 2)), true);
  assert.equal(metaStale(meta, msg(3, 5)), true);
});

test('the chased range keeps the span and ends a fiftieth of it after the newest event, as web/live.go', () => {
  for (const [last, span] of [[1_000_000n, 5_000n], [9007199254740993n, 300_000_000n], [0n, 49n], [10n, 0n]]) {
    const r = chaseRange(last, span);
    const d = span > 0n ? span : 1n;
    assert.equal(r.end - r.start, d);
    assert.equal(r.end, last + d / 50n + 1n); // serveLive: vp.End = last + d/50 + 1
    assert.ok(r.end > last);
  }
});

test('the status line: events so far and their rate', () => {
  assert.equal(liveText(12000, 2000.4), 'live · 12,000 events · 2,000 events/s');
  assert.equal(liveText(0, 0), 'live · 0 events');
});
