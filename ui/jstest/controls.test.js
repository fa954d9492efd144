// The pure parts of the page's controls: stepping through search hits
// (search.js), what a wheel or drag does (input.js), the type selector's
// groups (types.js) and the texts of panels.js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stepHit } from '../static/js/search.js';
import { wheelIntent, dragKind, onLabelEdge, EDGE_PX } from '../static/js/input.js';
import { ROWS_Y } from '../static/js/render.js';
import { groupByProvider } from '../static/js/types.js';
import { popupText, typeText, errText } from '../static/js/panels.js';

const hits = [{ time: 10n }, { time: 20n }, { time: 30n }];

test('stepHit: from the current hit, wrapping', () => {
  assert.deepEqual(stepHit(hits, 0, 0n, 1), { i: 1, wrapped: false });
  assert.deepEqual(stepHit(hits, 2, 0n, 1), { i: 0, wrapped: true });
  assert.deepEqual(stepHit(hits, 0, 0n, -1), { i: 2, wrapped: true });
  assert.deepEqual(stepHit(hits, 2, 0n, -1), { i: 1, wrapped: false });
  assert.deepEqual(stepHit([{ time: 5n }], 0, 0n, 1), { i: 0, wrapped: false });
});

test('stepHit: with no current hit, from a time', () => {
  assert.deepEqual(stepHit(hits, -1, 20n, 1), { i: 1, wrapped: false }); // at or after
  assert.deepEqual(stepHit(hits, -1, 21n, 1), { i: 2, wrapped: false });
  assert.deepEqual(stepHit(hits, -1, 31n, 1), { i: 0, wrapped: false }); // none after: the first
  assert.deepEqual(stepHit(hits, -1, 20n, -1), { i: 1, wrapped: false }); // at or before
  assert.deepEqual(stepHit(hits, -1, 19n, -1), { i: 0, wrapped: false });
  assert.deepEqual(stepHit(hits, -1, 9n, -1), { i: 2, wrapped: false }); // none before: the last
});

const wheel = (/** @type {object} */ e) => ({ deltaMode: 0, deltaX: 0, deltaY: 0, ctrlKey: false, metaKey: false, shiftKey: false, ...e });

test('wheelIntent: Ctrl/⌘ zooms at the pointer', () => {
  assert.deepEqual(wheelIntent(wheel({ deltaY: 100, ctrlKey: true }), 250, 800), { kind: 'zoom', factor: Math.exp(0.2), x: 250 });
  const w = wheelIntent(wheel({ deltaY: -100, metaKey: true }), -30, 800);
  assert.equal(w.kind, 'zoom');
  assert.ok(w.kind === 'zoom' && w.factor < 1 && w.x === 0); // the pointer over the labels zooms at the left edge
  const r = wheelIntent(wheel({ deltaY: 1, ctrlKey: true }), 900, 800);
  assert.ok(r.kind === 'zoom' && r.x === 800);
});

test('wheelIntent: Shift or a sideways wheel pans, else rows scroll', () => {
  assert.deepEqual(wheelIntent(wheel({ deltaY: 30, shiftKey: true }), 0, 800), { kind: 'pan', dx: 30 });
  assert.deepEqual(wheelIntent(wheel({ deltaX: 12, shiftKey: true }), 0, 800), { kind: 'pan', dx: 12 });
  assert.deepEqual(wheelIntent(wheel({ deltaX: 50, deltaY: 10 }), 0, 800), { kind: 'pan', dx: 50 });
  assert.deepEqual(wheelIntent(wheel({ deltaX: 10, deltaY: 80 }), 0, 800), { kind: 'rows', rows: 2 });
  // Lines and pages count 16 and 400 px.
  assert.deepEqual(wheelIntent(wheel({ deltaY: 5, deltaMode: 1 }), 0, 800), { kind: 'rows', rows: 2 });
  assert.deepEqual(wheelIntent(wheel({ deltaY: -1, deltaMode: 2 }), 0, 800), { kind: 'rows', rows: -10 });
});

test('dragKind', () => {
  assert.equal(dragKind(0, false), 'pan');
  assert.equal(dragKind(0, true), 'fence');
  assert.equal(dragKind(2, false), 'ruler');
  assert.equal(dragKind(2, true), 'ruler');
  assert.equal(dragKind(1, false), '');
});

test('groupByProvider: groups in order of first appearance', () => {
  const t = (/** @type {number} */ id, /** @type {string} */ provider) => ({ id, provider, name: `e${id}`, code: id });
  const g = groupByProvider([t(0, 'B'), t(1, 'A'), t(2, 'B'), t(3, ''), t(4, 'A')]);
  assert.deepEqual([...g.keys()], ['B', 'A', '']);
  assert.deepEqual(g.get('B')?.map((x) => x.id), [0, 2]);
  assert.deepEqual(g.get('A')?.map((x) => x.id), [1, 4]);
  assert.equal(groupByProvider([]).size, 0);
});

test('popupText: the label, else the type, else the id', () => {
  const m = /** @type {any} */ ({ types: [{ id: 0, provider: 'P', name: 'GCStart', code: 1 }] });
  const d = /** @type {any} */ ({ ref: '3:9', type: 0, label: '' });
  assert.equal(popupText({ ...d, label: 'GC #4 gen 2' }, m), 'GC #4 gen 2');
  assert.equal(popupText(d, m), '[1] GCStart');
  assert.equal(popupText({ ...d, type: 5 }, m), 'event 3:9');
  assert.equal(typeText({ id: 2, provider: '', name: '', code: 77 }), '[77] ');
  assert.equal(errText(new Error('boom')), 'boom');
  assert.equal(errText('plain'), 'plain');
});

test('the name column edge grabs a few px either side, below the axis only', () => {
  assert.equal(onLabelEdge(120, ROWS_Y + 5, 120), true);
  assert.equal(onLabelEdge(120 - EDGE_PX, ROWS_Y, 120), true);
  assert.equal(onLabelEdge(120 + EDGE_PX + 1, ROWS_Y + 5, 120), false);
  assert.equal(onLabelEdge(118, ROWS_Y - 1, 120), false); // the axis and overview keep their clicks
});
