// @ts-check
// Decoders for the binary messages of the websocket: the 16-byte envelope of
// web/PROTOCOL.md §4 and the viewport frame of render/wire/FORMAT.md.

'use strict';

export const KIND_VIEWPORT = 1;
const ENVELOPE = 16;

/**
 * @param {ArrayBuffer} buf
 * @returns {{kind: number, seq: number, micros: number, offset: number, length: number}}
 */
export function decodeEnvelope(buf) {
  if (buf.byteLength < ENVELOPE) throw new Error(`short message: ${buf.byteLength} bytes`);
  const v = new DataView(buf);
  const kind = v.getUint8(0);
  const length = v.getUint32(12, true);
  if (length > buf.byteLength - ENVELOPE) throw new Error(`payload length ${length} exceeds message`);
  return { kind, seq: v.getUint32(4, true), micros: v.getUint32(8, true), offset: ENVELOPE, length };
}

/**
 * @param {DataView} v the frame payload
 * @param {import('./source.js').ViewRequest} q the request it answers
 * @param {import('./source.js').Meta} meta
 * @returns {import('./source.js').Frame}
 */
export function decodeFrame(v, q, meta) {
  void v; void q; void meta;
  throw new Error('viewport frame decoding is not implemented yet');
}
