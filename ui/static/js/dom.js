// @ts-check
// Small DOM helpers and the details panel. Trace-supplied text only ever
// goes into textContent.

'use strict';

import { formatDuration } from './viewport.js';

/**
 * Creates an element and sets properties (never innerHTML).
 * @param {string} tag @param {Record<string, unknown>} [props]
 * @returns {HTMLElement}
 */
export function el(tag, props = {}) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'role') e.setAttribute('role', String(v));
    else /** @type {any} */ (e)[k] = v;
  }
  return e;
}

/** @param {Element} e */
export function clear(e) {
  while (e.firstChild) e.firstChild.remove();
}

/** @param {string} text @param {string} [tag] @param {string} [cls] */
function textEl(text, tag = 'span', cls = '') {
  const e = el(tag, cls ? { className: cls } : {});
  e.textContent = text;
  return e;
}

/**
 * Renders a field value: structs as nested lists, arrays inline when short.
 * @param {unknown} v @returns {Node}
 */
function valueNode(v) {
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every((x) => x && typeof x === 'object' && 'name' in x && 'value' in x)) {
      return fieldList(/** @type {import('./source.js').Field[]} */ (v));
    }
    if (v.every((x) => x === null || typeof x !== 'object')) return textEl('[' + v.map(String).join(', ') + ']', 'span', 'value');
    const ol = el('ol', { className: 'array' });
    for (const x of v) {
      const li = el('li');
      li.append(valueNode(x));
      ol.append(li);
    }
    return ol;
  }
  if (v && typeof v === 'object') return textEl(JSON.stringify(v), 'span', 'value');
  return textEl(String(v), 'span', 'value');
}

/** @param {import('./source.js').Field[]} fields */
function fieldList(fields) {
  const dl = el('dl', { className: 'fields' });
  for (const f of fields) {
    dl.append(textEl(f.name, 'dt'));
    const dd = el('dd');
    dd.append(valueNode(f.value));
    dl.append(dd);
  }
  return dl;
}

/** Hex dump, 16 bytes a line. @param {Uint8Array} b */
export function hexdump(b) {
  const lines = [];
  const max = Math.min(b.length, 4096);
  for (let i = 0; i < max; i += 16) {
    const row = b.subarray(i, Math.min(i + 16, max));
    const hex = [...row].map((x) => x.toString(16).padStart(2, '0')).join(' ');
    const asc = [...row].map((x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : '.')).join('');
    lines.push(i.toString(16).padStart(6, '0') + '  ' + hex.padEnd(48) + ' ' + asc);
  }
  if (b.length > max) lines.push(`… ${b.length - max} more bytes`);
  return lines.join('\n');
}

/**
 * Fills the details panel for an event (or empties it).
 * @param {HTMLElement} box
 * @param {import('./source.js').Details | null} d
 * @param {import('./source.js').Meta} m
 */
export function renderDetails(box, d, m) {
  clear(box);
  if (!d) {
    box.append(textEl('Click an event (or select a track with ↑/↓ and an event with ←/→) to see its fields.', 'p', 'hint'));
    return;
  }
  const t = m.types[d.type];
  const tr = m.tracks[d.track];
  const head = el('h2');
  head.textContent = t ? `[${t.code}] ${t.provider ? t.provider + '/' : ''}${t.name}` : `event ${d.ref}`;
  box.append(head);
  if (d.label) box.append(textEl(d.label, 'p', 'label'));
  /** @type {import('./source.js').Field[]} */
  const facts = [
    { name: 'time', value: `${formatDuration(Number(d.time - m.first))} after the first event (${d.time} ns)` },
    ...(m.wall ? [{ name: 'wall clock', value: wallTime(m.wall, d.time) }] : []),
    { name: 'track', value: tr ? tr.name : String(d.track) },
    { name: 'event id', value: d.ref },
  ];
  box.append(section('Event', fieldList(facts)));
  box.append(section('Fields', d.fields.length ? fieldList(d.fields) : textEl('none', 'p', 'hint')));
  if (d.stack.length) {
    const ol = el('ol', { className: 'stack' });
    for (const f of d.stack) ol.append(textEl(f, 'li'));
    box.append(section('Stack', ol));
  }
  if (d.labels.length) box.append(section('Labels', fieldList(d.labels.map((l) => ({ name: l.key, value: l.value })))));
  if (d.raw.length) box.append(section(`Raw bytes (${d.raw.length})`, textEl(hexdump(d.raw), 'pre', 'raw')));
}

/**
 * The wall-clock time of t ns after the RFC 3339 origin, to the
 * nanosecond (Date alone keeps milliseconds).
 * @param {string} origin @param {bigint} t
 */
export function wallTime(origin, t) {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(origin);
  if (!m) return origin;
  const base = Date.parse(m[1] + m[3]);
  if (Number.isNaN(base)) return origin;
  const ns = BigInt(base) * 1000000n + BigInt((m[2] ?? '').padEnd(9, '0') || '0') + t;
  const ms = ns / 1000000n - (ns % 1000000n < 0n ? 1n : 0n);
  const frac = ns - ms * 1000000n;
  const iso = new Date(Number(ms)).toISOString(); // ...T..:..:..sssZ in UTC
  return iso.slice(0, 23) + frac.toString().padStart(6, '0') + 'Z';
}

/** @param {string} title @param {Node} body */
function section(title, body) {
  const s = el('section');
  s.append(textEl(title, 'h3'), body);
  return s;
}
