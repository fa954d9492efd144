// @ts-check
// Entry point of the compare page (/compare?a=…&b=…, web/PROTOCOL.md §8):
// asks the API for the compare table and the differential stack tree of
// the sides in the page's own query, waits while a side is being indexed,
// and shows them: the table (sort by a heading, filter box) and the flame
// graph (flame.js) coloured by the change in self weight. The data lives
// in comparetable.js and compareflame.js; window.__compare exposes the
// state to the browser tests.

'use strict';

import { COLUMNS, parseRows, sortRows, filterRows, formatValue, formatDelta, formatRel, duration } from './comparetable.js';
import { fromDiffJSON, deltaColor, selfDelta, describeNode } from './compareflame.js';
import { Flame } from './flame.js';
import { readTheme } from './page.js';

/** @typedef {import('./comparetable.js').Row} Row */
/** @typedef {import('./comparetable.js').Column} Column */

const RETRY_MS = 500; // while a side is being indexed
const MAX_SHOWN = 2000; // table rows in the DOM

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const status = $('compare-status');
const flameStatus = $('compare-flame-status');
const filter = /** @type {HTMLInputElement} */ ($('compare-filter'));
const table = /** @type {HTMLTableElement} */ ($('compare-table'));
const count = $('compare-count');
const flameBox = $('compare-flame');

// The sides are the page's own query: pass on exactly its side parameters.
const sides = new URLSearchParams();
for (const [k, v] of new URLSearchParams(location.search)) {
  if (/^[ab](from|to)?$/.test(k)) sides.set(k, v);
}

const state = {
  /** @type {Row[]} */ rows: [],
  /** @type {Row[]} */ shown: [],
  total: 0,
  /** @type {Column} */ sort: /** @type {Column} */ ('rank'),
  desc: false,
  tableReady: false,
  /** @type {import('./compareflame.js').DiffTree | null} */ diff: null,
  flameReady: false,
  error: '',
  /** @type {Flame | null} */ flame: null,
};
/** @type {any} */ (window).__compare = state;

/**
 * GETs an API path, waiting while a side is being indexed (409).
 * @param {string} path @param {(msg: string) => void} progress
 * @returns {Promise<any>}
 */
async function getJSON(path, progress) {
  for (;;) {
    const r = await fetch(path);
    const j = await r.json().catch(() => ({}));
    if (r.ok) return j;
    if (r.status === 409) {
      const p = j.progress;
      progress(`Indexing${p && Number.isFinite(p.percent) ? ` (${Math.floor(p.percent)}%)` : ''}…`);
      await new Promise((res) => setTimeout(res, RETRY_MS));
      continue;
    }
    throw new Error(j.error || `${r.status} ${r.statusText}`);
  }
}

/** A side's range relative to its trace's first event. @param {any} s */
function rangeText(s) {
  const first = BigInt(s.first), from = BigInt(s.from), to = BigInt(s.to);
  return `${s.name}, ${duration(Number(from - first))} to ${duration(Number(to - first))}`;
}

function renderHead() {
  const tr = document.createElement('tr');
  for (const [col, label, numeric] of COLUMNS) {
    const th = document.createElement('th');
    if (numeric) th.className = 'num';
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.col = col;
    b.textContent = label + (state.sort === col ? (state.desc ? ' ▼' : ' ▲') : '');
    b.title = `sort by ${label} (again: the other way; a third time: by significance)`;
    th.setAttribute('aria-sort', state.sort === col ? (state.desc ? 'descending' : 'ascending') : 'none');
    b.addEventListener('click', () => {
      if (state.sort !== col) {
        state.sort = col;
        state.desc = numeric; // numbers largest first
      } else if (state.desc === numeric) {
        state.desc = !state.desc;
      } else {
        state.sort = 'rank';
        state.desc = false;
      }
      renderBody();
    });
    th.append(b);
    tr.append(th);
  }
  table.tHead?.replaceChildren(tr);
}

