// A shared URL's range survives the page exactly: parse → Model.apply (any
// plot width) → Model.state → format gives back the same s and e, also
// across a resize, pans and after the clamp, for absolute times past 2^53
// (issue #18: "a shared URL sometimes reopens with its end 1 ns off").

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Model } from '../static/js/model.js';
import { formatState, parseState } from '../static/js/urlstate.js';
import { Viewport } from '../static/js/viewport.js';
import { clampView, centreOn } from '../static/js/navigate.js';

const BIG = 1_700_000_000_123_456_789n; // Unix-epoch ns, far past 2^53

/** @param {bigint} first @param {bigint} last @returns {import('../static/js/source.js').Meta} */
function meta(first, last) {
  return {
    name: 't', format: 'fake', first, last, events: 1,
    tracks: [{ id: 0, name: 'main', kind: 'thread', events: 1 }],
    types: [{ id: 0, provider: 'P', name: 'A', code: 1 }],
    lost: [], truncatedAt: null, error: '',
  };
}

/** Ranges [start, end) of the corpus, with the trace they belong to. */
function corpus() {
  /** @type {[bigint, bigint, bigint, bigint][]} first, last, start, end */
  const out = [];
  const spans = [1n, 2n, 3n, 7n, 10n, 33n, 100n, 999n, 1001n, 12_345n, 1_000_003n, 127_360_001n, 342_756_072_680n, 9_007_199_254_740_993n];
  for (const base of [0n, 1n, 1n << 53n, BIG, 342_756_072_680n, -5_000_000n]) {
    for (const span of spans) {
      for (const off of [0n, 1n, 7n, 123_456_789n]) {
        const start = base + off;
        out.push([base, base + span * 2n + 1_000_000n, start, start + span]);
      }
    }
  }
  // A pseudo-random tail, seeded.
  let x = 0x2545f4914f6cdd1dn;
  const next = () => (x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n));
  for (let i = 0; i < 400; i++) {
    const start = BIG + (next() % (1n << 40n));
    const span = 1n + (next() % (1n << BigInt(1 + Number(next() % 45n))));
    out.push([BIG, start + span * 2n, start, start + span]);
  }
  return out;
}

const WIDTHS = [1, 3, 7, 100, 799, 1000, 1234, 1920, 2555, 3840];

test('URL range round trip: exact at every width, through apply, state and format', () => {
  let n = 0;
  for (const [first, last, start, end] of corpus()) {
    const q = `?v=1&s=${start}&e=${end}`;
    for (const w of WIDTHS) {
      const m = new Model();
      m.setMeta(meta(first, last));
      m.apply(parseState(q), w);
      if (Number(end - start) / w < 0.05) continue; // past the zoom limit: the view widens
      const st = m.state();
      assert.equal(st.end - st.start, end - start, `${q} at ${w} px`);
      assert.equal(formatState(st), q.slice(1), `${q} at ${w} px`);
      // A resize (another window, the details panel folding) keeps it.
      for (const w2 of [w + 1, Math.max(1, w - 13), 1577]) {
        const r = m.vp.resize(w2);
        if (Number(end - start) / w2 < 0.05) continue;
        assert.equal(r.start, start);
        assert.equal(r.end, end, `${q} resized ${w} → ${w2}`);
      }
      // Pans and centring keep the span.
      const p = m.vp.pan(37.3).pan(-1000);
      assert.equal(p.end - p.start, end - start);
      const c = clampView(centreOn(m.vp, start + 5n), m.trace);
      if (c.nsPerPx === m.vp.nsPerPx) assert.equal(c.end - c.start, end - start);
      n++;
    }
  }
  assert.ok(n > 5000, `${n} cases`);
});

test('the float trap the fix is for', () => {
  // 7 ns over 100 px: 7/100*100 is 7.000000000000001 in floating point.
  assert.ok((7 / 100) * 100 > 7);
  assert.equal(Viewport.fromRange(BIG, BIG + 7n, 100).end, BIG + 7n);
  assert.equal(Viewport.fromRange(BIG, BIG + 127_360_001n, 1234).resize(999).end, BIG + 127_360_001n);
});

test('a combined view\'s traces and offsets round-trip; zero offsets are left out', async () => {
  const { parseState, formatState } = await import('../static/js/urlstate.js');
  const a = '3f2504e0-4f89-41d3-9a0c-0305e82c3301', b = '9a8b7c6d-0000-4000-8000-000000000001';
  const st = parseState(`?v=1&t=${a},${b}&off=1:-1500000`);
  assert.deepEqual(st.traces, [a, b]);
  assert.deepEqual(st.offsets, [{ trace: 1, ns: -1500000n }]);
  assert.equal(formatState(st), `v=1&t=${a},${b}&off=1:-1500000`);
  st.offsets = [{ trace: 0, ns: 0n }, { trace: 1, ns: 7n }];
  assert.equal(formatState(st), `v=1&t=${a},${b}&off=1:7`);
});
