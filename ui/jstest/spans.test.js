// Derived tracks (ui/static/js/spans.js): the spans reply parsed, slice
// layout by depth with summaries as tall as their busy fraction, counter
// bands against a brute force over random samples, state colours, ruler
// snapping and the search's slice matcher.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as S from '../static/js/spans.js';

const vp = (start, nsPerPx, width) => ({ start, nsPerPx, width });

test('parseSpans: times as BigInt, summaries keep their busy fraction, depths counted', () => {
  const f = S.parseSpans({
    start: 0, res: 1024, buckets: 10, total_tracks: 3,
    tracks: [{ id: 2, kind: 'slices', name: 'syscalls', of: 7, cpu: -1, items: [
      { slice: 0, depth: 0, start: 100, end: 900, name: 'read', count: 1, thread: 7 },
      { slice: 1, depth: 2, start: 1024, end: 2048, name: 'futex', count: 5, summary: true, busy: 0.25, thread: 7 },
    ] }],
  }, 0n, 10240n);
  const t = f.tracks.get(2);
  assert.ok(t);
  assert.equal(t.track.of, 7);
  assert.equal(t.depths, 3);
  assert.equal(t.items[0].start, 100n);
  assert.equal(t.items[0].busy, 1);
  assert.equal(t.items[1].busy, 0.25);
  assert.equal(f.total, 3);
});

test('layoutItems: x from the viewport, lanes by depth, a summary as tall as its busy fraction', () => {
  const items = [
    { slice: 0, depth: 0, start: 0n, end: 1000n, name: 'a', count: 1, summary: false, busy: 1, open: '', thread: 1 },
    { slice: 1, depth: 1, start: 100n, end: 101n, name: 'b', count: 1, summary: false, busy: 1, open: '', thread: 1 },
    { slice: 2, depth: 0, start: 2000n, end: 2100n, name: 'c', count: 9, summary: true, busy: 0.5, open: '', thread: 1 },
    { slice: 3, depth: 0, start: 9000n, end: 9100n, name: 'off', count: 1, summary: false, busy: 1, open: '', thread: 1 },
  ];
  const boxes = S.layoutItems(items, 2, vp(0n, 10, 500), 22);
  assert.deepEqual(boxes.map((b) => b.item.name), ['a', 'b', 'c']);
  const [a, b, c] = boxes;
  assert.equal(a.x0, 0);
  assert.equal(a.x1, 100);
  assert.equal(a.y, 1);
  assert.equal(a.h, 10);
  assert.equal(b.y, 11); // the second lane
  assert.equal(b.x1 - b.x0, 1); // at least a pixel wide
  assert.equal(c.h, 5); // half busy: half the lane, at its bottom
  assert.equal(c.y + c.h, 11);
  assert.equal(S.itemAt(boxes, 10, 12)?.item.name, 'b');
  assert.equal(S.itemAt(boxes, 50, 3)?.item.name, 'a');
  assert.equal(S.itemAt(boxes, 400, 3), null);
});

test('counterBands: each column holds the min and max of the buckets over it (brute force), and the held value between', () => {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 50; round++) {
    const res = 2 ** Math.floor(rnd() * 4 + 4); // 16..128 ns
    const nsPerPx = res / (1 + rnd()); // res is at least a pixel, below two
    const start = BigInt(Math.floor(rnd() * 1000));
    const view = vp(start + BigInt(Math.floor(rnd() * 500)), nsPerPx, 200);
    /** @type {import('../static/js/spans.js').CounterItem[]} */
    const counters = [];
    for (let b = 0; b < 400; b++) {
      if (rnd() < 0.4) continue;
      const a = Math.floor(rnd() * 1000), z = Math.floor(rnd() * 1000);
      counters.push({ bucket: b, count: 1, min: Math.min(a, z), max: Math.max(a, z), last: z });
    }
    const { bands, hi } = S.counterBands(counters, start, res, view);
    const byX = new Map(bands.map((b) => [b.x, b]));
    let wantHi = -Infinity;
    for (const c of counters) {
      const t0 = Number(start - view.start) + c.bucket * res;
      const x0 = Math.floor(t0 / nsPerPx), x1 = Math.ceil((t0 + res) / nsPerPx);
      if (x0 >= 200) continue;
      wantHi = Math.max(wantHi, c.max);
      for (let x = Math.max(0, x0); x < Math.min(200, x1); x++) {
        const b = byX.get(x);
        assert.ok(b, `round ${round}: column ${x} has no band`);
        assert.ok(b.min <= c.min && b.max >= c.max, `round ${round}: column ${x} band [${b.min}, ${b.max}] misses [${c.min}, ${c.max}]`);
      }
    }
    assert.ok(hi >= wantHi, `round ${round}: scale top ${hi} below the max ${wantHi}`);
    for (let i = 1; i < bands.length; i++) assert.ok(bands[i].x > bands[i - 1].x, 'columns in order, each once');
  }
});

