// The JS wire decoder (ui/static/js/wire.js) on the Go encoder's golden
// frames (render/wire/testdata, written by TestGolden from goldenFrames in
// render/wire/wire_test.go) and on TestLayout's bytes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decodeHeader, decodeTables, decodeReply, KIND_TABLES, KIND_REPLY, MARKER_LOST, MARKER_TRUNCATION } from '../static/js/wire.js';

/** @param {string} name */
function golden(name) {
  const b = readFileSync(new URL(`../../render/wire/testdata/${name}`, import.meta.url));
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength); // own ArrayBuffer, offset 0
}

/** @param {number[]} bytes */
function buf(bytes) {
  return new Uint8Array(bytes).buffer;
}

test('frame0.frame: tables header', () => {
  assert.deepEqual(decodeHeader(golden('frame0.frame')), { kind: KIND_TABLES, seq: 0, length: 168 - 16 });
});

test('frame0.frame: type names and tracks', () => {
  const t = decodeTables(golden('frame0.frame'));
  assert.deepEqual(t.types, ['Microsoft-Windows-DotNETRuntime/GCStart', 'sched_switch', '#7']);
  assert.deepEqual(t.tracks, [
    { id: 0, parent: -1, name: 'dotnet (1234)' },
    { id: 1, parent: 0, name: 'thread 1240' },
    { id: -1, parent: -1, name: '(no track)' },
  ]);
});

test('frame1.frame: reply header', () => {
  assert.deepEqual(decodeHeader(golden('frame1.frame')), { kind: KIND_REPLY, seq: 7, length: 152 - 16 });
});

test('frame1.frame: events, aggregates and markers', () => {
  const start = 1n << 40n;
  const q = { start, end: start + 2_048_000n, width: 2000 };
  const { frame, micros, markers } = decodeReply(golden('frame1.frame'), q);
  assert.equal(micros, 350);
  assert.equal(frame.base, start);
  assert.equal(frame.end, q.end);
  assert.equal(frame.nsPerPx, 1024);
  assert.deepEqual([...frame.tracks.keys()], [1, -1]);

  // Track 1: x [0, 17.25, 18], count [40, 1, 3], first [0, 40, 41], type [0, 2, 1], res 1024.
  const s = frame.tracks.get(1);
  assert.ok(s);
  assert.equal(s.n, 1); // the one item of count 1 is an individual event
  assert.deepEqual([...s.off], [17.25 * 1024]);
  assert.deepEqual([...s.type], [2]);
  assert.deepEqual([...s.first], [40]);
  assert.equal(s.an, 2);
  assert.deepEqual([...s.aoff], [0, 18 * 1024]);
  assert.deepEqual([...s.adur], [1024, 1024]);
  assert.deepEqual([...s.count], [40, 3]);
  assert.deepEqual([...s.atype], [0, 1]);
  assert.deepEqual([...s.afirst], [0, 41]);

  const none = frame.tracks.get(-1);
  assert.ok(none);
  assert.equal(none.n + none.an, 0);

  assert.deepEqual(markers, [
    { x: 3.5, kind: MARKER_LOST, track: 1, count: 2, lost: 12 },
    { x: 1999.75, kind: MARKER_TRUNCATION, track: -1, count: 1, lost: 0 },
  ]);
});

// TestLayout's bytes: a negative start and a type of -1.
const layout = [
  0x56, 0x57, 1, 2, 4, 3, 2, 1, 76, 0, 0, 0, 0, 0, 0, 0,
  0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
  8, 0, 0, 0, 0, 0, 0, 0,
  3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
  4, 0, 0, 0, 1, 0, 0, 0,
  0, 0, 0xc0, 0x3f, 1, 0, 0, 0, 9, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
  0, 0, 0, 0x40, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0,
];

test('TestLayout bytes: negative start, type -1', () => {
  const b = buf(layout);
  assert.deepEqual(decodeHeader(b), { kind: KIND_REPLY, seq: 0x01020304, length: 76 });
  const { frame, micros, markers } = decodeReply(b, { start: -5n, end: 19n, width: 3 });
  assert.equal(frame.base, -5n);
  assert.equal(frame.nsPerPx, 8);
  assert.equal(micros, 2);
  const s = frame.tracks.get(4);
  assert.ok(s);
  assert.equal(s.n, 1);
  assert.equal(s.off[0], 12); // 1.5 buckets of 8 ns
  assert.equal(s.type[0], -1);
  assert.equal(s.first[0], 9);
  assert.deepEqual(markers, [{ x: 2, kind: 1, track: 4, count: 1, lost: 10 }]);
});

test('damaged frames throw', () => {
  const good = layout;
  /** @type {Record<string, number[]>} */
  const bad = {
    short: good.slice(0, 10),
    magic: [0x58, ...good.slice(1)],
    version: [0x56, 0x57, 9, ...good.slice(3)],
    length: good.slice(0, good.length - 4), // header says 76 body bytes
  };
  for (const [name, bytes] of Object.entries(bad)) {
    assert.throws(() => decodeHeader(buf(bytes)), /wire:/, name);
  }
  // Body cut short with a header that agrees: the markers do not fit.
  const cut = good.slice(0, good.length - 4);
  cut[8] = 72;
  assert.throws(() => decodeReply(buf(cut), { start: 0n, end: 1n, width: 1 }), /wire: 1 markers do not fit/);
  // Cut inside the track block: its columns do not fit.
  const cut2 = good.slice(0, 16 + 32 + 8 + 8);
  cut2[8] = 48;
  assert.throws(() => decodeReply(buf(cut2), { start: 0n, end: 1n, width: 1 }), /wire: (1 items do not fit|frame too short)/);
  // Trailing bytes after the reply.
  const long = [...good, 0, 0, 0, 0];
  long[8] = 80;
  assert.throws(() => decodeReply(buf(long), { start: 0n, end: 1n, width: 1 }), /trailing bytes/);
  // A huge item count is refused before any column is read.
  const huge = [...good];
  huge[16 + 32 + 4 + 3] = 0x40; // n = 1 << 30
  assert.throws(() => decodeReply(buf(huge), { start: 0n, end: 1n, width: 1 }), /do not fit/);
  // A bucket width of 0.
  const res0 = [...good];
  res0[24] = 0;
  assert.throws(() => decodeReply(buf(res0), { start: 0n, end: 1n, width: 1 }), /bucket width/);
});

test('tables with a track-name count that disagrees throw', () => {
  const b = golden('frame0.frame');
  // The track count follows the type names: header 16, count 4, lengths
  // 3×4, 53 bytes of names padded to 56.
  const v = new DataView(b);
  const at = 16 + 4 + 12 + 56;
  assert.equal(v.getUint32(at, true), 3);
  v.setUint32(at, 2, true);
  assert.throws(() => decodeTables(b), /wire: /);
});
