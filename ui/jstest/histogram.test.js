// Histogram layout of the area-selection panel (ui/static/js/histogram.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { histBars, binRange, binQuery } from '../static/js/histogram.js';

const H = { field: 'Size', count: 10, missing: 0, min: 0, max: 100, mean: 40, p50: 30, p90: 90, p99: 99, bins: [1, 0, 4, 5], complete: true };

test('bars tile the width, tallest bin full height, empty bins flat', () => {
  const bars = histBars(H, 101, 50);
  assert.equal(bars.length, 4);
  assert.equal(bars[0].x, 0);
  for (let i = 1; i < bars.length; i++) assert.equal(bars[i].x, bars[i - 1].x + bars[i - 1].w);
  assert.equal(bars[3].x + bars[3].w, 101);
  assert.equal(bars[3].h, 50);
  assert.equal(bars[1].h, 0);
  assert.equal(bars[0].h, 10);
  assert.deepEqual(histBars({ ...H, bins: [] }, 100, 50), []);
});

test('bin ranges cover min to max; the last bin is closed in its query', () => {
  assert.deepEqual(binRange(H, 0), [0, 25]);
  assert.deepEqual(binRange(H, 3), [75, 100]);
  assert.equal(binQuery(H, 0), 'Size >= 0 and Size < 25');
  assert.equal(binQuery(H, 3), 'Size >= 75 and Size <= 100');
});
