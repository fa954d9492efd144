// @ts-check
// Groups: the rows of a trace with derived tracks, grouped. Trace tracks
// are grouped under their process (a track's `parent`, or its `pid`), each
// group under a header row that collapses it; a trace track's derived
// tracks (its thread state, syscalls, activities, counters) follow it; CPU
// tracks (and derived tracks that belong to no trace track) form a group
// of their own at the top (then derived tracks of no trace track). Rows are numbers: trace track ids (≥ 0), derived
// tracks and group headers as negative ids (derivedRow, groupRow). Pure
// functions, tested under node (ui/jstest).

'use strict';

import { KIND_ORDER } from './spans.js';

/** @typedef {import('./source.js').Track} Track */
/** @typedef {import('./spans.js').DerivedTrack} DerivedTrack */

const GROUP_BASE = -(2 ** 30); // below every derived row (span.MaxTracks is 2^20)

/** The row id of derived track d. @param {number} d */
export function derivedRow(d) {
  return -2 - d;
}

/** The row id of group g's header. @param {number} g */
export function groupRow(g) {
  return GROUP_BASE - g;
}

/**
 * What a row is.
 * @param {number} row
 * @returns {{kind: 'track', id: number} | {kind: 'derived', id: number} | {kind: 'group', id: number} | {kind: 'none', id: number}}
 */
export function rowKind(row) {
  if (row >= 0) return { kind: 'track', id: row };
  if (row <= GROUP_BASE) return { kind: 'group', id: GROUP_BASE - row };
  if (row <= -2) return { kind: 'derived', id: -2 - row };
  return { kind: 'none', id: -1 };
}

/**
 * @typedef {object} Group
 * @property {number} id       index in the groups list (groupRow(id) is its header)
 * @property {string} key      "cpu" or "p" + pid (what collapsing remembers)
 * @property {string} name     the header's text
 * @property {number} track    the process track the header stands for, -1 for none
 * @property {number} members  trace and derived tracks in it
 */

/**
 * The group key of a trace track: its trace in a combined view ("x" + its
 * position), else its process.
 * @param {Track[]} tracks @param {Track} t
 */
function processKey(tracks, t) {
  if (t.trace !== undefined && t.trace >= 0) return 'x' + t.trace;
  if (t.kind === 'process' && t.pid !== undefined && t.pid >= 0) return 'p' + t.pid;
  const p = t.parent !== undefined && t.parent >= 0 ? tracks[t.parent] : undefined;
  if (p && p.pid !== undefined && p.pid >= 0) return 'p' + p.pid;
  if (t.pid !== undefined && t.pid >= 0) return 'p' + t.pid;
  return 't' + t.id;
}

/**
 * @typedef {object} GroupInput
 * @property {number[]} rows          trace track rows in the order in force (pinned first)
 * @property {number} pinned          how many of rows are pins (kept on top, ungrouped)
 * @property {Track[]} tracks         the trace's tracks by id
 * @property {DerivedTrack[]} derived the trace's derived tracks
 * @property {Set<number>} hideDerived derived tracks not shown
 * @property {Set<string>} collapsed  group keys collapsed
 * @property {string[]} [traces]      a combined view's trace names: the tracks group by trace
 */

/**
 * The rows shown, grouped, and the groups. Groups keep the order of their
 * first track; a group with neither events nor derived tracks (a process
 * perf.data names but that never ran) goes after the others. A process
 * track without events is folded into its group's header.
 * @param {GroupInput} s
 * @returns {{rows: number[], groups: Group[]}}
 */
export function groupRows(s) {
  /** @type {Map<number, DerivedTrack[]>} */
  const under = new Map();
  /** @type {DerivedTrack[]} */
  const top = [];
  const rank = (/** @type {DerivedTrack} */ d) => {
    const k = KIND_ORDER.indexOf(d.kind);
    return k < 0 ? KIND_ORDER.length : k;
  };
  const sorted = [...s.derived].sort((a, b) => (a.kind === 'cpu' && b.kind === 'cpu' ? a.cpu - b.cpu || a.id - b.id : rank(a) - rank(b) || a.id - b.id));
  for (const d of sorted) {
    if (s.hideDerived.has(d.id)) continue;
    if (d.of >= 0 && s.tracks[d.of]) {
      let l = under.get(d.of);
      if (!l) under.set(d.of, (l = []));
      l.push(d);
    } else top.push(d);
  }
  /** @type {Group[]} */
  const groups = [];
  /** @type {number[]} */
  const out = s.rows.slice(0, s.pinned);
  const follow = (/** @type {number} */ id, /** @type {number[]} */ into) => {
    for (const d of under.get(id) ?? []) into.push(derivedRow(d.id));
  };
  for (const id of out.slice()) follow(id, out);
  for (const [key, name, list] of /** @type {[string, string, DerivedTrack[]][]} */ ([
    ['cpu', 'CPUs', top.filter((d) => d.kind === 'cpu')],
    ['global', 'global', top.filter((d) => d.kind !== 'cpu')],
  ])) {
    if (!list.length) continue;
    const g = { id: groups.length, key, name, track: -1, members: list.length };
    groups.push(g);
    out.push(groupRow(g.id));
    if (!s.collapsed.has(key)) for (const d of list) out.push(derivedRow(d.id));
  }
  /** @type {Map<string, {group: Group, rows: number[], busy: boolean}>} */
  const byKey = new Map();
  /** @type {string[]} */
  const keys = [];
  for (const id of s.rows.slice(s.pinned)) {
    const t = s.tracks[id];
    if (!t) continue;
    const key = processKey(s.tracks, t);
    let e = byKey.get(key);
    if (!e) {
      e = { group: { id: -1, key, name: '', track: -1, members: 0 }, rows: [], busy: false };
      byKey.set(key, e);
      keys.push(key);
    }
    const isProcess = t.kind === 'process' && 'p' + t.pid === key;
    if (isProcess) {
      e.group.track = id;
      e.group.name = t.name;
    }
    if (t.events !== 0) e.busy = true;
    if (!isProcess || t.events !== 0) e.rows.push(id);
    e.group.members++;
    const n = e.rows.length;
    follow(id, e.rows);
    if (e.rows.length > n) e.busy = true;
    e.group.members += e.rows.length - n;
  }
  const order = [...keys.filter((k) => byKey.get(k)?.busy), ...keys.filter((k) => !byKey.get(k)?.busy)];
  for (const key of order) {
    const e = /** @type {{group: Group, rows: number[], busy: boolean}} */ (byKey.get(key));
    const g = e.group;
    g.id = groups.length;
    if (!g.name && key.startsWith('x')) g.name = s.traces?.[Number(key.slice(1))] ?? `trace ${key.slice(1)}`;
    if (!g.name) g.name = key.startsWith('p') ? `process ${key.slice(1)}` : (s.tracks[Number(key.slice(1))]?.name ?? key);
    groups.push(g);
    out.push(groupRow(g.id));
    if (!s.collapsed.has(key)) out.push(...e.rows);
  }
  return { rows: out, groups };
}
