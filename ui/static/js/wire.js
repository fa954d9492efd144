// @ts-check
// Decoder of the binary websocket frames (render/wire/FORMAT.md, version 1):
// the session's name tables and viewport replies. Every count is checked
// against the bytes of the frame before a view is made over them; a frame
// that does not fit throws.

'use strict';

import { emptySlice } from './source.js';

export const VERSION = 1;
export const KIND_TABLES = 1;
export const KIND_REPLY = 2;
const HEADER = 16;

/** Marker kinds of a reply. */
export const MARKER_LOST = 1;
export const MARKER_TRUNCATION = 5;

/**
 * @typedef {object} Header
 * @property {number} kind
 * @property {number} seq
 * @property {number} length   body bytes
 *
 * @typedef {object} Tables
 * @property {string[]} types
 * @property {{id: number, parent: number, name: string}[]} tracks
 *
 * @typedef {object} Marker
 * @property {number} x       buckets from the reply's start
 * @property {number} kind
 * @property {number} track
 * @property {number} count
 * @property {number} lost
 */

/** @param {ArrayBuffer} buf @returns {Header} */
export function decodeHeader(buf) {
  if (buf.byteLength < HEADER) throw new Error(`wire: short frame (${buf.byteLength} bytes)`);
  const v = new DataView(buf);
  if (v.getUint8(0) !== 0x56 || v.getUint8(1) !== 0x57) throw new Error('wire: bad magic');
  const version = v.getUint8(2);
  if (version !== VERSION) throw new Error(`wire: version ${version}, this page reads ${VERSION}`);
  const kind = v.getUint8(3);
  const length = v.getUint32(8, true);
  if (length !== buf.byteLength - HEADER) throw new Error(`wire: body of ${length} bytes in a frame of ${buf.byteLength}`);
  return { kind, seq: v.getUint32(4, true), length };
}

/** A bounds-checked cursor over a frame body. */
class Cursor {
  /** @param {ArrayBuffer} buf @param {number} off */
  constructor(buf, off) {
    this.buf = buf;
    this.v = new DataView(buf);
    this.off = off;
  }

  /** @param {number} n */
  need(n) {
    if (n < 0 || this.off + n > this.buf.byteLength) throw new Error(`wire: frame too short at byte ${this.off} (need ${n})`);
  }

  u32() {
    this.need(4);
    const x = this.v.getUint32(this.off, true);
    this.off += 4;
    return x;
  }

  i32() {
    this.need(4);
    const x = this.v.getInt32(this.off, true);
    this.off += 4;
    return x;
  }

  i64() {
    this.need(8);
    const x = this.v.getBigInt64(this.off, true);
    this.off += 8;
    return x;
  }

  /** A column of n 4-byte values. @template {Uint32ArrayConstructor | Int32ArrayConstructor | Float32ArrayConstructor} T @param {T} T @param {number} n @returns {InstanceType<T>} */
  column(T, n) {
    this.need(n * 4);
    const a = /** @type {InstanceType<T>} */ (new T(this.buf, this.off, n));
    this.off += n * 4;
    return a;
  }

  strings() {
    const n = this.u32();
    const lens = this.column(Uint32Array, n);
    let total = 0;
    for (const l of lens) total += l;
    this.need(total);
    const bytes = new Uint8Array(this.buf, this.off, total);
    const dec = new TextDecoder();
    const out = [];
    let p = 0;
    for (const l of lens) {
      out.push(dec.decode(bytes.subarray(p, p + l)));
      p += l;
    }
    this.off += total;
    const pad = (4 - (total % 4)) % 4;
    this.need(pad);
    this.off += pad;
    return out;
  }
}

/** @param {ArrayBuffer} buf @returns {Tables} */
export function decodeTables(buf) {
  const c = new Cursor(buf, HEADER);
  const types = c.strings();
  const t = c.u32();
  const ids = c.column(Int32Array, t);
  const parents = c.column(Int32Array, t);
  const names = c.strings();
  if (names.length !== t) throw new Error(`wire: ${names.length} track names for ${t} tracks`);
  if (c.off !== buf.byteLength) throw new Error('wire: trailing bytes after tables');
  return { types, tracks: [...ids].map((id, i) => ({ id, parent: parents[i], name: names[i] })) };
}

/**
 * Decodes a reply into the frame the renderer draws: individual events and
 * aggregates per track, offsets in ns from the reply's start.
 * @param {ArrayBuffer} buf
 * @param {{start: bigint, end: bigint, width: number}} q the request it answers
 * @returns {{frame: import('./source.js').Frame, micros: number, markers: Marker[]}}
 */
export function decodeReply(buf, q) {
  const c = new Cursor(buf, HEADER);
  const start = c.i64();
  const resBig = c.i64();
  if (resBig <= 0n) throw new Error('wire: bucket width not positive');
  const res = Number(resBig);
  c.u32(); // buckets
  const micros = c.u32();
  const t = c.u32();
  const m = c.u32();
  /** @type {Map<number, import('./source.js').TrackSlice>} */
  const tracks = new Map();
  for (let k = 0; k < t; k++) {
    const id = c.i32();
    const n = c.u32();
    if (n > (buf.byteLength - c.off) / 16) throw new Error(`wire: ${n} items do not fit the frame`);
    const x = c.column(Float32Array, n);
    const count = c.column(Uint32Array, n);
    const first = c.column(Uint32Array, n);
    const type = c.column(Int32Array, n);
    let ne = 0;
    for (let i = 0; i < n; i++) if (count[i] === 1) ne++;
    const s = emptySlice();
    s.n = ne;
    s.off = new Float64Array(ne);
    s.type = new Int32Array(ne);
    s.first = new Uint32Array(ne);
    s.an = n - ne;
    s.aoff = new Float64Array(n - ne);
    s.adur = new Float64Array(n - ne);
    s.count = new Uint32Array(n - ne);
    s.atype = new Int32Array(n - ne);
    s.afirst = new Uint32Array(n - ne);
    for (let i = 0, e = 0, a = 0; i < n; i++) {
      if (count[i] === 1) {
        s.off[e] = x[i] * res;
        s.type[e] = type[i];
        s.first[e] = first[i];
        e++;
      } else {
        s.aoff[a] = x[i] * res;
        s.adur[a] = res;
        s.count[a] = count[i];
        s.atype[a] = type[i];
        s.afirst[a] = first[i];
        a++;
      }
    }
    tracks.set(id, s);
  }
  if (m > (buf.byteLength - c.off) / 20) throw new Error(`wire: ${m} markers do not fit the frame`);
  const mx = c.column(Float32Array, m);
  const mkind = c.column(Uint32Array, m);
  const mtrack = c.column(Int32Array, m);
  const mcount = c.column(Uint32Array, m);
  const mlost = c.column(Uint32Array, m);
  if (c.off !== buf.byteLength) throw new Error('wire: trailing bytes after reply');
  /** @type {Marker[]} */
  const markers = [];
  for (let i = 0; i < m; i++) markers.push({ x: mx[i], kind: mkind[i], track: mtrack[i], count: mcount[i], lost: mlost[i] });
  const frame = { seq: 0, base: start, end: q.end, nsPerPx: Number(q.end - q.start) / Math.max(1, q.width), tracks };
  return { frame, micros, markers };
}
