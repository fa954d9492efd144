// @ts-check
// URL state of the viewer (web/PROTOCOL.md §6). The grammar is one table,
// VIEW_PARAMS in the generated urlspec.js (from web/viewspec.go); this
// module and the server's web.ParseView / View.Encode loop over it with
// one rule per kind, reading the query the way Go's url.ParseQuery does,
// so the URL the page writes is the one the server would write.
// web/urlstate_test.go runs both on the same URLs under node and checks
// that they agree. No DOM here: node imports this module.

'use strict';

import { VIEW_PARAMS, VIEW_VERSION, VIEWPORT_LIMITS } from './urlspec.js';

/** @typedef {import('./urlspec.js').ViewParam} ViewParam */

export const VERSION = VIEW_VERSION;

/**
 * @typedef {object} ViewState
 * @property {bigint | null} start  null: the whole trace
 * @property {bigint | null} end
 * @property {string} sel          event id "TRACK:INDEX", "" for none
 * @property {number} track        selected track, -1 for none
 * @property {number[]} hide       hidden tracks
 * @property {number[]} pin        pinned tracks, in order
 * @property {number[]} order      explicit track order
 * @property {number[]} hideTypes  hidden event types
 * @property {number[]} hideDerived  hidden derived tracks (spans endpoint ids)
 * @property {'event' | 'summary'} mode
 * @property {string} q
 * @property {string} filter
 * @property {string} where        the timeline filter's query, "" for none
 * @property {'dim' | 'hide'} whereMode  what becomes of the events it does not match
 * @property {'closed' | 'open'} stacks   the stacks panel
 * @property {'flame' | 'top' | 'bottom' | 'butterfly'} stacksView
 * @property {'view' | 'all' | 'ruler'} stacksRange
 * @property {'all' | 'shown' | 'sel'} stacksTracks
 * @property {string} stacksEvent   "" for the default
 * @property {string} stacksWeight  "" for count, "time", "field:NAME"
 * @property {string} stacksTf      the transforms (stacktf.js's encoding)
 * @property {string} stacksQ       the panel's search
 * @property {string} stacksFn      the selected function
 * @property {string} stacksNode    the selected node's path (names joined by "\n")
 * @property {string[]} traces      a combined view's traces (ids, in order); [] for one trace
 * @property {{trace: number, ns: bigint}[]} offsets  a combined view's offsets by increasing trace; none zero
 */

/** The state of a kind's default (left out of URLs). @param {ViewParam} p @returns {any} */
function kindDefault(p) {
  switch (p.kind) {
    case 'start': case 'end': return null;
    case 'event': case 'text': return '';
    case 'id': return -1;
    case 'set': case 'list': case 'traces': case 'offsets': return [];
    case 'enum': return (p.values ?? [''])[0];
  }
  return undefined;
}

/** @returns {ViewState} */
export function defaultState() {
  /** @type {any} */
  const st = {};
  for (const p of VIEW_PARAMS) if (p.state) st[p.state] = kindDefault(p);
  return st;
}

/**
 * Parses a query string (with or without "?"). Values the server would
 * refuse are dropped: their keys keep the default.
 * @param {string} search
 * @returns {ViewState}
 */
export function parseState(search) {
  return parseStateChecked(search).state;
}

/**
 * Parses a query string as web.ParseView does, going on past refused
 * values: `refused` lists their keys in the table's order (the first is
 * the key the server's error names), and the state holds the rest.
 * @param {string} search
 * @returns {{state: ViewState, refused: string[]}}
 */
export function parseStateChecked(search) {
  const q = goQuery(search);
  /** @type {any} */
  const st = defaultState();
  /** @type {string[]} */
  const refused = [];
  let startKey = '';
  let haveStart = false;
  for (const p of VIEW_PARAMS) {
    const vals = q.get(p.key);
    let ok = vals !== undefined;
    if (vals !== undefined) {
      const v = vals.length === 1 ? parseValue(p, vals[0]) : undefined;
      if (v === undefined) {
        refused.push(p.key);
        ok = false;
      } else if (p.state) {
        st[p.state] = v;
      }
    }
    if (p.kind === 'start') {
      startKey = p.key;
      haveStart = ok;
    } else if (p.kind === 'end') {
      const bad = haveStart !== ok ? startKey : ok && st.end <= st.start ? p.key : '';
      if (bad || !ok) {
        if (bad && !refused.includes(bad)) refused.push(bad);
        for (const r of VIEW_PARAMS) if (r.kind === 'start' || r.kind === 'end') st[r.state] = null;
      }
    }
  }
  return { state: st, refused };
}

