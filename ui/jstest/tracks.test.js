// Track order (ui/static/js/tracks.js): natural order, raise/sink/pin,
// chase, the rows the filter and hidden set leave, and row scrolling.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as T from '../static/js/tracks.js';

/** @param {number} id @param {string} name @param {number} [events] */
const track = (id, name, events) => ({ id, name, kind: 'thread', events });

const tracks = [track(0, 'dotnet', 10), track(1, 'idle', 0), track(2, 'worker 1', 5), track(3, 'Worker 2'), track(4, 'silent', 0)];

test('naturalOrder: tracks with events (or unknown counts) first', () => {
  assert.deepEqual(T.naturalOrder(tracks), [0, 2, 3, 1, 4]);
  assert.deepEqual(T.naturalOrder([]), []);
});

test('mergeOrder and currentOrder', () => {
  assert.deepEqual(T.mergeOrder([3, 1], [0, 1, 2, 3]), [3, 1, 0, 2]);
  assert.deepEqual(T.currentOrder([], [0, 1, 2]), [0, 1, 2]);
  const nat = [0, 1];
  assert.notEqual(T.currentOrder([], nat), nat); // a copy, safe to change
  assert.deepEqual(T.currentOrder([2], [0, 1, 2]), [2, 0, 1]);
});

test('raise, sink, togglePin', () => {
  assert.deepEqual(T.raise([0, 1, 2, 3], 2), [2, 0, 1, 3]);
  assert.deepEqual(T.sink([0, 1, 2, 3], 1), [0, 2, 3, 1]);
  assert.deepEqual(T.raise([0, 1], 0), [0, 1]);
  const pins = [4];
  assert.deepEqual(T.togglePin(pins, 2), [4, 2]);
  assert.deepEqual(T.togglePin(pins, 4), [2]);
  assert.deepEqual(pins, [2]); // in place
});

test('layoutRows: pins first, hidden and filtered tracks left out', () => {
  const base = { order: [], natural: T.naturalOrder(tracks), pins: [], hide: new Set(), filter: '', tracks };
  assert.deepEqual(T.layoutRows(base), [0, 2, 3, 1, 4]);
  assert.deepEqual(T.layoutRows({ ...base, pins: [4, 2] }), [4, 2, 0, 3, 1]);
  assert.deepEqual(T.layoutRows({ ...base, hide: new Set([0, 4]) }), [2, 3, 1]);
  // The filter is a case-insensitive substring of the name.
  assert.deepEqual(T.layoutRows({ ...base, filter: 'WORK' }), [2, 3]);
  // A pinned track the filter rejects is not shown; a pin of a track that does not exist is ignored.
  assert.deepEqual(T.layoutRows({ ...base, filter: 'work', pins: [0, 3, 99] }), [3, 2]);
  // An explicit order, completed by the natural one.
  assert.deepEqual(T.layoutRows({ ...base, order: [4, 1] }), [4, 1, 0, 2, 3]);
});

test('chaseOrder: tracks by their first hit from the selected time on', () => {
  const hits = [
    { time: 5n, track: 2 }, // before `from`: ignored
    { time: 10n, track: 3 },
    { time: 12n, track: 0 },
    { time: 12n, track: 1 },
    { time: 20n, track: 3 },
    { time: 30n, track: 2 },
  ];
  const c = T.chaseOrder(hits, 10n, [0, 1, 2, 3, 4]);
  assert.deepEqual(c.chased, [3, 0, 1, 2]);
  assert.deepEqual(c.order, [3, 0, 1, 2, 4]);
  // A tie sorts by track id even when the hits come in another order.
  assert.deepEqual(T.chaseOrder([{ time: 1n, track: 7 }, { time: 1n, track: 5 }], 0n, [5, 6, 7]).order, [5, 7, 6]);
  assert.deepEqual(T.chaseOrder([], 0n, [1, 0]), { chased: [], order: [1, 0] });
});

test('clampTop, scrollTop, revealTop', () => {
  assert.equal(T.clampTop(8, 10, 5), 5);
  assert.equal(T.clampTop(3, 4, 10), 0);
  assert.equal(T.clampTop(-2, 10, 5), 0);
  assert.equal(T.scrollTop(0, 3, 10, 5), 3);
  assert.equal(T.scrollTop(4, 3, 10, 5), 5);
  assert.equal(T.scrollTop(2, -5, 10, 5), 0);
  assert.equal(T.scrollTop(0, 1, 3, 5), 0);
  assert.equal(T.revealTop(5, 2, 4), 2);
  assert.equal(T.revealTop(5, 9, 4), 6);
  assert.equal(T.revealTop(5, 8, 4), 5);
  assert.equal(T.revealTop(5, 5, 4), 5);
});

test('stepRow: from the selection, else from the visible edge', () => {
  const rows = [7, 3, 9, 1, 4];
  assert.equal(T.stepRow(rows, 9, 1, 0, 3), 3);
  assert.equal(T.stepRow(rows, 9, -1, 0, 3), 1);
  assert.equal(T.stepRow(rows, 4, 1, 0, 3), 4); // stays on the last row
  assert.equal(T.stepRow(rows, 7, -1, 0, 3), 0);
  assert.equal(T.stepRow(rows, -1, 1, 1, 3), 1); // none selected, down: the top visible row
  assert.equal(T.stepRow(rows, -1, -1, 1, 3), 3); // up: the bottom visible row
  assert.equal(T.stepRow(rows, -1, -1, 1, 10), 4);
  assert.equal(T.stepRow([], 3, 1, 0, 3), -1);
});