test('counterY: the maximum at the top, zero at the bottom', () => {
  assert.equal(S.counterY(100, 0, 100, 24), 1);
  assert.equal(S.counterY(0, 0, 100, 24), 23);
  assert.equal(S.counterY(0, 5, 5, 24), 23); // a flat counter does not divide by zero
});

test('stateColor: each named state its own colour, unknown states one more', () => {
  const names = S.STATES.map((s) => s.name);
  for (const dark of [false, true]) {
    const cs = names.map((n) => S.stateColor(n, dark));
    assert.equal(new Set(cs).size, cs.length);
    assert.ok(!cs.includes(S.stateColor('state 64', dark)));
  }
  assert.equal(S.stateColor('running', false), '#2f9e44');
});

test('snapTime: the nearest whole slice edge within the tolerance', () => {
  const f = S.parseSpans({ tracks: [{ id: 0, kind: 'cpu', items: [
    { slice: 0, start: 1000, end: 2000, name: 'x' },
    { slice: 1, start: 2500, end: 2600, name: 'y', summary: true, busy: 1 },
  ] }] }, 0n, 4000n);
  assert.equal(S.snapTime(1040n, f, 50), 1000n);
  assert.equal(S.snapTime(1960n, f, 50), 2000n);
  assert.equal(S.snapTime(1500n, f, 50), 1500n);
  assert.equal(S.snapTime(2510n, f, 50), 2510n); // summaries have no edges
  assert.equal(S.snapTime(5n, null, 50), 5n);
});

test('sliceMatcher: the query\'s name term, case-insensitive; predicates and codes are not names', () => {
  const m = S.sliceMatcher('checkout && Status = ok');
  assert.ok(m && m('Demo-Checkout/Order') && !m('futex'));
  assert.equal(S.sliceMatcher('#12 && Reason = 4'), null);
});

test('sliceFilter: a hidden Start type hides its activity slices, sys_enter the syscalls', () => {
  const types = [
    { provider: 'Demo-Checkout', name: 'OrderStart' }, { provider: 'Demo-Checkout', name: 'OrderStop' },
    { provider: 'Lib', name: 'Request/Start' }, { provider: 'raw_syscalls', name: 'sys_enter' }, { provider: 'sched', name: 'sched_switch' },
  ];
  assert.equal(S.sliceFilter(types, new Set()), null);
  assert.equal(S.sliceFilter(types, new Set([1, 4])), null);
  const f = S.sliceFilter(types, new Set([0, 2]));
  assert.ok(f && f('activities', 'Demo-Checkout/Order') && f('activities', 'Lib/Request') && !f('activities', 'Demo-Checkout/Cache') && !f('syscalls', 'read'));
  const g = S.sliceFilter(types, new Set([3]));
  assert.ok(g && g('syscalls', 'read') && !g('activities', 'Demo-Checkout/Order'));
});

test('counterBands: the value held from before the range fills the columns up to the first sample', () => {
  const { bands, lo, hi } = S.counterBands([{ bucket: 5, count: 1, min: 3, max: 9, last: 9 }], 0n, 10, vp(0n, 10, 10), 4);
  assert.deepEqual(bands.map((b) => [b.x, b.min, b.max]), [[0, 4, 4], [1, 4, 4], [2, 4, 4], [3, 4, 4], [4, 4, 4], [5, 3, 9], [6, 9, 9], [7, 9, 9], [8, 9, 9], [9, 9, 9]]);
  assert.equal(lo, 3);
  assert.equal(hi, 9);
  assert.equal(S.counterBands([], 0n, 10, vp(0n, 10, 3), 7).bands.length, 3); // no sample in view: the held value across
});
