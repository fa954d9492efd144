// @ts-check
// Small DOM helpers and the details panel. Trace-supplied text only ever
// goes into textContent.

'use strict';

import { relTime, absTitle } from './timebase.js';
import { nameHistory } from './tip.js';
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

/**
 * A definition list of fields; a field's title (the page's own facts, never
 * a trace's fields) shows on hover.
 * @param {(import('./source.js').Field & {title?: string})[]} fields
 */
function fieldList(fields) {
  const dl = el('dl', { className: 'fields' });
  for (const f of fields) {
    dl.append(textEl(f.name, 'dt'));
    const dd = el('dd');
    if (f.title) dd.title = f.title;
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
 * Fills the details panel for an event, else for the selected track, else
 * says how to fill it. Times count from the trace's first event, as on the
 * axis; the absolute value is in the time's title.
 * @param {HTMLElement} box
 * @param {import('./source.js').Details | null} d
 * @param {import('./source.js').Meta} m
 * @param {number} [track] the selected track, shown when there is no event
 */
export function renderDetails(box, d, m, track = -1) {
  clear(box);
  if (!d) {
    const tr = m.tracks[track];
    if (tr) {
      box.append(textEl(tr.name, 'h2'));
      box.append(section('Track', trackFacts(tr)));
      box.append(textEl('Select an event on it (→, ←, or a click) to see its fields.', 'p', 'hint'));
      return;
    }
    box.append(textEl('Click an event (or select a track with ↑/↓ and an event with ←/→) to see its fields.', 'p', 'hint'));
    return;
  }
  const tr = m.tracks[d.track];
  box.append(textEl(detailsTitle(d, m), 'h2'));
  if (d.label) box.append(textEl(d.label, 'p', 'label'));
  /** @type {(import('./source.js').Field & {title?: string})[]} */
  const facts = [
    { name: 'time', value: relTime(d.time, m.first), title: absTitle(d.time, m.wall) },
    { name: 'track', value: tr ? tr.name : String(d.track) },
    ...(tr?.names?.length ? [{ name: 'earlier names', value: tr.names.join(' → ') }] : []),
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
 * The heading of an event's details: its type with provider and code.
 * @param {import('./source.js').Details} d @param {import('./source.js').Meta} m
 */
export function detailsTitle(d, m) {
  const t = m.types[d.type];
  return t ? `[${t.code}] ${t.provider ? t.provider + '/' : ''}${t.name}` : `event ${d.ref}`;
}

/** A track's facts: name, earlier names (oldest first), kind and ids. @param {import('./source.js').Track} tr */
function trackFacts(tr) {
  /** @type {import('./source.js').Field[]} */
  const f = [{ name: 'name', value: tr.name }];
  if (tr.names?.length) {
    f.push({ name: 'earlier names', value: tr.names.join(' → ') });
    f.push({ name: 'renamed', value: nameHistory(tr) });
  }
  f.push({ name: 'kind', value: tr.kind });
  if (tr.pid !== undefined && tr.pid >= 0) f.push({ name: 'pid', value: tr.pid });
  if (tr.tid !== undefined && tr.tid >= 0) f.push({ name: 'tid', value: tr.tid });
  if (tr.events !== undefined) f.push({ name: 'events', value: tr.events.toLocaleString('en-US') });
  f.push({ name: 'track id', value: tr.id });
  return fieldList(f);
}

/** @param {string} title @param {Node} body */
function section(title, body) {
  const s = el('section');
  s.append(textEl(title, 'h3'), body);
  return s;
}

/**
 * Fills the details panel for a derived slice: its name, both ends'
 * times, its duration, its track and thread, and both ends' fields (the
 * stop's prefixed "end.").
 * @param {HTMLElement} box
 * @param {import('./source.js').SliceDetails} sl
 * @param {import('./spans.js').DerivedTrack | undefined} dt
 * @param {import('./source.js').Meta} m
 */
export function renderSliceDetails(box, sl, dt, m) {
  clear(box);
  box.append(textEl(sl.name || '(unnamed slice)', 'h2'));
  const open = sl.open === 'both' ? 'neither end' : sl.open === 'start' ? 'no start (bounded by the first event)' : sl.open === 'end' ? 'no end (bounded by the last event)' : '';
  /** @type {(import('./source.js').Field & {title?: string})[]} */
  const facts = [
    { name: 'start', value: relTime(sl.start, m.first), title: absTitle(sl.start, m.wall) },
    { name: 'end', value: relTime(sl.end, m.first), title: absTitle(sl.end, m.wall) },
    { name: 'duration', value: `${formatDuration(sl.duration)} (${sl.duration.toLocaleString('en-US')} ns)` },
    { name: 'track', value: dt ? `${dt.name} (${dt.kind})` : String(sl.track) },
    ...(sl.thread >= 0 ? [{ name: 'thread', value: m.tracks[sl.thread]?.name ?? String(sl.thread) }] : []),
    { name: 'depth', value: sl.depth },
    ...(open ? [{ name: 'open', value: open }] : []),
    { name: 'slice id', value: `${sl.track}/${sl.slice}` },
  ];
  box.append(section('Slice', fieldList(facts)));
  const begin = sl.args.filter((a) => !a.name.startsWith('end.'));
  const end = sl.args.filter((a) => a.name.startsWith('end.')).map((a) => ({ name: a.name.slice(4), value: a.value }));
  box.append(section('Start fields', begin.length ? fieldList(begin) : textEl('none', 'p', 'hint')));
  box.append(section('End fields', end.length ? fieldList(end) : textEl('none', 'p', 'hint')));
}