/**
 * One URL value as its kind reads it, or undefined when the server would
 * refuse it.
 * @param {ViewParam} p @param {Uint8Array} raw the value's bytes
 * @returns {any}
 */
function parseValue(p, raw) {
  const s = goString(raw);
  switch (p.kind) {
    case 'version': {
      const n = parseInt64(s, 64);
      return n !== undefined && n >= 1n && n <= BigInt(p.max ?? 0) ? Number(n) : undefined;
    }
    case 'start': case 'end':
      return parseInt64(s, 64);
    case 'event':
      return parseEventRef(s) ? s : undefined;
    case 'id':
      return parseID(s);
    case 'set': case 'list':
      return parseIDs(s, p.kind === 'set', p.max ?? 0);
    case 'enum':
      return (p.values ?? []).includes(s) ? s : undefined;
    case 'text':
      return raw.length <= (p.max ?? 0) ? s : undefined;
    case 'traces':
      return parseTraces(s, p.max ?? 0);
    case 'offsets':
      return parseOffsets(s, p.max ?? 0);
  }
  return undefined;
}

/**
 * Formats a state as the query string (without "?"), defaults left out,
 * in the table's key order: web.View.Encode's string for the same view.
 * @param {ViewState} st
 */
export function formatState(st) {
  /** @type {any} */
  const s = st;
  const range = s.start !== null && s.end !== null;
  /** @type {string[]} */
  const out = [];
  for (const p of VIEW_PARAMS) {
    const v = p.state ? s[p.state] : undefined;
    let w = '';
    switch (p.kind) {
      case 'version': w = String(VIEW_VERSION); break;
      case 'start': case 'end': if (range) w = String(v); break;
      case 'event': w = v ?? ''; break;
      case 'id': if (v >= 0) w = String(v); break;
      case 'set': w = formatSet(v); break;
      case 'list': w = v.join(','); break;
      case 'enum': if (v !== (p.values ?? [''])[0]) w = v; break;
      case 'text': w = queryEscape(v); break;
      case 'traces': w = (v ?? []).join(','); break;
      case 'offsets': w = formatOffsets(v ?? []); break;
    }
    if (w) out.push(`${p.key}=${w}`);
  }
  return out.join('&');
}

/**
 * The state the server put in the page data (web.View as JSON).
 * @param {any} v
 * @returns {ViewState}
 */
export function fromPageView(v) {
  /** @type {any} */
  const st = defaultState();
  if (!v || typeof v !== 'object') return st;
  for (const p of VIEW_PARAMS) {
    if (!p.state) continue;
    const x = v[p.field];
    switch (p.kind) {
      case 'start': case 'end':
        if (v.has_range) st[p.state] = parseInt64(String(x), 64) ?? null;
        break;
      case 'event': if (typeof x === 'string' && parseEventRef(x)) st[p.state] = x; break;
      case 'id': if (Number.isInteger(x) && x >= 0) st[p.state] = x; break;
      case 'set': case 'list':
        if (Array.isArray(x)) st[p.state] = x.filter((y) => Number.isInteger(y) && y >= 0);
        break;
      case 'enum': if ((p.values ?? []).includes(x)) st[p.state] = x; break;
      case 'text': if (typeof x === 'string') st[p.state] = x; break;
      case 'traces':
        if (Array.isArray(x) && x.every((y) => typeof y === 'string' && TRACE_ID.test(y))) st[p.state] = x;
        break;
      case 'offsets':
        if (Array.isArray(x)) {
          st[p.state] = x.flatMap((/** @type {any} */ o) => {
            const ns = parseInt64(String(o?.ns), 64);
            return Number.isInteger(o?.trace) && o.trace >= 0 && ns !== undefined && ns !== 0n ? [{ trace: o.trace, ns }] : [];
          });
        }
        break;
    }
  }
  if (st.start === null || st.end === null || st.end <= st.start) st.start = st.end = null;
  return st;
}

