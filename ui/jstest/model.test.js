// The view model (ui/static/js/model.js): rows, the URL state it writes and
// takes back (through urlstate.js), and the scene it hands the renderer.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Model, ROW_H } from '../static/js/model.js';
import { formatState, parseState } from '../static/js/urlstate.js';
import { Viewport } from '../static/js/viewport.js';

const T0 = 1n << 55n;

/** @returns {import('../static/js/source.js').Meta} */
function meta() {
  return {
    name: 't', format: 'fake', first: T0, last: T0 + 1_000_000n, events: 10,
    tracks: [
      { id: 0, name: 'main', kind: 'thread', events: 0 },
      { id: 1, name: 'gc', kind: 'thread', events: 4 },
      { id: 2, name: 'worker', kind: 'thread', events: 6 },
    ],
    types: [{ id: 0, provider: 'P', name: 'A', code: 1 }, { id: 1, provider: 'P', name: 'B', code: 2 }],
    lost: [], truncatedAt: null, error: '',
  };
}

test('a new model shows nothing selected', () => {
  const m = new Model();
  assert.equal(m.meta, null);
  assert.equal(m.selTrack, -1);
  assert.equal(m.selEvent, null);
  assert.equal(m.rowH, ROW_H);
  assert.equal(m.mode, 'event');
});

test('setMeta and layout: natural order, top kept in range', () => {
  const m = new Model();
  m.setMeta(meta());
  assert.deepEqual(m.natural, [1, 2, 0]);
  m.top = 5;
  m.layout(2);
  assert.deepEqual(m.rows, [1, 2, 0]);
  assert.equal(m.top, 1);
  m.pins = [0];
  m.hide.add(2);
  m.layout(10);
  assert.deepEqual(m.rows, [0, 1]);
  assert.equal(m.top, 0);
  m.filter = 'G';
  m.layout(10);
  assert.deepEqual(m.rows, [1]);
});

test('trackAt: rows from the top row down', () => {
  const m = new Model();
  m.setMeta(meta());
  m.layout(10);
  m.rowH = 20;
  assert.equal(m.trackAt(0), 1);
  assert.equal(m.trackAt(19.9), 1);
  assert.equal(m.trackAt(20), 2);
  assert.equal(m.trackAt(59), 0);
  assert.equal(m.trackAt(60), -1);
  assert.equal(m.trackAt(-1), -1);
  m.top = 1;
  assert.equal(m.trackAt(0), 2);
});

test('state: what the URL says of the view', () => {
  const m = new Model();
  m.setMeta(meta());
  m.vp = new Viewport(T0 + 100n, 2, 500);
  m.selEvent = { ref: '2:5', time: T0 + 300n, track: 2 };
  m.selTrack = 2;
  m.hide.add(0);
  m.pins = [1];
  m.order = [2, 1];
  m.hideTypes.add(1);
  m.mode = 'summary';
  m.query = 'GC && x > 3';
  m.filter = 'w';
  const st = m.state();
  assert.deepEqual(st, {
    start: T0 + 100n, end: T0 + 1100n, sel: '2:5', track: 2, hide: [0], pin: [1], order: [2, 1],
    hideTypes: [1], hideDerived: [], mode: 'summary', q: 'GC && x > 3', filter: 'w', where: '', whereMode: 'dim',
    stacks: 'closed', stacksView: 'flame', stacksRange: 'view', stacksTracks: 'all', stacksEvent: '',
    stacksWeight: '', stacksTf: '', stacksQ: '', stacksFn: '', stacksNode: '', traces: [], offsets: [],
  });
  // The copies are the model's no more.
  st.pin.push(9);
  assert.deepEqual(m.pins, [1]);
});

test('apply takes back what state wrote, through the URL', () => {
  const a = new Model();
  a.setMeta(meta());
  a.vp = new Viewport(T0 + 100n, 2, 500);
  a.selTrack = 1;
  a.hide.add(2);
  a.pins = [0];
  a.order = [1];
  a.hideTypes.add(0);
  a.mode = 'summary';
  a.filter = 'x';
  a.stacks = { ...a.stacks, stacks: 'open', stacksView: 'bottom', stacksTf: 'fm%21a~r', stacksNode: 'm!a\nm!b' };
  const b = new Model();
  b.setMeta(meta());
  b.apply(parseState(formatState(a.state())), 250);
  assert.deepEqual(b.stacks, a.stacks);
  assert.equal(b.vp.start, a.vp.start);
  assert.equal(b.vp.end, a.vp.end);
  assert.equal(b.vp.width, 250);
  assert.deepEqual({ sel: b.selTrack, hide: [...b.hide], pins: b.pins, order: b.order, types: [...b.hideTypes], mode: b.mode, filter: b.filter },
    { sel: 1, hide: [2], pins: [0], order: [1], types: [0], mode: 'summary', filter: 'x' });
});

test('apply drops ids the trace does not have; no range is the whole trace', () => {
  const m = new Model();
  m.setMeta(meta());
  const st = parseState('?v=1&tr=7&hide=1,5&pin=3,2&order=9,0&xt=1,2');
  m.apply(st, 400);
  assert.equal(m.selTrack, -1);
  assert.deepEqual([...m.hide], [1]);
  assert.deepEqual(m.pins, [2]);
  assert.deepEqual(m.order, [0]);
  assert.deepEqual([...m.hideTypes], [1]);
  assert.ok(m.vp.start < T0 && m.vp.end > T0 + 1_000_000n, 'whole trace with a margin');
  assert.equal(m.vp.width, 400);
});

test('clearSelection', () => {
  const m = new Model();
  m.selEvent = { ref: '1:1', time: 1n, track: 1 };
  m.selTrack = 1;
  m.ruler = { t0: 1n, t1: 2n };
  m.clearSelection();
  assert.equal(m.selEvent, null);
  assert.equal(m.details, null);
  assert.equal(m.selTrack, -1);
  assert.ok(m.ruler, 'the ruler stays');
});

test('scene: what the renderer draws', () => {
  const m = new Model();
  m.setMeta(meta());
  m.layout(10);
  m.pins = [2];
  m.hits = [{ ref: '1:0', time: T0 + 5n, track: 1 }, { ref: '2:3', time: T0 + 9n, track: 2 }];
  const theme = /** @type {any} */ ({ dark: false });
  const s = m.scene(120, theme);
  assert.equal(s.labelW, 120);
  assert.equal(s.theme, theme);
  assert.equal(s.order, m.rows);
  assert.equal(s.hidden, m.hideTypes);
  assert.deepEqual([...s.pinned], [2]);
  assert.deepEqual(s.hits, [T0 + 5n, T0 + 9n]);
  assert.equal(s.meta.name, 't');
});
