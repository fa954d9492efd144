// Selection math over a frame (ui/static/js/glyphs.js): the glyphs of a
// track, stepping to the next one, and hit testing a click.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { glyphs, nextGlyph, hitTest, PICK_PX, BOX_PX } from '../static/js/glyphs.js';
import { emptySlice } from '../static/js/source.js';
import { Viewport } from '../static/js/viewport.js';

const BASE = 1n << 60n; // far past 2^53

/**
 * A frame with one track 3: events at ns offsets 100 (type 1), 500 (type 2),
 * 300 (type 1, index 7); an aggregate of 40 events at 1000…2000 (type 2).
 */
function frame() {
  const s = emptySlice();
  s.n = 3;
  s.off = new Float64Array([100, 500, 300]);
  s.type = new Int32Array([1, 2, 1]);
  s.first = new Uint32Array([4, 9, 7]);
  s.an = 1;
  s.aoff = new Float64Array([1000]);
  s.adur = new Float64Array([1000]);
  s.count = new Uint32Array([40]);
  s.atype = new Int32Array([2]);
  s.afirst = new Uint32Array([10]);
  return { seq: 1, base: BASE, end: BASE + 4000n, nsPerPx: 10, tracks: new Map([[3, s]]) };
}

test('glyphs: in time order, hidden types left out', () => {
  const f = frame();
  assert.deepEqual(glyphs(f, 3, new Set()), [
    { time: BASE + 100n, ref: '3:4' },
    { time: BASE + 300n, ref: '3:7' },
    { time: BASE + 500n, ref: '3:9' },
    { time: BASE + 1000n, ref: '3:10' },
  ]);
  assert.deepEqual(glyphs(f, 3, new Set([2])).map((g) => g.ref), ['3:4', '3:7']);
  assert.deepEqual(glyphs(f, 5, new Set()), []);
  assert.deepEqual(glyphs(null, 3, new Set()), []);
});

test('nextGlyph: strictly after or before', () => {
  const g = glyphs(frame(), 3, new Set());
  assert.equal(nextGlyph(g, BASE + 100n, 1)?.ref, '3:7');
  assert.equal(nextGlyph(g, BASE + 100n, -1), undefined);
  assert.equal(nextGlyph(g, BASE + 999n, 1)?.ref, '3:10');
  assert.equal(nextGlyph(g, BASE + 999n, -1)?.ref, '3:9');
  assert.equal(nextGlyph(g, BASE + 1000n, 1), undefined);
  assert.equal(nextGlyph(g, 0n, 1)?.ref, '3:4');
});

test('hitTest: nearest glyph within PICK_PX, boxes count whole', () => {
  const f = frame();
  const vp = new Viewport(BASE, 10, 400); // 10 ns per px: events at x 10, 30, 50; aggregate 100…200
  const none = new Set();
  assert.equal(hitTest(f, vp, 3, 10, none, 'summary'), '3:4');
  assert.equal(hitTest(f, vp, 3, 14.9, none, 'summary'), '3:4');
  assert.equal(hitTest(f, vp, 3, 15, none, 'summary'), ''); // not closer than 5 px (PICK_PX)
  assert.equal(PICK_PX, 5);
  assert.equal(hitTest(f, vp, 3, 10 - 4, none, 'summary'), '3:4');
  // In event mode a box 14 px wide starts at the event: its right part picks it.
  assert.equal(hitTest(f, vp, 3, 24, none, 'event'), '3:4');
  assert.equal(hitTest(f, vp, 3, 24, none, 'summary'), ''); // 14 px from the tick: too far
  assert.equal(BOX_PX, 14);
  assert.equal(hitTest(f, vp, 3, 28, none, 'summary'), '3:7');
  // Between two events the closer one.
  assert.equal(hitTest(f, vp, 3, 27, none, 'summary'), '3:7');
  // An aggregate picks its first event anywhere over it.
  assert.equal(hitTest(f, vp, 3, 150, none, 'summary'), '3:10');
  assert.equal(hitTest(f, vp, 3, 203, none, 'summary'), '3:10');
  assert.equal(hitTest(f, vp, 3, 210, none, 'summary'), '');
  // Hidden types are not picked.
  assert.equal(hitTest(f, vp, 3, 150, new Set([2]), 'summary'), '');
  assert.equal(hitTest(f, vp, 3, 10, new Set([1]), 'summary'), '');
  // No slice for the track, or no frame.
  assert.equal(hitTest(f, vp, 4, 10, none, 'event'), '');
  assert.equal(hitTest(null, vp, 3, 10, none, 'event'), '');
});

test('hitTest: the view may start elsewhere than the frame', () => {
  const f = frame();
  const vp = new Viewport(BASE + 50n, 10, 400); // event 100 is at x 5
  assert.equal(hitTest(f, vp, 3, 5, new Set(), 'summary'), '3:4');
  // An aggregate narrower than a pixel is hit over one pixel.
  const wide = new Viewport(BASE, 10_000, 400); // aggregate at x 0.1…0.2
  assert.equal(hitTest(f, wide, 3, 1.05, new Set([1]), 'summary'), '3:10');
});
