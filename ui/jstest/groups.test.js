// Grouping (ui/static/js/groups.js): threads under their process, derived
// tracks after their trace track, CPU tracks in a group of their own on
// top, collapsing, and the row id encoding.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as G from '../static/js/groups.js';

const tracks = [
  { id: 0, name: 'app (pid 10)', kind: 'process', pid: 10, tid: -1, parent: -1, events: 0 },
  { id: 1, name: 'app 10', kind: 'thread', pid: 10, tid: 10, parent: 0, events: 5 },
  { id: 2, name: 'app 11', kind: 'thread', pid: 10, tid: 11, parent: 0, events: 0 },
  { id: 3, name: 'idle (pid 20)', kind: 'process', pid: 20, tid: -1, parent: -1, events: 0 },
  { id: 4, name: 'idle 20', kind: 'thread', pid: 20, tid: 20, parent: 3, events: 0 },
  { id: 5, name: 'CPU 0', kind: 'cpu', pid: -1, tid: -1, parent: -1, events: 9 },
];
const derived = [
  { id: 0, kind: 'cpu', name: 'CPU 1', of: -1, cpu: 1 },
  { id: 1, kind: 'state', name: 'state', of: 2, cpu: -1 },
  { id: 2, kind: 'cpu', name: 'CPU 0', of: -1, cpu: 0 },
  { id: 3, kind: 'slices', name: 'syscalls', of: 2, cpu: -1 },
  { id: 4, kind: 'state', name: 'state', of: 1, cpu: -1 },
];
const D = G.derivedRow;

const input = (over = {}) => ({ rows: [5, 1, 0, 2, 3, 4], pinned: 0, tracks, derived, hideDerived: new Set(), collapsed: new Set(), ...over });

test('row ids: trace tracks, derived tracks and group headers never collide', () => {
  for (const d of [0, 1, 2 ** 20]) assert.deepEqual(G.rowKind(G.derivedRow(d)), { kind: 'derived', id: d });
  for (const g of [0, 5, 99999]) assert.deepEqual(G.rowKind(G.groupRow(g)), { kind: 'group', id: g });
  assert.deepEqual(G.rowKind(7), { kind: 'track', id: 7 });
  assert.equal(G.rowKind(-1).kind, 'none');
});

test('groupRows: CPUs on top by number, then processes; derived tracks after their thread; a quiet process last', () => {
  const { rows, groups } = G.groupRows(input());
  assert.deepEqual(groups.map((g) => g.name), ['CPUs', 'CPU 0', 'app (pid 10)', 'idle (pid 20)']);
  assert.deepEqual(rows, [
    G.groupRow(0), D(2), D(0),
    G.groupRow(1), 5,
    G.groupRow(2), 1, D(4), 2, D(1), D(3), // the process track without events is its header
    G.groupRow(3), 4,
  ]);
});

test('groupRows: a collapsed group is its header; hidden derived tracks go; pins stay on top with their derived tracks', () => {
  let { rows } = G.groupRows(input({ collapsed: new Set(['p10']) }));
  assert.ok(!rows.includes(1) && !rows.includes(D(4)));
  assert.equal(rows.filter((r) => r === G.groupRow(2)).length, 1);
  ({ rows } = G.groupRows(input({ hideDerived: new Set([1, 0]) })));
  assert.ok(!rows.includes(D(1)) && !rows.includes(D(0)) && rows.includes(D(3)));
  ({ rows } = G.groupRows(input({ rows: [2, 5, 1, 0, 3, 4], pinned: 1 })));
  assert.deepEqual(rows.slice(0, 3), [2, D(1), D(3)]);
});

test('groupRows: threads without a process track group by pid', () => {
  const ts = [
    { id: 0, name: 'Main', kind: 'thread', pid: 42, tid: 42, parent: -1, events: 3 },
    { id: 1, name: 'Worker', kind: 'thread', pid: 42, tid: 43, parent: -1, events: 3 },
  ];
  const { rows, groups } = G.groupRows({ rows: [0, 1], pinned: 0, tracks: ts, derived: [{ id: 0, kind: 'slices', name: 'activities', of: 1, cpu: -1 }], hideDerived: new Set(), collapsed: new Set() });
  assert.deepEqual(groups.map((g) => [g.name, g.members]), [['process 42', 3]]);
  assert.deepEqual(rows, [G.groupRow(0), 0, 1, D(0)]);
});

test('groupRows: a combined view groups tracks by trace, named after it, whatever their processes', () => {
  const t = [
    { id: 0, name: 'app 10', kind: 'thread', pid: 10, tid: 10, parent: -1, events: 3, trace: 0 },
    { id: 1, name: 'app 10', kind: 'thread', pid: 10, tid: 10, parent: -1, events: 2, trace: 1 },
    { id: 2, name: 'app 11', kind: 'thread', pid: 11, tid: 11, parent: -1, events: 1, trace: 0 },
  ];
  const { rows, groups } = G.groupRows({ rows: [0, 1, 2], pinned: 0, tracks: t, derived: [], hideDerived: new Set(), collapsed: new Set(['x1']), traces: ['app.nettrace', 'sched.perf.data'] });
  assert.deepEqual(groups.map((g) => [g.key, g.name, g.members]), [['x0', 'app.nettrace', 2], ['x1', 'sched.perf.data', 1]]);
  assert.deepEqual(rows, [G.groupRow(0), 0, 2, G.groupRow(1)]);
});
