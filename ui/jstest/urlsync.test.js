// URL syncing (ui/static/js/urlsync.js) against a stand-in window: push for
// steps, throttled replace for moves, and Back/Forward.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UrlSync, REPLACE_MS } from '../static/js/urlsync.js';
import { defaultState } from '../static/js/urlstate.js';

function fakeWindow() {
  /** @type {{op: string, url: string}[]} */
  const log = [];
  /** @type {Map<number, () => void>} */
  const timers = new Map();
  /** @type {(() => void)[]} */
  const pop = [];
  let next = 1;
  const win = {
    location: { search: '' },
    history: {
      pushState: (/** @type {any} */ _d, /** @type {string} */ _u, /** @type {string} */ url) => { log.push({ op: 'push', url }); win.location.search = url; },
      replaceState: (/** @type {any} */ _d, /** @type {string} */ _u, /** @type {string} */ url) => { log.push({ op: 'replace', url }); win.location.search = url; },
    },
    setTimeout: (/** @type {() => void} */ f, /** @type {number} */ ms) => { assert.equal(ms, REPLACE_MS); timers.set(next, f); return next++; },
    clearTimeout: (/** @type {number} */ id) => { timers.delete(id); },
    addEventListener: (/** @type {string} */ type, /** @type {() => void} */ f) => { assert.equal(type, 'popstate'); pop.push(f); },
  };
  return { win, log, timers, pop };
}

test('push records a step, once', () => {
  const { win, log } = fakeWindow();
  const st = defaultState();
  const u = new UrlSync(() => st, win);
  st.q = 'gc';
  u.push();
  u.push(); // same state: no second entry
  assert.deepEqual(log, [{ op: 'push', url: '?v=1&q=gc' }]);
  st.mode = 'summary';
  u.push();
  assert.equal(log.length, 2);
  assert.equal(log[1].url, '?v=1&mode=summary&q=gc');
});

test('replace: now, or after REPLACE_MS with the state then', () => {
  const { win, log, timers } = fakeWindow();
  const st = defaultState();
  const u = new UrlSync(() => st, win);
  st.start = 10n;
  st.end = 20n;
  u.replace();
  assert.deepEqual(log, [{ op: 'replace', url: '?v=1&s=10&e=20' }]);
  u.replace(REPLACE_MS);
  u.replace(REPLACE_MS); // the first timer is cancelled
  assert.equal(timers.size, 1);
  st.end = 30n;
  for (const f of timers.values()) f();
  assert.deepEqual(log.at(-1), { op: 'replace', url: '?v=1&s=10&e=30' });
  // A push cancels a pending replace.
  u.replace(REPLACE_MS);
  u.push();
  assert.equal(timers.size, 0);
});

test('onPop hands over the state of the entry', () => {
  const { win, pop } = fakeWindow();
  const u = new UrlSync(() => defaultState(), win);
  /** @type {import('../static/js/urlstate.js').ViewState[]} */
  const got = [];
  u.onPop((st) => got.push(st));
  win.location.search = '?v=1&s=5&e=9&sel=2:7&mode=summary';
  pop[0]();
  assert.equal(got.length, 1);
  assert.equal(got[0].start, 5n);
  assert.equal(got[0].end, 9n);
  assert.equal(got[0].sel, '2:7');
  assert.equal(got[0].mode, 'summary');
});
