// @ts-check
// Span drawing: the derived-track rows, the group headers and the flow
// arrows on the timeline's canvas, for render.js. CPU tracks draw the
// running thread as slices coloured by thread, named when there is room;
// thread-state tracks colour each state (spans.js STATES, with a legend);
// slice tracks stack their depths; summaries (slices shorter than a
// bucket) are as tall as their busy fraction; counter tracks draw per
// pixel column the band from the minimum to the maximum, so a peak stays
// visible at any zoom. Where things fall is spans.js's (tested under node);
// this module only paints.

'use strict';

import { layoutItems, counterBands, counterY, stateColor, nameHash, STATES } from './spans.js';
import { rowKind } from './groups.js';
import { ROWS_Y, rgbOf } from './render.js';

/** @typedef {import('./render.js').Scene} Scene */
/** @typedef {import('./render.js').Renderer} Renderer */

const MIN_TEXT_PX = 24; // a slice narrower than this gets no name

/**
 * The colour of a slice: CPU tracks by the running thread, states by
 * state, others by name.
 * @param {string} kind @param {import('./spans.js').SpanItem} it @param {boolean} dark
 */
export function sliceColor(kind, it, dark) {
  if (kind === 'state') return stateColor(it.name, dark);
  const [r, g, b] = rgbOf(kind === 'cpu' && it.thread >= 0 ? nameHash('t' + it.thread) : nameHash(it.name), dark);
  return `rgb(${r} ${g} ${b})`;
}

/**
 * The derived rows and group headers of the rows shown, in the plot
 * (the caller has translated to the plot's left edge and clipped).
 * @param {Renderer} rd @param {Scene} s @param {number[]} shown
 */
export function drawSpanRows(rd, s, shown) {
  const ctx = rd.ctx;
  const th = s.theme;
  const f = s.spans ?? null;
  let states = false;
  /** @type {Map<string, string>} colours by kind and thread or name, for this frame */
  const colors = new Map();
  const colorOf = (/** @type {string} */ kind, /** @type {import('./spans.js').SpanItem} */ it) => {
    const key = kind === 'cpu' ? 'c' + it.thread : kind + ':' + it.name;
    let c = colors.get(key);
    if (c === undefined) colors.set(key, (c = sliceColor(kind, it, th.dark)));
    return c;
  };
  for (let r = 0; r < shown.length; r++) {
    const k = rowKind(shown[r]);
    const y0 = ROWS_Y + r * s.rowH;
    if (k.kind === 'group') {
      ctx.fillStyle = th.labelBg;
      ctx.fillRect(0, y0, s.vp.width, s.rowH);
      ctx.fillStyle = th.grid;
      ctx.fillRect(0, y0 + s.rowH - 1, s.vp.width, 1);
      continue;
    }
    if (k.kind !== 'derived') continue;
    const dt = s.derived?.get(k.id);
    if (dt?.kind === 'state') states = true;
    const st = f?.tracks.get(k.id);
    if (!dt || !st) continue;
    // Clear the instant-track row line under the slices.
    ctx.fillStyle = r % 2 === 1 ? th.rowAlt : th.bg;
    ctx.fillRect(0, y0 + 1, s.vp.width, s.rowH - 1);
    if (dt.kind === 'counter') {
      drawCounter(rd, s, st, f, y0);
      continue;
    }
    const boxes = layoutItems(st.items, st.depths, s.vp, s.rowH);
    ctx.textAlign = 'left';
    for (const b of boxes) {
      const it = b.item;
      if (s.sliceHidden && s.sliceHidden(dt.name, it.name)) continue;
      ctx.globalAlpha = it.summary ? 0.75 : 1;
      ctx.fillStyle = colorOf(dt.kind, it);
      const w = Math.max(1, b.x1 - b.x0);
      ctx.fillRect(b.x0, y0 + b.y, w, b.h);
      ctx.globalAlpha = 1;
      const sel = s.selSlice && s.selSlice.track === k.id && s.selSlice.slice === it.slice && !it.summary;
      const hit = s.sliceMatch && s.sliceMatch(it.name);
      if (sel || hit) {
        ctx.strokeStyle = sel ? th.sel : th.hit;
        ctx.lineWidth = 2;
        ctx.strokeRect(b.x0 + 1, y0 + b.y + 1, Math.max(1, w - 2), Math.max(1, b.h - 2));
        ctx.lineWidth = 1;
      }
      if (!it.summary && w >= MIN_TEXT_PX && b.h >= 9 && dt.kind !== 'state') {
        const x = Math.max(0, b.x0) + 3;
        const room = Math.min(b.x1, s.vp.width) - x - 2;
        if (room >= 12) {
          const text = dt.kind === 'cpu' && it.thread >= 0 ? (s.meta.tracks[it.thread]?.name ?? it.name) : it.name;
          ctx.fillStyle = th.dark ? '#000' : '#fff';
          ctx.fillText(rd.fit(text, room), x, y0 + b.y + b.h / 2 + 0.5);
        }
      }
    }
  }
  if (states) drawLegend(rd, s);
}

