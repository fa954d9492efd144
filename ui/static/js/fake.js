// @ts-check
// FakeSource generates a trace in the browser and answers viewport, details
// and search requests from it the way the server does (individual events
// where they fit, per-pixel aggregates elsewhere). It exists so the renderer
// and navigation can be developed and tested without a server; its times
// start past 2^53 ns to exercise the BigInt paths.

'use strict';

import { emptySlice, eventID } from './source.js';
import { aggregate } from './stacktree.js';
import { decodeTransforms, encodeTransforms } from './stacktf.js';

/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').TrackSlice} TrackSlice */

const BASE = 9_007_199_254_740_993n; // 2^53 + 1

const TYPES = [
  ['Microsoft-Windows-DotNETRuntime', 'GCStart', 1],
  ['Microsoft-Windows-DotNETRuntime', 'GCEnd', 2],
  ['Microsoft-Windows-DotNETRuntime', 'ThreadPoolWorkerThreadStart', 50],
  ['Microsoft-Windows-DotNETRuntime', 'ExceptionThrown', 80],
  ['Microsoft-Windows-DotNETRuntime', 'MethodJittingStarted', 145],
  ['System.Threading.Tasks.TplEventSource', 'TaskScheduled', 7],
  ['System.Threading.Tasks.TplEventSource', 'TaskCompleted', 8],
  ['vpp', 'ip4-input', 100],
  ['vpp', 'ip4-lookup', 101],
  ['vpp', 'ethernet-input', 102],
  ['vpp', '', 103],
  ['vpp', 'dispatch <node>', 104],
  ['Microsoft-DotNETCore-SampleProfiler', 'Thread/Sample', 0],
];

/** The types the generator draws from (the last, SAMPLE, is placed apart). */
const DRAWN = TYPES.length - 1;
/** Every third event from the third on is a sample that carries a stack. */
const SAMPLE = TYPES.length - 1;
/** The sampling interval (the `time` weight), ns. */
const SAMPLE_NS = 1_000_000;

/**
 * The fake's call graph: each frame's callees; a stack walks it from Main,
 * stopping at a frame without callees or by chance. Names hold <, >, &
 * and quotes to check that they reach the page as text.
 * @type {Record<string, string[]>}
 */
const CALLS = {
  'app!Program.Main': ['app!Server.HandleRequest', 'app!Server.HandleRequest', 'app!Worker.Run', 'System.Private.CoreLib!System.Threading.ThreadPoolWorkQueue.Dispatch'],
  'app!Server.HandleRequest': ['app!Parser.ParseExpr', 'app!Json.Serialize', 'app!List<T>.Add(T&)'],
  'app!Worker.Run': ['app!Worker.Compute', 'coreclr!GCHeap::Alloc', 'app!Json.Serialize'],
  'app!Worker.Compute': ['app!Worker.Compute', 'app!Math.Sqrt', 'app!Math.Sqrt'],
  'app!Parser.ParseExpr': ['app!Parser.ParseExpr', 'app!Parser.ParseExpr', 'app!Lexer.Next', 'coreclr!GCHeap::Alloc'],
  'app!Json.Serialize': ['app!Json.WriteString("x")', 'coreclr!GCHeap::Alloc'],
  'app!List<T>.Add(T&)': ['coreclr!GCHeap::Alloc'],
  'coreclr!GCHeap::Alloc': ['coreclr!WKS::gc_heap::allocate_more_space', 'coreclr!WKS::gc_heap::garbage_collect'],
  'System.Private.CoreLib!System.Threading.ThreadPoolWorkQueue.Dispatch': ['app!Worker.Run', 'System.Private.CoreLib!System.Threading.Tasks.Task.ExecuteEntry'],
  'System.Private.CoreLib!System.Threading.Tasks.Task.ExecuteEntry': ['app!Server.HandleRequest'],
};

/** The stack of a sample, root first; deterministic in (track, index). @param {number} k @param {number} i */
export function fakeStack(k, i) {
  const r = rng((k * 7919 + i * 104729) ^ 0x5bd1e995);
  let f = 'app!Program.Main';
  const s = [f];
  while (s.length < 24) {
    const c = CALLS[f];
    if (!c || (s.length > 2 && r() < 0.18)) break;
    f = c[Math.floor(r() * c.length)];
    s.push(f);
  }
  return s;
}

/** Deterministic PRNG (mulberry32). @param {number} seed */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Track k's name: mostly short, some with markup-like characters, and one
 * longer than any name column (for the full-name tooltip).
 * @param {number} k
 */
function trackName(k) {
  if (k === 2) return 'System.Threading.ThreadPoolWorkQueue.Dispatch worker for the request pipeline of the order service (tenant 42)';
  return k % 7 === 3 ? `worker <${k}> & "quoted"` : `thread ${1000 + k}`;
}

