// The page's one time base (ui/static/js/timebase.js): times relative to
// the trace's first event in the axis's units, exact to the ns past 2^53,
// and the absolute value for the hover title.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relTime, absTitle, wallTime } from '../static/js/timebase.js';
import { formatTime, unitFor } from '../static/js/viewport.js';

const FIRST = 342_628_712_680n - 127_360_000n; // the event: 127.360 ms after the first

test('relative times read like the ruler, with the absolute ns nowhere in them', () => {
  assert.equal(relTime(342_628_712_680n, FIRST), '127.360 ms');
  assert.equal(relTime(FIRST, FIRST), '0 ns');
  assert.equal(relTime(FIRST + 7n, FIRST), '7 ns');
  assert.equal(relTime(FIRST + 1_500n, FIRST), '1.500 µs');
  assert.equal(relTime(FIRST + 127_360_123n, FIRST), '127.360123 ms');
  assert.equal(relTime(FIRST + 2_000_000_001n, FIRST), '2.000000001 s');
  assert.equal(relTime(FIRST + 61_250_000_000n, FIRST), '61.250 s');
  assert.equal(relTime(FIRST - 2_500n, FIRST), '-2.500 µs');
});

test('a relative time is exact: its digits give back the ns, past 2^53', () => {
  const first = 1_700_000_000_000_000_000n; // epoch ns
  const mult = { s: 1_000_000_000n, ms: 1_000_000n, 'µs': 1_000n, ns: 1n };
  let x = 12345n;
  for (let i = 0; i < 2000; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    const rel = (x >> 20n) % (1n << BigInt(1 + (i % 50))) - (i % 7 === 0 ? 1000n : 0n);
    const text = relTime(first + rel, first);
    const m = /^(-?)(\d+)(?:\.(\d+))? (s|ms|µs|ns)$/.exec(text);
    assert.ok(m, text);
    const size = mult[/** @type {keyof typeof mult} */ (m[4])];
    const digits = size.toString().length - 1;
    const frac = (m[3] ?? '').padEnd(digits, '0');
    assert.ok(frac.length === digits, `${text}: more decimals than ns`);
    const back = (BigInt(m[2]) * size + BigInt(frac || '0')) * (m[1] ? -1n : 1n);
    assert.equal(back, rel, text);
    // The unit is the axis's for that magnitude, the digits its formatTime's.
    const abs = rel < 0n ? -rel : rel;
    assert.equal(m[4], unitFor(abs)[0]);
    assert.ok(formatTime(rel, unitFor(abs), 1n).startsWith(text.replace(/ .*/, '')), text);
  }
});

test('the absolute value goes in the title: ns, and the wall clock when known', () => {
  assert.equal(absTitle(342_628_712_680n, ''), "342628712680 ns on the trace's clock");
  assert.equal(absTitle(1_500n, '2026-11-21T17:30:00.123456789Z'),
    "1500 ns on the trace's clock\n2026-11-21T17:30:00.123458289Z wall clock");
  assert.equal(wallTime('2026-11-21T17:30:00+01:00', 1n), '2026-11-21T16:30:00.000000001Z');
  assert.equal(wallTime('not a time', 1n), 'not a time');
});
