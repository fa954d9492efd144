// Track tooltips (ui/static/js/tip.js): the full name and the names a
// renamed track had before, oldest first.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trackTip, nameHistory } from '../static/js/tip.js';

test('a renamed track lists its names oldest first, ending with the current one', () => {
  const t = { id: 3, name: 'ls', kind: 'thread', names: ['sh'], pid: 10, tid: 11, events: 1234 };
  assert.equal(nameHistory(t), 'sh → ls');
  assert.equal(trackTip(t), 'ls\nnames: sh → ls\nthread · pid 10 · tid 11 · 1,234 events');
});

test('a track never renamed shows its full name alone', () => {
  const long = 'x'.repeat(300) + ' <&> "quoted"';
  assert.equal(trackTip({ id: 0, name: long, kind: 'cpu' }), long);
  assert.equal(nameHistory({ id: 0, name: long, kind: 'cpu', names: [] }), long);
  assert.equal(trackTip({ id: 0, name: 'cpu 1', kind: 'cpu', pid: -1, tid: -1 }), 'cpu 1');
});
