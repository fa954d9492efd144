// Progress text (ui/static/js/progress.js): the percentage never reads 100
// before the trace is ready, and the websocket's message is read safely.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shownPercent, progressText, progressOf } from '../static/js/progress.js';

test('the percentage is rounded down and below 100 until ready', () => {
  assert.equal(shownPercent(0), 0);
  assert.equal(shownPercent(41.9), 41);
  assert.equal(shownPercent(87), 87); // 8.7 M of 10 M events
  assert.equal(shownPercent(99.6), 99); // toFixed(0) said 100
  assert.equal(shownPercent(100), 99);
  assert.equal(shownPercent(-3), 0);
  assert.equal(shownPercent(NaN), 0);
});

test('the progress line names the state, the events and the rate', () => {
  assert.equal(progressText({ state: 'indexing', percent: 87.4, events: 8_700_000, rate: 2_500_000.4 }),
    'indexing: 8,700,000 events, 2,500,000 events/s · 87 %');
  assert.equal(progressText({ state: 'queued', percent: 0, events: 0 }), 'queued: 0 events · 0 %');
});

test('a live trace has no percentage: it has no end to count towards', () => {
  assert.equal(progressText({ state: 'live', percent: 0, events: 2000 }), 'live: 2,000 events');
  assert.equal(progressText({ state: 'live', percent: 0, events: 2000, rate: 999.6 }), 'live: 2,000 events, 1,000 events/s');
});

test('a progress message is read field by field', () => {
  assert.deepEqual(progressOf({ type: 'progress', state: 'indexing', percent: 41.5, events: 1200000, events_per_s: 2500000 }),
    { state: 'indexing', percent: 41.5, events: 1200000, rate: 2500000 });
  assert.deepEqual(progressOf({ percent: '50', events: null, state: 3 }), { state: 'indexing', percent: 0, events: 0, rate: 0 });
  assert.deepEqual(progressOf({ percent: 1e9, events: -5 }), { state: 'indexing', percent: 100, events: 0, rate: 0 });
  assert.deepEqual(progressOf(null), { state: 'indexing', percent: 0, events: 0, rate: 0 });
});
