// The key table (ui/static/js/keys.js): lookup by physical key, and every
// key and toolbar button naming an action that exists (actions.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, lookup } from '../static/js/keys.js';
import { TOOLBAR } from '../static/js/page.js';
import { actions } from '../static/js/actions.js';
import { Model } from '../static/js/model.js';

/** A KeyboardEvent's fields lookup reads. @param {Partial<KeyboardEvent>} k */
const key = (k) => /** @type {KeyboardEvent} */ ({ code: '', key: '', shiftKey: false, ctrlKey: false, metaKey: false, altKey: false, ...k });

test('lookup: by KeyboardEvent.code, so layouts do not matter', () => {
  assert.equal(lookup(key({ code: 'KeyW', key: 'w' })), 'zoomIn');
  assert.equal(lookup(key({ code: 'KeyW', key: 'z' })), 'zoomIn'); // AZERTY: the W position types z
  assert.equal(lookup(key({ code: 'KeyZ', key: 'w' })), 'zoomSelection');
  assert.equal(lookup(key({ code: 'KeyS' })), 'zoomOut');
  assert.equal(lookup(key({ code: 'KeyA' })), 'panLeft');
  assert.equal(lookup(key({ code: 'KeyD' })), 'panRight');
  assert.equal(lookup(key({ code: 'Escape' })), 'escape');
  assert.equal(lookup(key({ code: 'ArrowRight' })), 'eventNext');
  assert.equal(lookup(key({ code: 'Digit0' })), 'zoomAll');
});

test('lookup: Shift selects the shifted row, and only it', () => {
  assert.equal(lookup(key({ code: 'KeyH' })), 'hideTrack');
  assert.equal(lookup(key({ code: 'KeyH', shiftKey: true })), 'showTracks');
  assert.equal(lookup(key({ code: 'KeyN' })), 'searchNext');
  assert.equal(lookup(key({ code: 'KeyN', shiftKey: true })), 'searchPrev');
  assert.equal(lookup(key({ code: 'KeyM', shiftKey: true })), 'noChase');
  assert.equal(lookup(key({ code: 'KeyW', shiftKey: true })), undefined);
});

test('lookup: ? is help on any layout; modifiers and unknown keys are not ours', () => {
  assert.equal(lookup(key({ code: 'Slash', key: '?', shiftKey: true })), 'help');
  assert.equal(lookup(key({ code: 'Comma', key: '?', shiftKey: true })), 'help');
  assert.equal(lookup(key({ code: 'Slash', key: '/' })), 'focusSearch');
  assert.equal(lookup(key({ code: 'KeyW', ctrlKey: true })), undefined);
  assert.equal(lookup(key({ code: 'KeyW', metaKey: true })), undefined);
  assert.equal(lookup(key({ code: 'KeyW', altKey: true })), undefined);
  assert.equal(lookup(key({ code: 'Backquote' })), undefined);
  assert.equal(lookup(key({ code: 'F5' })), undefined);
});

test('KEYS: one action per key and Shift state, each with help', () => {
  const seen = new Set();
  for (const k of KEYS) {
    const id = `${k.code}${k.shift ? '+shift' : ''}`;
    assert.ok(!seen.has(id), `${id} bound twice`);
    seen.add(id);
    assert.ok(k.keys && k.help && k.action, JSON.stringify(k));
  }
});

test('every key and toolbar button has an action', () => {
  const app = /** @type {any} */ ({ m: new Model() });
  const a = actions(app);
  for (const k of KEYS) assert.equal(typeof a[k.action], 'function', k.action);
  assert.equal(typeof a.help, 'function');
  const buttons = TOOLBAR.filter((b) => Array.isArray(b)).map((b) => b[1]);
  assert.ok(buttons.length >= 10);
  for (const b of [...buttons, 'toggleMode', 'copyLink']) assert.equal(typeof a[b], 'function', b);
});