function renderBody() {
  renderHead();
  state.shown = sortRows(filterRows(state.rows, filter.value), state.sort, state.desc);
  const body = table.tBodies[0];
  const frag = document.createDocumentFragment();
  for (const r of state.shown.slice(0, MAX_SHOWN)) {
    const tr = document.createElement('tr');
    tr.className = r.delta > 0 ? 'up' : r.delta < 0 ? 'down' : 'same';
    const cells = [
      [r.score.toPrecision(3), 'num'], [r.kind, ''], [r.key, 'key'], [r.measure, ''],
      [formatValue(r, r.a), 'num'], [formatValue(r, r.b), 'num'], [formatDelta(r), 'num delta'], [formatRel(r), 'num delta'],
    ];
    for (const [text, cls] of cells) {
      const td = document.createElement('td');
      if (cls) td.className = cls;
      td.textContent = text;
      tr.append(td);
    }
    tr.title = `${r.kind} ${r.key} ${r.measure}: A ${formatValue(r, r.a)}, B ${formatValue(r, r.b)}`;
    frag.append(tr);
  }
  body.replaceChildren(frag);
  const of = state.total > state.rows.length ? ` (the ${state.rows.length} most significant of ${state.total})` : '';
  count.textContent = `${Math.min(state.shown.length, MAX_SHOWN)} of ${state.rows.length} rows${of}`;
}

async function loadTable() {
  try {
    const j = await getJSON(`/api/compare?${sides}`, (m) => (status.textContent = m));
    state.rows = parseRows(j);
    state.total = Number(j.total) || state.rows.length;
    $('side-a').textContent = `A: ${rangeText(j.a)}`;
    $('side-b').textContent = `B: ${rangeText(j.b)}`;
    status.textContent = j.notice ? String(j.notice) : '';
    renderBody();
    state.tableReady = true;
  } catch (err) {
    state.error = err instanceof Error ? err.message : String(err);
    status.textContent = `The comparison failed: ${state.error}`;
  }
}

function drawFlame() {
  const d = state.diff;
  if (!d) return;
  const theme = readTheme();
  if (!state.flame) {
    state.flame = new Flame({
      select: (n) => {
        if (!state.flame || !state.diff) return;
        state.flame.sel = n;
        state.flame.draw(readTheme());
      },
      menu: () => {},
      describe: (n) => (state.diff ? describeNode(state.diff, n) : ''),
      color: (n) => (state.diff ? deltaColor(selfDelta(state.diff, n), state.diff.maxDelta, theme.dark) : ''),
    });
    flameBox.append(state.flame.canvas);
  }
  state.flame.set(d.tree, new Uint8Array(d.tree.parent.length), state.flame.sel, flameBox.clientWidth || 800);
  state.flame.draw(theme);
}

async function loadFlame() {
  const width = Math.max(100, Math.min(100000, Math.floor(flameBox.clientWidth || 800)));
  try {
    const j = await getJSON(`/api/compare/stacks?${sides}&width=${width}`, (m) => (flameStatus.textContent = m));
    state.diff = fromDiffJSON(j);
    const d = state.diff;
    flameStatus.textContent = `A: ${d.samplesA.toLocaleString('en-US')} samples, B: ${d.samplesB.toLocaleString('en-US')}` +
      (d.partial ? ' (cut off at the deadline: part of the range only)' : '') +
      (d.samplesA + d.samplesB === 0 ? ': no samples in either range' : '');
    drawFlame();
  } catch (err) {
    flameStatus.textContent = `No stacks to compare: ${err instanceof Error ? err.message : String(err)}`;
  }
  state.flameReady = true;
}

filter.addEventListener('input', () => renderBody());
let resize = 0;
window.addEventListener('resize', () => {
  clearTimeout(resize);
  resize = window.setTimeout(drawFlame, 100);
});
loadTable();
loadFlame();
