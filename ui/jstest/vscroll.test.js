// Virtual scrolling math of the events table (ui/static/js/vscroll.js),
// checked against a brute-force walk over every row.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { visibleRows, scrollHeight, pagesOf, pageRequest, rowPlace, MAX_SCROLL_PX } from '../static/js/vscroll.js';

test('the rows shown cover the viewport exactly, unscaled', () => {
  const rowH = 20, viewH = 300, total = 1000;
  for (const top of [0, 1, 19, 20, 4321, total * rowH - viewH, total * rowH]) {
    const { first, last, y } = visibleRows(top, viewH, rowH, total, 0);
    const t = Math.min(top, total * rowH - viewH);
    // Brute force: the rows that intersect [t, t + viewH).
    const want = [];
    for (let k = 0; k < total; k++) if (k * rowH < t + viewH && (k + 1) * rowH > t) want.push(k);
    assert.equal(first, want[0], `first at ${top}`);
    assert.ok(last >= want[want.length - 1] + 1 && last <= want[want.length - 1] + 2, `last at ${top}: ${last}`);
    assert.equal(y, first * rowH, `y at ${top}`);
  }
  assert.deepEqual(visibleRows(0, 300, 20, 0), { first: 0, last: 0, y: 0 });
});

test('a million-row table scales to the cap and reaches its last row', () => {
  const rowH = 20, viewH = 400, total = 10_000_000;
  const h = scrollHeight(total, rowH);
  assert.equal(h, MAX_SCROLL_PX);
  assert.equal(scrollHeight(1000, 20), 20000);
  const end = visibleRows(h - viewH, viewH, rowH, total, 0);
  assert.equal(end.last, total);
  assert.equal(visibleRows(0, viewH, rowH, total, 0).first, 0);
  // Monotonic, and one pixel never skips more than a screen of rows.
  let prev = -1;
  for (let top = 0; top <= h - viewH; top += 9973) {
    const { first, last } = visibleRows(top, viewH, rowH, total, 2);
    assert.ok(first >= prev, `first goes back at ${top}`);
    assert.ok(last - first <= viewH / rowH + 6, `too many rows at ${top}`);
    prev = first;
  }
});

test('pages and descending order: every display row comes from the server row that mirrors it', () => {
  for (const total of [0, 1, 7, 200, 201, 1999]) {
    for (const desc of [false, true]) {
      const size = 50;
      for (let k = 0; k < total; k++) {
        const { page, i } = rowPlace(k, size, total, desc);
        const { row, limit } = pageRequest(page, size, total, desc);
        assert.ok(i >= 0 && i < limit, `row ${k} of ${total} desc=${desc}: index ${i} of ${limit}`);
        // The page's rows ascend from row; reversed when descending.
        assert.equal(row + i, desc ? total - 1 - k : k);
      }
    }
  }
  assert.deepEqual(pagesOf(0, 0, 50), []);
  assert.deepEqual(pagesOf(49, 51, 50), [0, 1]);
  assert.deepEqual(pagesOf(100, 150, 50), [2]);
});