// ---- the value rules, each the twin of the Go function it names --------

/**
 * strconv.ParseInt(s, 10, bits): an optional sign and decimal digits
 * within the range.
 * @param {string} s @param {number} bits
 */
function parseInt64(s, bits) {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  const lim = 1n << BigInt(bits - 1);
  return n >= -lim && n < lim ? n : undefined;
}

/** web.parseID: a non-negative int32 without leading zeros. @param {string} s */
function parseID(s) {
  const n = parseInt64(s, 32);
  if (n === undefined || n < 0n || (s.length > 1 && s[0] === '0')) return undefined;
  return Number(n);
}

/** web.ParseEventRef: TRACK:INDEX in canonical decimal, TRACK ≥ -1. @param {string} s */
function parseEventRef(s) {
  const i = s.indexOf(':');
  if (i < 0) return false;
  const t = s.slice(0, i), x = s.slice(i + 1);
  const track = parseInt64(t, 32), idx = parseInt64(x, 32);
  return track !== undefined && track >= -1n && String(track) === t &&
    idx !== undefined && idx >= 0n && String(idx) === x;
}

/**
 * web.parseIDs: comma-separated ids. A set may hold inclusive ranges a-b
 * and must increase strictly; a list keeps its order and may not repeat.
 * @param {string} s @param {boolean} set @param {number} max
 * @returns {number[] | undefined}
 */
export function parseIDs(s, set, max) {
  if (s === '') return undefined;
  /** @type {number[]} */
  const ids = [];
  const seen = new Set();
  for (const part of s.split(',')) {
    let lo = part, hi = part;
    const i = part.indexOf('-');
    if (i >= 0 && set) {
      lo = part.slice(0, i);
      hi = part.slice(i + 1);
    }
    const a = parseID(lo), b = parseID(hi);
    if (a === undefined || b === undefined || b < a || ids.length + (b - a) + 1 > max) return undefined;
    for (let id = a; id <= b; id++) {
      if (set && ids.length > 0 && id <= ids[ids.length - 1]) return undefined;
      if (!set && seen.has(id)) return undefined;
      seen.add(id);
      ids.push(id);
    }
  }
  return ids;
}

/** web.parseTraceID: a canonical (lowercase) UUID. */
const TRACE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * web.parseTraceIDs: canonical trace ids separated by commas, none
 * repeated, at most max.
 * @param {string} s @param {number} max
 * @returns {string[] | undefined}
 */
function parseTraces(s, max) {
  if (s === '') return undefined;
  const ids = s.split(',');
  if (ids.length > max || new Set(ids).size !== ids.length || !ids.every((id) => TRACE_ID.test(id))) return undefined;
  return ids;
}

/** The largest offset either way (web.MaxOffset). */
const MAX_OFFSET = BigInt(VIEWPORT_LIMITS.offset);

/**
 * web.parseOffsets: TRACE:NS pairs separated by commas, traces increasing
 * below max, NS a non-zero canonical decimal within ±MAX_OFFSET.
 * @param {string} s @param {number} max
 * @returns {{trace: number, ns: bigint}[] | undefined}
 */
function parseOffsets(s, max) {
  if (s === '') return undefined;
  /** @type {{trace: number, ns: bigint}[]} */
  const out = [];
  for (const part of s.split(',')) {
    const i = part.indexOf(':');
    if (i < 0) return undefined;
    const k = parseID(part.slice(0, i));
    const t = part.slice(i + 1);
    const ns = parseInt64(t, 64);
    if (k === undefined || k >= max || (out.length > 0 && k <= out[out.length - 1].trace)) return undefined;
    if (ns === undefined || String(ns) !== t || ns === 0n || ns > MAX_OFFSET || ns < -MAX_OFFSET) return undefined;
    out.push({ trace: k, ns });
  }
  return out;
}

