// @ts-check
// WsSource: the server as a data source (web/PROTOCOL.md). Viewports go over
// the tab's websocket and come back as binary frames (decoded by wire.js);
// metadata, event details and search use the JSON API. Times arrive as
// decimal strings and become BigInt here, so nothing above this module sees
// a JSON number that could have lost precision.

'use strict';

import { decodeHeader, decodeReply, decodeTables, KIND_REPLY, KIND_TABLES } from './wire.js';
import { VIEWPORT_LIMITS } from './urlspec.js';
import { stackParams } from './source.js';
import { progressOf } from './progress.js';
import { parseSpans } from './spans.js';
import { liveOf } from './livestate.js';

/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./source.js').Details} Details */

/** How long a viewport request may wait for its reply. */
const VIEW_TIMEOUT_MS = 15000;

/** Converts a decimal-string (or number) time to BigInt. @param {unknown} v */
export function big(v) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return BigInt(v);
  throw new Error(`not a time: ${String(v)}`);
}

/** How long a request keeps retrying while the server answers 503 (a reopened index still reading its trace). */
const RETRY_FOR_MS = 120000;

/**
 * Fetches url like fetch, but while the server answers 503 with a
 * Retry-After (web/PROTOCOL.md: details of a reopened trace before its
 * reader pass ends) waits that long (1–5 s) and asks again.
 * @param {string} url
 * @param {RequestInit} [init]
 */
export async function fetchReady(url, init) {
  const until = Date.now() + RETRY_FOR_MS;
  for (;;) {
    const r = await fetch(url, init);
    const after = Number(r.headers.get('Retry-After') ?? NaN);
    if (r.status !== 503 || !Number.isFinite(after) || Date.now() > until) return r;
    const ms = Math.min(5, Math.max(1, after)) * 1000;
    await new Promise((resolve, reject) => {
      const t = setTimeout(resolve, ms);
      init?.signal?.addEventListener('abort', () => { clearTimeout(t); reject(init.signal?.reason); }, { once: true });
    });
  }
}

/** @param {Response} r */
async function jsonOrError(r) {
  const text = await r.text();
  if (!r.ok) {
    let msg = `${r.status} ${r.statusText}`;
    try {
      const j = JSON.parse(text);
      if (j && typeof j.error === 'string') msg = j.error;
    } catch {
      // not JSON: keep the status line
    }
    throw new Error(msg);
  }
  return { text, json: JSON.parse(text) };
}

/** @implements {Source} */
export class WsSource {
  /** @param {any} page the viewer page data */
  constructor(page) {
    this.page = page;
    this.info = page.trace ?? {};
    this.id = String(this.info.id ?? '');
    this.wsPath = String(page.ws ?? this.api(`ws`));
    /** @type {WebSocket | null} */
    this.ws = null;
    this.seq = 0;
    /** @type {Map<number, {resolve: (f: Frame) => void, reject: (e: Error) => void, q: import('./source.js').ViewRequest}>} */
    this.waiting = new Map();
    /** @type {Meta | null} */
    this.meta = null;
    /** Called when the socket closes after the trace was open. @type {(why: string) => void} */
    this.onClose = () => {};
    this.serverMicros = 0;
    /** @type {import('./wire.js').Tables | null} */
    this.tables = null;
    /**
     * The chase request (PROTOCOL.md §live): frames the server pushes for
     * its seq after the first reply go to onChase. @type {{seq: number, q: import('./source.js').ViewRequest} | null}
     */
    this.chase = null;
    /** Called with each `live` message (the first ones may come before open resolves). @type {(m: import('./livestate.js').LiveMsg) => void} */
    this.onLive = () => {};
    /** Called with each pushed chase frame, its range moved to the trace's end. @type {(f: Frame) => void} */
    this.onChase = () => {};
    /** The newest `live` message, for a controller that starts after it came. @type {import('./livestate.js').LiveMsg | null} */
    this.lastLive = null;
  }

  /**
   * The URL of one of the trace's JSON endpoints: path is what follows
   * /api/traces/{id}/, with its query if any (a combined view's source
   * answers elsewhere: together.js).
   * @param {string} path
   */
  api(path) {
    return `/api/traces/${this.id}/${path}`;
  }

