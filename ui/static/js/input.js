// @ts-check
// Input: keys, toolbar buttons, the track filter box, the wheel and pointer
// drags on the canvas, turned into the named actions (actions.js) and view
// changes; hovering a track name shows its tooltip (tip.js) and dragging the
// name column's edge resizes it. Keys are looked up in keys.js by
// KeyboardEvent.code. The pure parts (wheelIntent, dragKind, onLabelEdge)
// are tested under node (ui/jstest).

'use strict';

import { Viewport } from './viewport.js';
import { ROWS_Y, OVERVIEW_H } from './render.js';
import { lookup } from './keys.js';
import { overviewView } from './navigate.js';
import { REPLACE_MS } from './urlsync.js';
import { trackTip } from './tip.js';

/** @typedef {import('./model.js').Model} Model */

export const DRAG_PX = 4; // movement below this is a click
export const FENCE_MIN_PX = 10; // g2's minimum fence
export const EDGE_PX = 4; // the name column's edge grabs this far either side

/**
 * What input drives: the App.
 * @typedef {object} InputHost
 * @property {Model} m
 * @property {import('./page.js').UI} ui
 * @property {Record<string, () => void>} actions   by name, as keys.js and the toolbar name them
 * @property {() => number} labelW
 * @property {(vp: Viewport, url: 'push' | 'replace' | 'none') => void} setView
 * @property {() => void} schedule
 * @property {() => void} request
 * @property {(n: number) => void} scrollRows
 * @property {() => void} layout
 * @property {(id: number, reveal: boolean) => void} selectTrack
 * @property {(x: number, track: number) => void} click   a click in the plot
 * @property {(delay?: number) => void} replaceURL
 * @property {(w: number, save: boolean) => void} setLabelW  the name column's width
 * @property {import('./tip.js').Tip} tip
 * @property {(x: number, row: number, dy: number) => void} clickRow  a click on a derived row or group header (x -1: its name)
 * @property {(t: bigint) => bigint} snap  a ruler time snapped to a slice edge
 * @property {(e: PointerEvent, row: number, track: number) => boolean} [altDrag]  an Alt+drag on a row; false when it does nothing there
 */

/** @param {InputHost} app */
export function bindInput(app) {
  const { ui, m, actions } = app;
  const c = ui.canvas;

  document.addEventListener('keydown', (e) => {
    const t = /** @type {HTMLElement} */ (e.target);
    const typing = t instanceof HTMLInputElement && t.type !== 'checkbox' || t instanceof HTMLTextAreaElement;
    if (typing) {
      if (e.code === 'Escape') {
        t.blur();
        c.focus();
        e.preventDefault();
      }
      return;
    }
    if (t instanceof HTMLButtonElement && (e.code === 'Enter' || e.code === 'Space')) return;
    if (t instanceof HTMLInputElement && (e.code === 'Space' || e.code === 'Enter')) return;
    const a = lookup(e);
    if (!a || !actions[a]) return;
    if (!ui.help.hidden && a !== 'help' && a !== 'escape') return;
    e.preventDefault();
    actions[a]();
  });

  // Buttons in the toolbar name their action.
  for (const b of ui.bar.querySelectorAll('button[data-action]')) {
    const a = /** @type {HTMLElement} */ (b).dataset.action ?? '';
    b.addEventListener('click', () => actions[a]?.());
  }
  ui.helpClose.addEventListener('click', () => actions.help());

  ui.filter.addEventListener('input', () => {
    m.filter = ui.filter.value;
    app.layout();
    app.request();
    app.schedule();
    app.replaceURL(REPLACE_MS);
  });
  ui.hidden.addEventListener('click', () => actions.showTracks());

  c.addEventListener('contextmenu', (e) => e.preventDefault());
  let wheelRows = 0;
  c.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = c.getBoundingClientRect();
    const w = wheelIntent(e, e.clientX - r.left - app.labelW(), m.vp.width);
    if (w.kind === 'zoom') app.setView(m.vp.zoom(w.factor, w.x), 'replace');
    else if (w.kind === 'pan') app.setView(m.vp.pan(w.dx), 'replace');
    else {
      wheelRows += w.rows;
      const n = Math.trunc(wheelRows);
      if (n !== 0) {
        wheelRows -= n;
        app.scrollRows(n);
      }
    }
  }, { passive: false });
  c.addEventListener('pointerdown', (e) => onPointerDown(app, e));
  c.addEventListener('pointermove', (e) => {
    if (e.buttons !== 0) return;
    const r = c.getBoundingClientRect();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top;
    const L = app.labelW();
    const edge = onLabelEdge(px, py, L);
    c.style.cursor = edge ? 'col-resize' : '';
    const track = !edge && px < L && py >= ROWS_Y ? m.trackAt(py - ROWS_Y) : -1;
    const t = track >= 0 ? m.trace.tracks[track] : undefined;
    if (t) app.tip.show(`track ${track}`, trackTip(t), e.clientX, e.clientY);
    else app.tip.hide();
  });
  c.addEventListener('pointerleave', () => app.tip.hide());
  c.addEventListener('dblclick', (e) => {
    const r = c.getBoundingClientRect();
    if (onLabelEdge(e.clientX - r.left, e.clientY - r.top, app.labelW())) app.setLabelW(0, true);
  });
}

/**
 * Whether the pointer at canvas (x, y) is on the name column's right edge,
 * below the axis, where a drag resizes the column.
 * @param {number} x @param {number} y @param {number} labelW
 */
