// @ts-check
// URL state of the viewer (web/PROTOCOL.md §6): the browser-side twin of
// web.ParseView and View.Encode. Same keys, same order, same defaults left
// out, so the URL the page writes is the one the server would write.

'use strict';

import { parseNs } from './viewport.js';

export const VERSION = 1;
const MAX_IDS = 1 << 16;

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
 * @property {'event' | 'summary'} mode
 * @property {string} q
 * @property {string} filter
 */

/** @returns {ViewState} */
export function defaultState() {
  return { start: null, end: null, sel: '', track: -1, hide: [], pin: [], order: [], hideTypes: [], mode: 'event', q: '', filter: '' };
}

/**
 * Parses a query string. Malformed values are dropped (the server already
 * refused bad links; here we only meet URLs we wrote or history entries).
 * @param {string} search
 * @returns {ViewState}
 */
export function parseState(search) {
  const p = new URLSearchParams(search);
  const st = defaultState();
  const s = parseNs(p.get('s'));
  const e = parseNs(p.get('e'));
  if (s !== undefined && e !== undefined && e > s) {
    st.start = s;
    st.end = e;
  }
  const id = (/** @type {string | null} */ v) => (v != null && /^(0|[1-9]\d{0,9})$/.test(v) ? Number(v) : -1);
  const sel = p.get('sel');
  st.sel = sel && /^-?\d{1,10}:\d{1,10}$/.test(sel) ? sel : '';
  st.track = id(p.get('tr'));
  st.hide = parseIDs(p.get('hide'), true);
  st.pin = parseIDs(p.get('pin'), false);
  st.order = parseIDs(p.get('order'), false);
  st.hideTypes = parseIDs(p.get('xt'), true);
  st.mode = p.get('mode') === 'summary' ? 'summary' : 'event';
  st.q = p.get('q') ?? '';
  st.filter = p.get('f') ?? '';
  return st;
}

/**
 * Formats a state as the query string (without "?"), in web.View.Encode's
 * key order.
 * @param {ViewState} st
 */
export function formatState(st) {
  /** @type {string[]} */
  const out = [`v=${VERSION}`];
  if (st.start !== null && st.end !== null) out.push(`s=${st.start}`, `e=${st.end}`);
  if (st.sel) out.push(`sel=${st.sel}`);
  if (st.track >= 0) out.push(`tr=${st.track}`);
  if (st.hide.length) out.push(`hide=${formatSet(st.hide)}`);
  if (st.pin.length) out.push(`pin=${st.pin.join(',')}`);
  if (st.order.length) out.push(`order=${st.order.join(',')}`);
  if (st.hideTypes.length) out.push(`xt=${formatSet(st.hideTypes)}`);
  if (st.mode !== 'event') out.push(`mode=${st.mode}`);
  if (st.q) out.push(`q=${queryEscape(st.q)}`);
  if (st.filter) out.push(`f=${queryEscape(st.filter)}`);
  return out.join('&');
}

/** Go's url.QueryEscape. @param {string} s */
function queryEscape(s) {
  return encodeURIComponent(s)
    .replace(/%20/g, '+')
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * Comma-separated ids; a set may hold ranges a-b and is returned sorted.
 * @param {string | null} s @param {boolean} set
 */
export function parseIDs(s, set) {
  if (!s) return [];
  /** @type {number[]} */
  const ids = [];
  const seen = new Set();
  for (const part of s.split(',')) {
    const m = set ? /^(\d{1,10})(?:-(\d{1,10}))?$/.exec(part) : /^(\d{1,10})()$/.exec(part);
    if (!m) return [];
    const a = Number(m[1]);
    const b = m[2] ? Number(m[2]) : a;
    if (b < a || ids.length + (b - a) + 1 > MAX_IDS) return [];
    for (let i = a; i <= b; i++) {
      if (seen.has(i)) continue;
      seen.add(i);
      ids.push(i);
    }
  }
  return set ? ids.sort((x, y) => x - y) : ids;
}

/** Increasing ids with runs of three or more written as ranges. @param {number[]} ids */
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

/**
 * The state the server put in the page data (web.View as JSON).
 * @param {any} v
 * @returns {ViewState}
 */
export function fromPageView(v) {
  const st = defaultState();
  if (!v || typeof v !== 'object') return st;
  if (v.has_range) {
    const s = parseNs(String(v.start));
    const e = parseNs(String(v.end));
    if (s !== undefined && e !== undefined && e > s) {
      st.start = s;
      st.end = e;
    }
  }
  const num = (/** @type {unknown} */ x) => (typeof x === 'number' && Number.isInteger(x) ? x : -1);
  const arr = (/** @type {unknown} */ x) => (Array.isArray(x) ? x.filter((y) => Number.isInteger(y) && y >= 0) : []);
  st.sel = typeof v.sel === 'string' && /^-?\d{1,10}:\d{1,10}$/.test(v.sel) ? v.sel : '';
  st.track = num(v.track);
  st.hide = arr(v.hide);
  st.pin = arr(v.pin);
  st.order = arr(v.order);
  st.hideTypes = arr(v.hide_types);
  st.mode = v.mode === 'summary' ? 'summary' : 'event';
  st.q = typeof v.q === 'string' ? v.q : '';
  st.filter = typeof v.filter === 'string' ? v.filter : '';
  return st;
}