  /** Fields a viewport request carries besides the view (a combined view's offsets). @returns {object} */
  viewFields() {
    return {};
  }

  /** @param {(p: import('./progress.js').Progress) => void} onProgress */
  open(onProgress) {
    return new Promise((resolve, reject) => {
      const url = new URL(this.wsPath, location.href);
      url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const ws = new WebSocket(url);
      ws.binaryType = 'arraybuffer';
      this.ws = ws;
      let opened = false;
      ws.onmessage = (e) => {
        if (e.data instanceof ArrayBuffer) {
          this.onBinary(e.data);
          return;
        }
        let m;
        try {
          m = JSON.parse(String(e.data));
        } catch {
          return;
        }
        switch (m.type) {
          case 'progress':
            onProgress(progressOf(m));
            break;
          case 'ready':
            if (!opened) {
              opened = true;
              this.loadMeta().then(resolve, reject);
            }
            break;
          case 'live': {
            const l = liveOf(m);
            if (l) {
              this.lastLive = l;
              this.onLive(l);
            }
            break;
          }
          case 'failed':
            reject(new Error(`This trace could not be read: ${m.error ?? 'unknown error'}`));
            break;
          case 'error': {
            const w = this.waiting.get(m.seq);
            if (w) {
              this.waiting.delete(m.seq);
              w.reject(new Error(String(m.error)));
            }
            break;
          }
          default: // unknown message types are ignored (PROTOCOL.md: version 1 may grow)
        }
      };
      ws.onclose = (e) => {
        const why = `connection to the server closed (${e.code}${e.reason ? ': ' + e.reason : ''})`;
        for (const w of this.waiting.values()) w.reject(new Error(why));
        this.waiting.clear();
        if (!opened) reject(new Error(why));
        else this.onClose(why);
      };
    });
  }

  async loadMeta() {
    const { text, json: j } = await fetchReady(this.api(`meta`)).then(jsonOrError);
    void text;
    const st = this.info.stats ?? {};
    /** @type {Meta} */
    const meta = {
      name: String(this.info.name ?? this.id),
      format: String(j.format ?? this.info.format ?? ''),
      first: big(j.first),
      last: big(j.last),
      events: Number(st.events ?? 0),
      tracks: (j.tracks ?? []).map((/** @type {any} */ t) => ({
        id: Number(t.id),
        name: String(t.name || `${t.kind} ${t.tid >= 0 ? t.tid : t.cpu >= 0 ? t.cpu : t.id}`),
        kind: String(t.kind),
        events: typeof t.events === 'number' ? t.events : undefined,
        names: Array.isArray(t.names) ? t.names.map(String) : undefined,
        pid: typeof t.pid === 'number' ? t.pid : undefined,
        tid: typeof t.tid === 'number' ? t.tid : undefined,
        parent: typeof t.parent === 'number' ? t.parent : undefined,
        trace: typeof t.trace === 'number' ? t.trace : undefined,
      })),
      types: (j.types ?? []).map((/** @type {any} */ t) => ({ id: Number(t.id), provider: String(t.provider ?? ''), name: String(t.name ?? ''), code: Number(t.code ?? 0) })),
      lost: (j.lost ?? []).map((/** @type {any} */ g) => ({ time: big(g.time), track: Number(g.track ?? -1), count: Number(g.count ?? 0) })),
      truncatedAt: j.truncated_at == null ? null : big(j.truncated_at),
      wall: typeof j.wall === 'string' ? j.wall : '',
      error: String(j.error || st.error || (j.truncated_at != null ? 'the file is cut short' : '')),
    };
    if (!meta.events) for (const t of j.tracks ?? []) meta.events += Number(t.events ?? 0);
    /** The meta reply as it came, for what a subclass reads beyond Meta. */
    this.metaJSON = j;
    this.meta = meta;
    return meta;
  }

