// The compare page's pure modules: the table's rows (comparetable.js),
// the differential flame graph's tree and colours (compareflame.js) and
// the links to the page (comparelink.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRows, sortRows, filterRows, formatValue, formatDelta, formatRel, duration } from '../static/js/comparetable.js';
import { fromDiffJSON, deltaColor, selfDelta, describeNode } from '../static/js/compareflame.js';
import { flameRects, nameOf } from '../static/js/stacktree.js';
import { compareHref, viewChoices } from '../static/js/comparelink.js';

const reply = {
  rows: [
    { kind: 'type', key: 'test/tick', measure: 'count', a: 50, b: 47, delta: -3, rel: -0.06, score: 9 },
    { kind: 'slice', key: 'read', measure: 'max', a: 2000, b: 4000, delta: 2000, rel: 1, score: 8 },
    { kind: 'type', key: 'new/thing', measure: 'count', a: 0, b: 5, delta: 5, rel: null, score: 2.2 },
    { kind: 'track', key: 'app 7', measure: 'rate', a: 10, b: 0, delta: -10, rel: -1, score: 2.1 },
    { kind: 'field', key: 'test/tick.value', measure: 'mean', a: 42, b: 42, delta: 0, rel: 0, score: 0 },
  ],
};

test('parseRows keeps the server order as rank and refuses bad rows', () => {
  const rows = parseRows(reply);
  assert.deepEqual(rows.map((r) => r.rank), [0, 1, 2, 3, 4]);
  assert.equal(rows[2].rel, null);
  assert.throws(() => parseRows({}));
  assert.throws(() => parseRows({ rows: [{ kind: 'type', key: 'x', measure: 'count', a: '1', b: 1, delta: 0, rel: 0, score: 0 }] }));
});

test('sortRows sorts by any column either way, ties by rank; new is the largest change', () => {
  const rows = parseRows(reply);
  assert.deepEqual(sortRows(rows, 'delta', true).map((r) => r.key), ['read', 'new/thing', 'test/tick.value', 'test/tick', 'app 7']);
  assert.deepEqual(sortRows(rows, 'delta', false).map((r) => r.key), ['app 7', 'test/tick', 'test/tick.value', 'new/thing', 'read']);
  assert.deepEqual(sortRows(rows, 'rel', true).map((r) => r.key), ['new/thing', 'read', 'test/tick.value', 'test/tick', 'app 7']);
  assert.deepEqual(sortRows(rows, 'kind', false).map((r) => r.key), ['test/tick.value', 'read', 'app 7', 'test/tick', 'new/thing']);
  assert.deepEqual(sortRows(rows, 'rank', false), rows);
  assert.deepEqual(rows.map((r) => r.rank), [0, 1, 2, 3, 4], 'sorting copies');
});

test('filterRows needs every word in kind, key or measure', () => {
  const rows = parseRows(reply);
  assert.deepEqual(filterRows(rows, 'tick').map((r) => r.key), ['test/tick', 'test/tick.value']);
  assert.deepEqual(filterRows(rows, '  TICK  count ').map((r) => r.key), ['test/tick']);
  assert.deepEqual(filterRows(rows, 'slice max').map((r) => r.key), ['read']);
  assert.equal(filterRows(rows, '').length, 5);
  assert.equal(filterRows(rows, 'nothing').length, 0);
});

test('values: durations for slice measures, rates per second, relative changes', () => {
  const [tick, read, fresh, rate] = parseRows(reply);
  assert.equal(formatValue(read, read.b), '4 µs');
  assert.equal(formatDelta(read), '+2 µs');
  assert.equal(formatValue(tick, tick.a), '50');
  assert.equal(formatDelta(tick), '-3');
  assert.equal(formatValue(rate, rate.a), '10/s');
  assert.equal(formatRel(read), '+100.0%');
  assert.equal(formatRel(tick), '-6.0%');
  assert.equal(formatRel(fresh), 'new');
  assert.equal(formatRel(rate), 'gone');
  assert.equal(duration(1_500_000_000), '1.5 s');
  assert.equal(duration(12), '12 ns');
});