/**
 * A counter row: the min–max band per pixel column (darker) over the
 * area up to the maximum (lighter), scaled to the values in view; the
 * maximum written at the left.
 * @param {Renderer} rd @param {Scene} s @param {import('./spans.js').SpanTrack} st
 * @param {import('./spans.js').SpanFrame} f @param {number} y0
 */
function drawCounter(rd, s, st, f, y0) {
  const ctx = rd.ctx;
  const { bands, lo, hi } = counterBands(st.counters, f.start, f.res, s.vp, f.enter.get(st.track.id));
  const [r, g, b] = rgbOf(nameHash(st.track.name), s.theme.dark);
  const base = counterY(Math.min(0, lo), lo, hi, s.rowH);
  ctx.fillStyle = `rgb(${r} ${g} ${b} / 0.35)`;
  for (const c of bands) {
    const yMax = counterY(c.max, lo, hi, s.rowH);
    ctx.fillRect(c.x, y0 + yMax, 1, Math.max(1, base - yMax));
  }
  ctx.fillStyle = `rgb(${r} ${g} ${b})`;
  for (const c of bands) {
    const yMax = counterY(c.max, lo, hi, s.rowH);
    const yMin = counterY(c.min, lo, hi, s.rowH);
    ctx.fillRect(c.x, y0 + yMax, 1, Math.max(1, yMin - yMax + 1));
  }
  if (s.rowH >= 12 && bands.length) {
    ctx.fillStyle = s.theme.muted;
    ctx.textAlign = 'left';
    ctx.fillText(`max ${formatValue(hi)}`, 4, y0 + 7);
  }
}

/** A counter value, short. @param {number} v */
export function formatValue(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toPrecision(3) + 'G';
  if (a >= 1e6) return (v / 1e6).toPrecision(3) + 'M';
  if (a >= 1e4) return (v / 1e3).toPrecision(3) + 'k';
  return Number.isInteger(v) ? String(v) : v.toPrecision(4);
}

/**
 * The thread-state legend, at the plot's bottom right.
 * @param {Renderer} rd @param {Scene} s
 */
function drawLegend(rd, s) {
  const ctx = rd.ctx;
  const shown = STATES.slice(0, 5);
  let w = 8;
  for (const st of shown) w += rd.measure(st.name) + 20;
  const h = 16;
  const x0 = Math.max(0, s.vp.width - w - 4);
  const y0 = rd.cssH - h - 4;
  ctx.fillStyle = s.theme.popupBg;
  ctx.fillRect(x0, y0, w, h);
  ctx.strokeStyle = s.theme.grid;
  ctx.strokeRect(Math.floor(x0) + 0.5, y0 + 0.5, Math.round(w), h);
  let x = x0 + 6;
  ctx.textAlign = 'left';
  for (const st of shown) {
    ctx.fillStyle = stateColor(st.name, s.theme.dark);
    ctx.fillRect(x, y0 + 4, 9, 9);
    ctx.fillStyle = s.theme.fg;
    ctx.fillText(st.name, x + 12, y0 + h / 2 + 0.5);
    x += rd.measure(st.name) + 20;
  }
}