  /** @param {import('./source.js').ViewRequest} want */
  view(want) {
    const q = fitViewport(want);
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    this.seq = (this.seq + 1) >>> 0;
    const seq = this.seq;
    // Any request ends the server's chase; a chase request starts a new one.
    this.chase = want.chase ? { seq, q } : null;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject, q });
      // A reply that never comes (a request the server could not parse)
      // must not stall the queue behind it.
      setTimeout(() => {
        const w = this.waiting.get(seq);
        if (w) {
          this.waiting.delete(seq);
          w.reject(new Error(`no reply to viewport request ${seq}`));
        }
      }, VIEW_TIMEOUT_MS);
      ws.send(JSON.stringify({
        type: 'viewport', seq, start: String(q.start), end: String(q.end), width: q.width,
        tracks: q.tracks, types: q.hidden, mode: q.mode ?? 'event', chase: !!q.chase, ...this.viewFields(),
      }));
    });
  }

  /**
   * The timeline filter's matching events per track (GET /filter).
   * @param {string} query
   * @returns {Promise<import('./filter.js').FilterCounts>}
   */
  async filterCounts(query) {
    const { json: j } = await fetchReady(this.api(`filter?q=${encodeURIComponent(query)}`)).then(jsonOrError);
    /** @type {Map<number, number>} */
    const tracks = new Map();
    for (const t of Array.isArray(j.tracks) ? j.tracks : []) tracks.set(Number(t.track), Number(t.count));
    return { total: Number(j.total ?? 0), tracks, complete: !!j.complete, notice: String(j.notice ?? '') };
  }

  /**
   * A viewport of only the filter's events (GET /filter/viewport, a wire
   * reply frame).
   * @param {string} query @param {import('./source.js').ViewRequest} want
   * @param {AbortSignal} [signal]
   * @returns {Promise<Frame>}
   */
  async filterView(query, want, signal) {
    const q = fitViewport(want);
    const p = new URLSearchParams({ q: query, start: String(q.start), end: String(q.end), width: String(q.width), tracks: q.tracks.join(',') });
    const r = await fetchReady(this.api(`filter/viewport?${p}`), { signal });
    if (!r.ok) await jsonOrError(r);
    const frame = decodeReply(await r.arrayBuffer(), q).frame;
    return frame;
  }

  /**
   * An area selection's counts, optionally with a field's histogram
   * (GET /counts); the reply as the server sends it.
   * @param {URLSearchParams} params
   * @returns {Promise<any>}
   */
  async counts(params) {
    const { json } = await fetchReady(this.api(`counts?${params}`)).then(jsonOrError);
    return json;
  }

  /**
   * A page of an events table (GET /table); the reply as the server sends it.
   * @param {URLSearchParams} params @param {AbortSignal} [signal]
   * @returns {Promise<any>}
   */
  async table(params, signal) {
    const { json } = await fetchReady(this.api(`table?${params}`), { signal }).then(jsonOrError);
    return json;
  }

  /** @param {ArrayBuffer} buf */
  onBinary(buf) {
    let h;
    try {
      h = decodeHeader(buf);
      if (h.kind === KIND_TABLES) {
        this.tables = decodeTables(buf);
        return;
      }
    } catch (e) {
      console.warn('bad frame:', e);
      return;
    }
    if (h.kind !== KIND_REPLY) return;
    const w = this.waiting.get(h.seq);
    if (!w) {
      if (this.chase && this.chase.seq === h.seq) this.chased(buf, h.seq, this.chase.q);
      return; // else an answer nobody waits for any more
    }
    this.waiting.delete(h.seq);
    // Older requests will not be answered: the server keeps only the newest.
    for (const [s, o] of this.waiting) {
      if (s < h.seq) {
        o.reject(new Error('superseded'));
        this.waiting.delete(s);
      }
    }
    try {
      const r = decodeReply(buf, w.q);
      this.serverMicros = r.micros;
      r.frame.seq = h.seq;
      w.resolve(r.frame);
    } catch (e) {
      w.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /**
   * A frame the server pushed for the chase request: the request moved to
   * end after the newest event, same duration and width (its start is in
   * the frame).
   * @param {ArrayBuffer} buf @param {number} seq @param {import('./source.js').ViewRequest} q
   */
  chased(buf, seq, q) {
    let f;
    try {
      f = decodeReply(buf, q).frame;
    } catch (e) {
      console.warn('bad chase frame:', e);
      return;
    }
    f.end = f.base + (q.end - q.start);
    f.seq = seq;
    this.onChase(f);
  }

  /** Asks a live trace's source to end (POST /stop); false when it was not live any more. */
  async stop() {
    const r = await fetch(this.api(`stop`), { method: 'POST' });
    if (r.status === 409) return false;
    await jsonOrError(r);
    return true;
  }

  /** @param {string} ref */
  async details(ref) {
    if (!/^-?\d{1,10}:\d{1,10}$/.test(ref)) throw new Error(`not an event id: ${ref}`);
    const { text, json: j } = await fetchReady(this.api(`events/${ref}`)).then(jsonOrError);
    // time_ns is a JSON number there and may pass 2^53: read its digits.
    const tm = /"time_ns"\s*:\s*"?(-?\d+)/.exec(text);
    const raw = typeof j.raw === 'string' && /^([0-9a-f]{2})*$/i.test(j.raw)
      ? Uint8Array.from(j.raw.match(/../g) ?? [], (/** @type {string} */ h) => parseInt(h, 16))
      : new Uint8Array(0);
    /** @type {Details} */
    const d = {
      ref: typeof j.ev === 'string' ? j.ev : ref,
      time: tm ? BigInt(tm[1]) : big(j.time_ns ?? 0),
      track: Number(j.track_id ?? -1),
      type: Number(j.type_id ?? -1),
      label: String(j.label ?? ''),
      fields: Array.isArray(j.fields) ? j.fields : [],
      stack: Array.isArray(j.stack) ? j.stack.map(String) : [],
      labels: j.labels && typeof j.labels === 'object' ? Object.entries(j.labels).map(([key, value]) => ({ key, value: typeof value === 'string' ? value : JSON.stringify(value) })) : [],
      raw,
    };
    return d;
  }

  /**
   * The next (dir 1) or previous hit after event `after`, or null at the end.
   * @param {string} query @param {string} after @param {number} dir
   */
  async searchFrom(query, after, dir) {
    const u = this.api(`search?q=${encodeURIComponent(query)}&after=${after}&dir=${dir > 0 ? 'next' : 'prev'}&limit=1`);
    const { json: j } = await fetchReady(u).then(jsonOrError);
    const h = (j.hits ?? [])[0];
    return h ? { ref: String(h.ev), time: big(h.time), track: Number(h.track) } : null;
  }

  /** @param {string} query */
  async search(query) {
    const u = this.api(`search?q=${encodeURIComponent(query)}&limit=10000`);
    const { json: j } = await fetchReady(u).then(jsonOrError);
    const hits = (j.hits ?? []).map((/** @type {any} */ h) => ({ ref: String(h.ev), time: big(h.time), track: Number(h.track) }));
    return { hits, total: hits.length, more: !!j.more || !!j.cut_off, notice: j.cut_off ? String(j.notice || 'the search was cut off') : undefined };
  }

  /**
   * The query's hits over the whole trace in n time bins (`bins=N`,
   * PROTOCOL.md §3), for the overview strip when the hit list was cut.
   * @param {string} query @param {number} n
   * @returns {Promise<import('./overview.js').HitBins>}
   */
  async searchBins(query, n) {
    const u = this.api(`search?q=${encodeURIComponent(query)}&limit=1&bins=${n}`);
    const { json: j } = await fetchReady(u).then(jsonOrError);
    const b = j.bins;
    if (!b || !Array.isArray(b.counts)) throw new Error('the search reply holds no bins');
    return {
      from: big(b.from),
      to: big(b.to),
      counts: b.counts.map((/** @type {unknown} */ c) => (typeof c === 'number' && c > 0 ? c : 0)),
      complete: b.complete !== false,
    };
  }

  /** Event types carrying stacks (GET /stacks/events). @returns {Promise<import('./source.js').StackEvents>} */
  async stackEvents() {
    const { json: j } = await fetchReady(this.api(`stacks/events`)).then(jsonOrError);
    const events = (Array.isArray(j?.events) ? j.events : []).map((/** @type {any} */ e) => ({
      event: String(e?.event ?? ''),
      provider: String(e?.provider ?? ''),
      type: Number(e?.type ?? -1),
      count: Number(e?.count ?? 0),
    }));
    return { events, default: String(j?.default ?? '') };
  }

  /** The aggregated stacks (GET /stacks). @param {import('./source.js').StackQuery} q */
  async stacks(q) {
    const { json } = await fetchReady(this.api(`stacks?${stackParams(q)}`)).then(jsonOrError);
    return json;
  }

  /**
   * Where a query's stacks download as a speedscope file (GET
   * /stacks/speedscope). @param {import('./source.js').StackQuery} q
   */
  stacksExportURL(q) {
    return this.api(`stacks/speedscope?${stackParams(q)}`);
  }

  /**
   * Derived tracks over a range (GET /spans, PROTOCOL.md §3).
   * @param {import('./source.js').SpanQuery} q
   */
  async spans(q) {
    const p = new URLSearchParams({ from: String(q.from), to: String(q.to), width: String(Math.max(1, Math.min(8192, Math.round(q.width)))) });
    if (q.tracks) p.set('tracks', q.tracks.join(','));
    const { json } = await fetchReady(this.api(`spans?${p}`)).then(jsonOrError);
    return parseSpans(json, q.from, q.to);
  }

  /**
   * One derived slice with both ends' fields (GET /spans/{track}/{slice}).
   * @param {number} track @param {number} slice
   * @returns {Promise<import('./source.js').SliceDetails>}
   */
  async slice(track, slice) {
    const { json: j } = await fetchReady(this.api(`spans/${track}/${slice}`)).then(jsonOrError);
    return {
      track: Number(j.track), slice: Number(j.slice), name: String(j.name ?? ''),
      start: big(j.start), end: big(j.end), duration: Number(j.duration_ns ?? 0),
      depth: Number(j.depth ?? 0), open: String(j.open ?? ''), thread: Number(j.thread ?? -1),
      args: (Array.isArray(j.args) ? j.args : []).map((/** @type {any} */ a) => ({ name: String(a.name ?? ''), value: String(a.value ?? '') })),
    };
  }

  /**
   * The events related to one by its activity ids (GET /flows?event=).
   * @param {string} ref
   * @returns {Promise<import('./source.js').Hit[]>}
   */
  async flows(ref) {
    const { json: j } = await fetchReady(this.api(`flows?event=${encodeURIComponent(ref)}`)).then(jsonOrError);
    return (j.events ?? []).map((/** @type {any} */ h) => ({ ref: String(h.ev), time: big(h.time), track: Number(h.track) }));
  }

  /**
   * Chains of related events in a range (GET /flows?from=&to=), each in time order.
   * @param {bigint} from @param {bigint} to
   * @returns {Promise<import('./source.js').Hit[][]>}
   */
  async flowsIn(from, to) {
    const { json: j } = await fetchReady(this.api(`flows?from=${from}&to=${to}`)).then(jsonOrError);
    return (j.flows ?? []).map((/** @type {any} */ f) => (f.events ?? []).map((/** @type {any} */ h) => ({ ref: String(h.ev), time: big(h.time), track: Number(h.track) })));
  }

  /**
   * The events under a node (GET /stacks/samples), as many as a search
   * marks (10000, the endpoint's most).
   * @param {import('./source.js').StackQuery} q @param {number} node
   */
  async stackSamples(q, node) {
    const { json: j } = await fetchReady(this.api(`stacks/samples?${stackParams(q, node, 10000)}`)).then(jsonOrError);
    const hits = (j.hits ?? []).map((/** @type {any} */ h) => ({ ref: String(h.ev), time: big(h.time), track: Number(h.track) }));
    return { hits, total: hits.length, more: !!j.more };
  }
}

/**
 * The request within the server's viewport limits (PROTOCOL.md §4, values
 * from the generated urlspec.js): at most VIEWPORT_LIMITS.tracks tracks,
 * and fewer pixels (coarser buckets) when the rows times the width would
 * pass the cells bound, rather than a request the server refuses.
 * @param {import('./source.js').ViewRequest} q
 * @returns {import('./source.js').ViewRequest}
 */
export function fitViewport(q) {
  const L = VIEWPORT_LIMITS;
  const tracks = q.tracks.length > L.tracks ? q.tracks.slice(0, L.tracks) : q.tracks;
  const width = Math.max(1, Math.min(q.width, L.width, Math.floor(L.cells / Math.max(1, tracks.length)) - 1));
  return width === q.width && tracks === q.tracks ? q : { ...q, width, tracks };
}