/** web.formatOffsets: the non-zero offsets as TRACE:NS. @param {{trace: number, ns: bigint}[]} offs */
export function formatOffsets(offs) {
  return offs.filter((o) => o.ns !== 0n).map((o) => `${o.trace}:${o.ns}`).join(',');
}

/** web.formatSet: increasing ids with runs of three or more as ranges. @param {number[]} ids */
export function formatSet(ids) {
  const v = [...new Set(ids)].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < v.length; ) {
    let j = i;
    while (j + 1 < v.length && v[j + 1] === v[j] + 1) j++;
    if (j >= i + 2) out.push(`${v[i]}-${v[j]}`);
    else if (j === i + 1) out.push(`${v[i]}`, `${v[j]}`);
    else out.push(`${v[i]}`);
    i = j + 1;
  }
  return out.join(',');
}

/** Go's url.QueryEscape. @param {string} s */
function queryEscape(s) {
  const w = typeof s.toWellFormed === 'function' ? s.toWellFormed() : s;
  return encodeURIComponent(w)
    .replace(/%20/g, '+')
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

// ---- reading the query as the server does ------------------------------

/** net/url's default limit on the parameters of one query. */
const MAX_PARAMS = 10000;

const utf8 = new TextEncoder();

/**
 * Go's url.ParseQuery (the server's r.URL.Query()): pairs split on "&"; a
 * pair holding ";" or a bad %-escape is skipped; more than 10000 pairs
 * read as none. Values stay bytes, as Go's strings do.
 * @param {string} search
 * @returns {Map<string, Uint8Array[]>}
 */
function goQuery(search) {
  const q = search.startsWith('?') ? search.slice(1) : search;
  /** @type {Map<string, Uint8Array[]>} */
  const m = new Map();
  const pairs = q.split('&');
  if (pairs.length > MAX_PARAMS) return m;
  for (const pair of pairs) {
    if (pair === '' || pair.includes(';')) continue;
    const i = pair.indexOf('=');
    const k = queryUnescape(i < 0 ? pair : pair.slice(0, i));
    const v = queryUnescape(i < 0 ? '' : pair.slice(i + 1));
    if (!k || !v) continue;
    const key = goString(k);
    const vals = m.get(key);
    if (vals) vals.push(v);
    else m.set(key, [v]);
  }
  return m;
}

/**
 * Go's url.QueryUnescape, to bytes: "+" is a space, "%XX" a byte; a "%"
 * without two hex digits is an error (null).
 * @param {string} s
 */
function queryUnescape(s) {
  /** @type {number[]} */
  const out = [];
  let lit = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '%' && c !== '+') {
      lit += c;
      continue;
    }
    for (const x of utf8.encode(lit)) out.push(x);
    lit = '';
    if (c === '+') {
      out.push(0x20);
      continue;
    }
    const h = s.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(h)) return null;
    out.push(parseInt(h, 16));
    i += 2;
  }
  for (const x of utf8.encode(lit)) out.push(x);
  return Uint8Array.from(out);
}

/**
 * The string Go makes of bytes that should be UTF-8 (as
 * strings.ToValidUTF8(s, "\uFFFD") does): each run of bytes that are not
 * UTF-8 by utf8.DecodeRune's rules becomes one U+FFFD.
 * @param {Uint8Array} b
 */
function goString(b) {
  const dec = new TextDecoder();
  let out = '';
  let from = 0;
  let inRun = false;
  for (let i = 0; i < b.length; ) {
    const n = runeLen(b, i);
    if (n > 0) {
      inRun = false;
      i += n;
      continue;
    }
    if (!inRun) out += dec.decode(b.subarray(from, i)) + '\uFFFD';
    inRun = true;
    i++;
    from = i;
  }
  return out + dec.decode(b.subarray(from));
}

/**
 * The length of the UTF-8 sequence at b[i], 0 when it is not one (Go's
 * utf8.DecodeRune: no overlong forms, no surrogates, nothing above U+10FFFF).
 * @param {Uint8Array} b @param {number} i
 */
function runeLen(b, i) {
  const c = b[i];
  if (c < 0x80) return 1;
  const cont = (/** @type {number} */ k, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80, hi = c === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80, hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}