export function onLabelEdge(x, y, labelW) {
  return y >= ROWS_Y && Math.abs(x - labelW) <= EDGE_PX;
}

/**
 * What a wheel event does: Ctrl/⌘ zooms at the pointer, Shift or a mostly
 * horizontal wheel pans, else it scrolls tracks (40 px of wheel per row).
 * @param {{deltaMode: number, deltaX: number, deltaY: number, ctrlKey: boolean, metaKey: boolean, shiftKey: boolean}} e
 * @param {number} x plot x of the pointer @param {number} width plot width
 * @returns {{kind: 'zoom', factor: number, x: number} | {kind: 'pan', dx: number} | {kind: 'rows', rows: number}}
 */
export function wheelIntent(e, x, width) {
  const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
  const dy = e.deltaY * unit;
  const dx = e.deltaX * unit;
  if (e.ctrlKey || e.metaKey) return { kind: 'zoom', factor: Math.exp(dy * 0.002), x: Math.max(0, Math.min(width, x)) };
  if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) return { kind: 'pan', dx: e.shiftKey ? dy || dx : dx };
  return { kind: 'rows', rows: dy / 40 };
}

/**
 * The drag a button starts in the plot: right is the ruler, left pans, or
 * with Shift fences; others nothing.
 * @param {number} button @param {boolean} shift
 * @returns {'ruler' | 'fence' | 'pan' | ''}
 */
export function dragKind(button, shift) {
  return button === 2 ? 'ruler' : button === 0 ? (shift ? 'fence' : 'pan') : '';
}

/** @param {InputHost} app @param {PointerEvent} e */
function onPointerDown(app, e) {
  const { m, ui, actions } = app;
  const c = ui.canvas;
  c.focus();
  const r = c.getBoundingClientRect();
  const L = app.labelW();
  const px = e.clientX - r.left;
  const py = e.clientY - r.top;
  const track = m.trackAt(py - ROWS_Y);
  const row = m.rowAt(py - ROWS_Y);
  const rowDy = py - ROWS_Y - (Math.floor((py - ROWS_Y) / m.rowH)) * m.rowH;

  app.tip.hide();
  // A combined view: Alt+drag on a trace's rows moves the trace (offsets.js).
  if (e.button === 0 && e.altKey && app.altDrag && app.altDrag(e, row, track)) return;
  if (e.button === 0 && onLabelEdge(px, py, L)) {
    // Drag the name column's edge: its width follows the pointer.
    e.preventDefault();
    c.setPointerCapture(e.pointerId);
    const dx = L - px;
    const move = (/** @type {PointerEvent} */ ev) => app.setLabelW(ev.clientX - r.left + dx, false);
    const up = (/** @type {PointerEvent} */ ev) => {
      c.removeEventListener('pointermove', move);
      c.removeEventListener('pointerup', up);
      c.removeEventListener('pointercancel', up);
      app.setLabelW(ev.clientX - r.left + dx, true);
    };
    c.addEventListener('pointermove', move);
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
    return;
  }
  if (py < OVERVIEW_H && px >= L && e.button === 0) {
    app.setView(overviewView(m.vp, m.trace, (px - L) / (r.width - L)), 'push');
    return;
  }
  if (px < L) {
    if (row < -1 && e.button === 0) {
      app.clickRow(-1, row, rowDy);
      return;
    }
    if (track < 0 || e.button !== 0) return;
    m.selTrack = track;
    if (e.ctrlKey || e.metaKey) actions.sink();
    else if (e.shiftKey) actions.raise();
    else app.selectTrack(track, false);
    return;
  }
  const x0 = px - L;
  const vp0 = m.vp;
  let moved = false;
  const kind = dragKind(e.button, e.shiftKey);
  if (!kind) return;
  e.preventDefault();
  c.setPointerCapture(e.pointerId);
  if (kind === 'ruler') {
    const t = app.snap(vp0.time(x0));
    m.ruler = { t0: t, t1: t };
    m.markKey = false;
  }
  const move = (/** @type {PointerEvent} */ ev) => {
    const x = ev.clientX - r.left - L;
    if (!moved && Math.abs(x - x0) < DRAG_PX) return;
    moved = true;
    if (kind === 'pan') app.setView(vp0.pan(x0 - x), 'replace');
    else if (kind === 'fence') {
      m.fence = { x0, x1: x };
      app.schedule();
    } else {
      m.ruler = { t0: app.snap(vp0.time(x0)), t1: app.snap(vp0.time(x)) };
      app.schedule();
    }
  };
  const up = (/** @type {PointerEvent} */ ev) => {
    c.removeEventListener('pointermove', move);
    c.removeEventListener('pointerup', up);
    c.removeEventListener('pointercancel', up);
    const x = ev.clientX - r.left - L;
    if (kind === 'fence') {
      m.fence = null;
      if (Math.abs(x - x0) >= FENCE_MIN_PX) {
        const a = Math.min(x, x0), b = Math.max(x, x0);
        app.setView(Viewport.fromRange(vp0.time(a), vp0.time(b), vp0.width), 'push');
      }
      app.schedule();
      return;
    }
    if (kind === 'pan' && moved) {
      // The drag replaced the entry it started from; the next discrete step pushes.
      app.replaceURL();
      return;
    }
    if (kind === 'pan' && !moved && row < -1) app.clickRow(x0, row, rowDy);
    else if (kind === 'pan' && !moved && track >= 0) app.click(x0, track);
  };
  c.addEventListener('pointermove', move);
  c.addEventListener('pointerup', up);
  c.addEventListener('pointercancel', up);
}