// A tree where B spends more in "hot" and less in "cold".
const diffJSON = {
  total_a: 100, total_b: 200, samples_a: 100, samples_b: 200, unit: 'samples',
  names: ['all', 'main', 'hot', 'cold', 'onlyB'],
  nodes: [
    [-1, 0, 1, 0, 1, 0],
    [0, 1, 1, 0.1, 1, 0.1],
    [1, 3, 0.6, 0.6, 0.2, 0.2],
    [1, 2, 0.3, 0.3, 0.5, 0.5],
    [1, 4, 0, 0, 0.2, 0.2],
  ],
};

test('fromDiffJSON: widths are the mean of both shares, both sides kept', () => {
  const d = fromDiffJSON(diffJSON);
  assert.equal(d.tree.parent.length, 5);
  assert.deepEqual([...d.tree.tot], [1, 1, 0.4, 0.4, 0.1]);
  assert.equal(nameOf(d.tree, 4), 'onlyB');
  assert.ok(Math.abs(selfDelta(d, 2) + 0.4) < 1e-12);
  assert.ok(Math.abs(selfDelta(d, 3) - 0.2) < 1e-12);
  assert.ok(Math.abs(d.maxDelta - 0.4) < 1e-12);
  assert.equal(d.totalB, 200);
  // flame.js lays it out: a node only B has still gets a rectangle.
  const rects = flameRects(d.tree, 1000);
  assert.deepEqual(rects.map((r) => r.node), [0, 1, 2, 3, 4]);
  assert.ok(Math.abs(rects[4].w - 100) < 1e-9);
  assert.throws(() => fromDiffJSON({ names: ['all'], nodes: [[-1, 0, 1, 0]] }));
  const text = describeNode(d, 3);
  assert.match(text, /^hot\nA: self 30\.00% \(30 samples\).*\nB: self 50\.00% \(100 samples\).*\nself change: \+20\.00 points$/s);
});

test('deltaColor: red for more in B, blue for less, grey for none, stronger for larger', () => {
  const hue = (/** @type {string} */ c) => Number(/^hsl\((\d+)/.exec(c)?.[1]);
  const sat = (/** @type {string} */ c) => Number(/^hsl\(\d+ (\d+)%/.exec(c)?.[1]);
  assert.equal(hue(deltaColor(0.2, 0.4, false)), 2);
  assert.equal(hue(deltaColor(-0.2, 0.4, false)), 220);
  assert.equal(deltaColor(0, 0.4, false), deltaColor(0.1, 0, false));
  assert.ok(sat(deltaColor(0.4, 0.4, false)) > sat(deltaColor(0.1, 0.4, false)));
  assert.notEqual(deltaColor(0.4, 0.4, true), deltaColor(0.4, 0.4, false));
});

test('compareHref and the viewer choices', () => {
  assert.equal(compareHref({ id: 'x', from: 5n, to: 10n }, { id: 'y' }), '/compare?a=x&afrom=5&ato=10&b=y');
  const c = viewChoices('id', { start: 100n, end: 301n }, null);
  assert.equal(c.length, 1);
  const q = new URLSearchParams(c[0].href.split('?')[1]);
  assert.deepEqual(Object.fromEntries(q), { a: 'id', afrom: '100', ato: '200', b: 'id', bfrom: '200', bto: '301' });
  const r = viewChoices('id', { start: 100n, end: 300n }, { t0: 250n, t1: 150n });
  assert.equal(r.length, 2);
  assert.deepEqual(Object.fromEntries(new URLSearchParams(r[1].href.split('?')[1])), { a: 'id', afrom: '100', ato: '300', b: 'id', bfrom: '150', bto: '250' });
  assert.equal(viewChoices('id', { start: 100n, end: 300n }, { t0: 150n, t1: 150n }).length, 1, 'a ruler of no length is not offered');
  assert.equal(viewChoices('id', { start: 100n, end: 101n }, null).length, 0);
});