/** First index with a[i] >= x. @param {Float64Array} a @param {number} x @param {number} lo @param {number} hi */
function lowerBound(a, x, lo, hi) {
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (a[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/** @implements {Source} */
export class FakeSource {
  /**
   * @param {{tracks?: number, events?: number, span?: number, seed?: number}} [opt]
   * tracks, events per track (mean), span in ns.
   */
  constructor(opt = {}) {
    this.nTracks = opt.tracks ?? 40;
    this.perTrack = opt.events ?? 4000;
    this.spanNs = opt.span ?? 2e9;
    this.seed = opt.seed ?? 1;
    /** @type {{t: Float64Array, type: Int32Array}[]} */
    this.data = [];
    /** @type {Meta | null} */
    this.meta = null;
  }

  /** @param {(p: import('./progress.js').Progress) => void} onProgress */
  async open(onProgress) {
    const r = rng(this.seed);
    for (let k = 0; k < this.nTracks; k++) {
      const n = Math.max(1, Math.round(this.perTrack * (0.2 + 1.6 * r())));
      const t = new Float64Array(n);
      const type = new Int32Array(n);
      // Bursts: a random walk whose step alternates between dense and sparse.
      const mean = this.spanNs / n;
      let x = Math.floor(r() * mean);
      for (let i = 0; i < n; i++) {
        t[i] = Math.min(this.spanNs, x);
        type[i] = i % 3 === 2 ? SAMPLE : (k + Math.floor(r() * r() * DRAWN)) % DRAWN;
        const dense = Math.floor(i / 200) % 3 === 0;
        x += 1 + Math.floor(r() * mean * (dense ? 0.1 : 2.9));
      }
      this.data.push({ t, type });
      onProgress({ state: 'generating', percent: (100 * k) / this.nTracks, events: k * this.perTrack });
      if (k % 8 === 7) await new Promise((r) => setTimeout(r, 0));
    }
    let events = 0;
    for (const d of this.data) events += d.t.length;
    /** @type {Meta} */
    const meta = {
      name: 'fake.trace',
      format: 'fake',
      first: BASE,
      last: BASE + BigInt(this.spanNs),
      events,
      tracks: this.data.map((_, k) => ({
        id: k,
        name: trackName(k),
        kind: 'thread',
        events: this.data[k].t.length,
        pid: 100,
        tid: 1000 + k,
        // Track 1 exec'd twice, as a perf thread keeps its earlier comms.
        ...(k === 1 ? { names: ['launcher', 'sh'] } : {}),
      })),
      types: TYPES.map(([provider, name, code], id) => ({ id, provider: String(provider), name: String(name), code: Number(code) })),
      lost: [{ time: BASE + BigInt(Math.round(this.spanNs * 0.37)), track: 2, count: 17 }],
      truncatedAt: BASE + BigInt(this.spanNs),
      error: '',
    };
    this.meta = meta;
    return meta;
  }

  /** @param {import('./source.js').ViewRequest} q */
  async view(q) {
    return this.viewSync(q);
  }

  /**
   * The viewport answer, computed synchronously (the benchmark uses it).
   * @param {import('./source.js').ViewRequest} q
   */
  viewSync(q) {
    const hidden = new Set(q.hidden);
    const off0 = Number(q.start - BASE);
    const span = Number(q.end - q.start);
    const width = Math.max(1, q.width);
    const ns = span / width;
    /** @type {Map<number, TrackSlice>} */
    const tracks = new Map();
    for (const id of q.tracks) {
      const d = this.data[id];
      if (!d) continue;
      const lo = lowerBound(d.t, off0, 0, d.t.length);
      const hi = lowerBound(d.t, off0 + span, lo, d.t.length);
      const s = emptySlice();
      const ev = { off: [], type: [], first: [] };
      const ag = { off: [], dur: [], count: [], type: [], first: [] };
      // Buckets of 1 px: a bucket holding one event yields the event, a
      // bucket holding more yields an aggregate.
      let i = lo;
      while (i < hi) {
        if (hidden.has(d.type[i])) {
          i++;
          continue;
        }
        const b = Math.floor((d.t[i] - off0) / ns);
        const bEnd = off0 + (b + 1) * ns;
        let j = lowerBound(d.t, bEnd, i + 1, hi);
        let c = 0;
        for (let k = i; k < j && c < 2; k++) if (!hidden.has(d.type[k])) c++;
        if (c === 1) {
          ev.off.push(d.t[i] - off0);
          ev.type.push(d.type[i]);
          ev.first.push(i);
        } else {
          let cnt = 0;
          for (let k = i; k < j; k++) if (!hidden.has(d.type[k])) cnt++;
          ag.off.push(b * ns);
          ag.dur.push(ns);
          ag.count.push(cnt);
          ag.type.push(d.type[i]);
          ag.first.push(i);
        }
        i = j;
      }
      s.n = ev.off.length;
      s.off = Float64Array.from(ev.off);
      s.type = Int32Array.from(ev.type);
      s.first = Uint32Array.from(ev.first);
      s.an = ag.off.length;
      s.aoff = Float64Array.from(ag.off);
      s.adur = Float64Array.from(ag.dur);
      s.count = Uint32Array.from(ag.count);
      s.atype = Int32Array.from(ag.type);
      s.afirst = Uint32Array.from(ag.first);
      tracks.set(id, s);
    }
    return { seq: 0, base: q.start, end: q.end, nsPerPx: ns, tracks };
  }

  /** @param {string} ref */
  async details(ref) {
    const m = /^(-?\d+):(\d+)$/.exec(ref);
    const track = m ? Number(m[1]) : -1;
    const i = m ? Number(m[2]) : -1;
    const d = this.data[track];
    if (!d || i < 0 || i >= d.t.length) throw new Error(`no event ${ref}`);
    const type = d.type[i];
    const datum = (i * 2654435761) >>> 0;
    const name = TYPES[type][1] || `[${TYPES[type][2]}]`;
    const raw = new Uint8Array(12);
    new DataView(raw.buffer).setUint32(0, datum, true);
    new DataView(raw.buffer).setUint32(4, i, true);
    new DataView(raw.buffer).setUint32(8, type, true);
    return {
      ref,
      time: BASE + BigInt(d.t[i]),
      track,
      type,
      label: `${name}: datum ${datum}`,
      fields: [
        { name: 'datum', value: datum },
        { name: 'index', value: i },
        { name: 'note', value: '<b>not html</b>' },
        { name: 'payload', value: [{ name: 'a', value: 1 }, { name: 'b', value: 'two' }] },
        { name: 'list', value: [1, 2, 3] },
      ],
      stack: ['coreclr!GCHeap::Alloc', 'System.Private.CoreLib!System.Threading.Tasks.Task.Run', '0x7f00deadbeef'],
      labels: [{ key: 'ActivityId', value: '00000001-0000-0000-0000-00000000000' + (track % 10) }],
      raw,
    };
  }

  /**
   * The fake's version of PROTOCOL.md §5 queries: `#code`, `id:code`,
   * `provider/name` or `name` substrings, and `field OP value` on the
   * numeric fields `datum` and `index`; terms joined by && must all hold.
   * It stands in for the server (package render/query, the one real reader
   * of queries) on dev.html's generated trace; the page itself never
   * parses a query.
   * @param {string} query @returns {(track: number, i: number) => boolean}
   */
  matcher(query) {
    /** @type {((k: number, i: number) => boolean)[]} */
    const terms = [];
    const toks = query.split('&&').map((t) => t.trim()).filter((t) => t);
    for (const tok of toks) {
      const m = /^(\w+)\s*(==|!=|>=|<=|>|<|=|~)\s*(\S+)$/.exec(tok);
      if (m) {
        const [, field, op, val] = m;
        const v = Number(val);
        const get = (/** @type {number} */ k, /** @type {number} */ i) =>
          field === 'datum' ? (i * 2654435761) >>> 0 : field === 'index' ? i : NaN;
        /** @type {Record<string, (a: number) => boolean>} */
        const ops = {
          '=': (a) => a === v, '==': (a) => a === v, '!=': (a) => a !== v, '>': (a) => a > v,
          '<': (a) => a < v, '>=': (a) => a >= v, '<=': (a) => a <= v, '~': (a) => String(a).includes(val),
        };
        const f = ops[op];
        terms.push((k, i) => f(get(k, i)));
        continue;
      }
      const code = /^(?:#|id:)(\d+)$/.exec(tok);
      if (code) {
        const c = Number(code[1]);
        terms.push((k, i) => TYPES[this.data[k].type[i]][2] === c);
        continue;
      }
      const lower = tok.toLowerCase();
      const names = TYPES.map(([p, n]) => `${p}/${n}`.toLowerCase());
      terms.push((k, i) => names[this.data[k].type[i]].includes(lower));
    }
    return (k, i) => terms.length > 0 && terms.every((t) => t(k, i));
  }

  /** @param {string} query */
  async search(query) {
    const ok = this.matcher(query);
    /** @type {{t: number, track: number, i: number}[]} */
    const all = [];
    this.data.forEach((d, k) => {
      for (let i = 0; i < d.t.length; i++) if (ok(k, i)) all.push({ t: d.t[i], track: k, i });
    });
    all.sort((a, b) => a.t - b.t || a.track - b.track);
    const hits = all.slice(0, 10000).map((h) => ({ ref: eventID(h.track, h.i), time: BASE + BigInt(h.t), track: h.track }));
    return { hits, total: all.length, more: all.length > hits.length };
  }

  /**
   * The hits of a query over the whole trace in n equal time bins, as the
   * server counts them (PROTOCOL.md §3, `bins=N`).
   * @param {string} query @param {number} n
   */
  async searchBins(query, n) {
    const ok = this.matcher(query);
    const meta = /** @type {Meta} */ (this.meta);
    const counts = new Array(Math.max(1, n)).fill(0);
    const len = Number(meta.last - meta.first) + 1;
    this.data.forEach((d, k) => {
      for (let i = 0; i < d.t.length; i++) {
        if (ok(k, i)) counts[Math.min(counts.length - 1, Math.floor((d.t[i] * counts.length) / len))]++;
      }
    });
    return { from: meta.first, to: meta.last, counts, complete: true };
  }

  // ---- stacks (the server's /stacks endpoints, PROTOCOL.md) ------------

  /** Event types carrying stacks: the samples (the server's reply, PROTOCOL.md). */
  async stackEvents() {
    let n = 0;
    for (const d of this.data) for (let i = 0; i < d.t.length; i++) if (d.type[i] === SAMPLE) n++;
    return { events: [{ event: 'Thread/Sample', provider: 'Microsoft-DotNETCore-SampleProfiler', type: SAMPLE, count: n }], default: 'Thread/Sample' };
  }

  /**
   * The samples a query covers, in time order, with their stacks and weights.
   * @param {import('./source.js').StackQuery} q
   */
  stackSamplesOf(q) {
    if (q.event && q.event !== 'Thread/Sample') throw new Error(`no stacks on event ${q.event}`);
    const w = q.weight || 'count';
    if (!/^(count|time|field:(index|datum))$/.test(w)) throw new Error(`bad weight ${w}`);
    const lo = q.from !== null && q.to !== null ? Number(q.from - BASE) : -Infinity;
    const hi = q.from !== null && q.to !== null ? Number(q.to - BASE) : Infinity;
    const tracks = q.tracks ?? this.data.map((_, k) => k);
    /** @type {{stack: string[], weight: number, t: number, track: number, i: number}[]} */
    const out = [];
    for (const k of tracks) {
      const d = this.data[k];
      if (!d) continue;
      for (let i = lowerBound(d.t, lo, 0, d.t.length); i < d.t.length && d.t[i] < hi; i++) {
        if (d.type[i] !== SAMPLE) continue;
        const weight = w === 'count' ? 1 : w === 'time' ? SAMPLE_NS : w === 'field:index' ? i : (i * 2654435761) >>> 0;
        out.push({ stack: fakeStack(k, i), weight, t: d.t[i], track: k, i });
      }
    }
    out.sort((a, b) => a.t - b.t || a.track - b.track || a.i - b.i);
    return out;
  }

  /** @param {import('./source.js').StackQuery} q */
  async stacks(q) {
    const w = q.weight || 'count';
    const unit = w === 'count' ? 'samples' : w === 'time' ? 'ns' : w.slice(6);
    return aggregate(this.stackSamplesOf(q), { view: q.view, tf: fakeTF(q.tf), width: q.width, unit }).json;
  }

  /** @param {import('./source.js').StackQuery} q @param {number} node */
  async stackSamples(q, node) {
    const smp = this.stackSamplesOf(q);
    const { json, leaf } = aggregate(smp, { view: q.view, tf: fakeTF(q.tf), width: q.width });
    if (!(node >= 0 && node < json.nodes.length)) throw new Error(`no node ${node}`);
    // Preorder: node's subtree is the nodes up to the next one not below it.
    let end = node + 1;
    const depth = (/** @type {number} */ x) => { let n = 0; for (; x > 0; x = json.nodes[x][0]) n++; return n; };
    const dn = depth(node);
    while (end < json.nodes.length && depth(end) > dn) end++;
    const all = smp.filter((_, k) => leaf[k] >= node && leaf[k] < end);
    const hits = all.slice(0, 10000).map((h) => ({ ref: eventID(h.track, h.i), time: BASE + BigInt(h.t), track: h.track }));
    return { hits, total: all.length, more: all.length > hits.length };
  }
}

/** A tf list, refused as the server refuses one that does not parse. @param {string} tf */
function fakeTF(tf) {
  const list = decodeTransforms(tf);
  if (encodeTransforms(list) !== tf) throw new Error(`tf: ${JSON.stringify(tf)} is not a list of transforms`);
  return list;
}