/**
 * The names of derived rows (indented, muted) and group headers (▾/▸,
 * the number of tracks), over the name column.
 * @param {Renderer} rd @param {Scene} s @param {number[]} shown
 */
export function drawSpanLabels(rd, s, shown) {
  const ctx = rd.ctx;
  const th = s.theme;
  ctx.textAlign = 'left';
  for (let r = 0; r < shown.length; r++) {
    const k = rowKind(shown[r]);
    if (k.kind !== 'derived' && k.kind !== 'group') continue;
    const y = ROWS_Y + r * s.rowH + s.rowH / 2;
    if (s.rowH < 9) continue;
    if (k.kind === 'group') {
      const g = s.groups?.[k.id];
      if (!g) continue;
      ctx.fillStyle = th.fg;
      const mark = s.collapsed?.has(g.key) ? '▸ ' : '▾ ';
      ctx.fillText(rd.fit(`${mark}${g.name} (${g.members})`, s.labelW - 8), 3, y + 0.5);
      continue;
    }
    const dt = s.derived?.get(k.id);
    if (!dt) continue;
    ctx.fillStyle = s.selDerived === k.id ? th.sel : th.muted;
    const name = dt.kind === 'state' && dt.of >= 0 ? 'state' : dt.name;
    ctx.fillText(rd.fit(name, s.labelW - 22), 16, y + 0.5);
  }
}

/**
 * Flow arrows: from the selected event to each event related to it, and
 * (the flows toggle) along each chain of related events in view. An end
 * on a row not shown is left out.
 * @param {Renderer} rd @param {Scene} s @param {number[]} shown
 */
export function drawFlows(rd, s, shown) {
  const ctx = rd.ctx;
  /** @type {Map<number, number>} */
  const row = new Map();
  shown.forEach((id, r) => { if (id >= 0) row.set(id, r); });
  const at = (/** @type {{time: bigint, track: number}} */ e) => {
    const r = row.get(e.track);
    if (r === undefined) return null;
    return { x: s.vp.x(e.time), y: ROWS_Y + r * s.rowH + s.rowH / 2 };
  };
  ctx.strokeStyle = s.theme.accent;
  ctx.fillStyle = s.theme.accent;
  ctx.lineWidth = 1.5;
  for (const chain of s.allFlows ?? []) {
    for (let i = 1; i < chain.length; i++) {
      const a = at(chain[i - 1]);
      const b = at(chain[i]);
      if (a && b) arrow(ctx, a, b);
    }
  }
  const from = s.selEvent ? at(s.selEvent) : null;
  if (from && s.flows) {
    ctx.strokeStyle = s.theme.sel;
    ctx.fillStyle = s.theme.sel;
    for (const e of s.flows) {
      if (e.ref === s.selEvent?.ref) continue;
      const b = at(e);
      if (b) arrow(ctx, from, b);
    }
  }
  ctx.lineWidth = 1;
}

/**
 * An arrow from a to b, bent so that arrows between events on one row
 * stay visible.
 * @param {CanvasRenderingContext2D} ctx @param {{x: number, y: number}} a @param {{x: number, y: number}} b
 */
function arrow(ctx, a, b) {
  const mx = (a.x + b.x) / 2;
  const my = Math.min(a.y, b.y) - (Math.abs(a.y - b.y) < 4 ? 14 : 0);
  ctx.beginPath();
  ctx.moveTo(a.x, a.y);
  ctx.quadraticCurveTo(mx, my, b.x, b.y);
  ctx.stroke();
  const ang = Math.atan2(b.y - my, b.x - mx);
  ctx.beginPath();
  ctx.moveTo(b.x, b.y);
  ctx.lineTo(b.x - 7 * Math.cos(ang - 0.4), b.y - 7 * Math.sin(ang - 0.4));
  ctx.lineTo(b.x - 7 * Math.cos(ang + 0.4), b.y - 7 * Math.sin(ang + 0.4));
  ctx.fill();
}
