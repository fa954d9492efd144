// Layout prefs (ui/static/js/prefs.js): what localStorage keeps of the
// details panel and the name column, checked on the way in.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrefs, formatPrefs, defaultPrefs, clampDetailsH, clampLabelW, DETAILS_MIN_H, LABEL_MIN_W, LABEL_MAX_W } from '../static/js/prefs.js';

test('prefs round-trip through their stored text', () => {
  const p = { detailsOpen: false, detailsH: 333, labelW: 410 };
  assert.deepEqual(parsePrefs(formatPrefs(p)), p);
  assert.deepEqual(parsePrefs(formatPrefs(defaultPrefs())), defaultPrefs());
});

test('missing, damaged or out-of-range entries take the defaults', () => {
  const d = defaultPrefs();
  assert.deepEqual(parsePrefs(null), d);
  assert.deepEqual(parsePrefs('{'), d);
  assert.deepEqual(parsePrefs('[1,2]'), d);
  assert.deepEqual(parsePrefs('"x"'), d);
  assert.deepEqual(parsePrefs('{"detailsOpen":"no","detailsH":-5,"labelW":1e9}'), d);
  assert.deepEqual(parsePrefs('{"detailsH":"300","labelW":null}'), d);
  assert.deepEqual(parsePrefs('{"detailsOpen":false}'), { ...d, detailsOpen: false });
});

test('drags stay within bounds', () => {
  assert.equal(clampDetailsH(10, 800, 200), DETAILS_MIN_H);
  assert.equal(clampDetailsH(700, 800, 200), 600);
  assert.equal(clampDetailsH(301.6, 800, 200), 302);
  assert.equal(clampLabelW(5, 1200, 100), LABEL_MIN_W);
  assert.equal(clampLabelW(5000, 1200, 100), 1100);
  assert.equal(clampLabelW(5000, 9000, 100), LABEL_MAX_W);
});
