// @ts-check
// Flame: the stacks panel's flame graph on a canvas. The root spans the
// top row, callees below; widths are proportional to weight (stacktree.js
// lays the rectangles out). Labels are drawn with fillText where they fit,
// the full name and weight are the canvas's title on hover. Click selects
// a node, right click opens the panel's node menu; with the canvas
// focused, arrows move the selection (↑ parent, ↓ heaviest child, ← →
// siblings) and Enter / the context-menu key act on it.

'use strict';

import { flameRects, rectAt, nameOf, maxDepth } from './stacktree.js';
import { hashString } from './render.js';

/** @typedef {import('./stacktree.js').StackTree} StackTree */

export const FLAME_ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';

/**
 * @typedef {object} FlameHost
 * @property {(node: number) => void} select
 * @property {(node: number, x: number, y: number) => void} menu  client coordinates
 * @property {(node: number) => string} describe  the hover text of a node
 * @property {(node: number) => string} [color]  a node's fill (default: frameColor by module)
 */

export class Flame {
  /** @param {FlameHost} host */
  constructor(host) {
    this.host = host;
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'flame';
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('aria-label', 'flame graph: arrows move, Enter marks the samples, context menu key for transforms');
    /** @type {StackTree | null} */
    this.tree = null;
    /** @type {Uint8Array} */
    this.match = new Uint8Array(0);
    this.sel = -1;
    /** @type {{node: number, x: number, w: number, depth: number}[]} */
    this.rects = [];
    this.width = 0;
    const c = this.canvas;
    c.addEventListener('mousemove', (e) => {
      const n = this.at(e.offsetX, e.offsetY);
      c.title = n >= 0 ? this.host.describe(n) : '';
    });
    c.addEventListener('click', (e) => {
      const n = this.at(e.offsetX, e.offsetY);
      if (n >= 0) this.host.select(n);
    });
    c.addEventListener('contextmenu', (e) => {
      e.preventDefault();
      const n = this.at(e.offsetX, e.offsetY);
      if (n >= 0) {
        this.host.select(n);
        this.host.menu(n, e.clientX, e.clientY);
      }
    });
    c.addEventListener('keydown', (e) => this.key(e));
  }

  /** The node at canvas CSS px (x, y), or -1. @param {number} x @param {number} y */
  at(x, y) {
    return rectAt(this.rects, x, Math.floor(y / FLAME_ROW));
  }

  /**
   * @param {StackTree | null} tree @param {Uint8Array} match search hits per node
   * @param {number} sel @param {number} width CSS px
   */
  set(tree, match, sel, width) {
    this.tree = tree;
    this.match = match;
    this.sel = sel;
    this.width = Math.max(1, Math.floor(width));
    this.rects = tree ? flameRects(tree, this.width) : [];
  }

  /** @param {import('./render.js').Theme} theme */
  draw(theme) {
    const c = this.canvas;
    const t = this.tree;
    const rows = t ? maxDepth(t) + 1 : 1;
    const dpr = window.devicePixelRatio || 1;
    const w = this.width, h = rows * FLAME_ROW;
    c.style.width = `${w}px`;
    c.style.height = `${h}px`;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const ctx = /** @type {CanvasRenderingContext2D} */ (c.getContext('2d'));
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, w, h);
    if (!t) return;
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const searching = this.match.some((x) => x);
    const ellipsisW = ctx.measureText('…').width;
    for (const r of this.rects) {
      const y = r.depth * FLAME_ROW;
      const name = nameOf(t, r.node);
      const hit = this.match[r.node] === 1;
      ctx.fillStyle = hit ? theme.hit : this.host.color ? this.host.color(r.node) : frameColor(name, theme.dark, searching);
      ctx.fillRect(r.x, y, Math.max(0.5, r.w - (r.w > 3 ? 1 : 0)), FLAME_ROW - 1);
      if (r.w < 24) continue;
      ctx.fillStyle = theme.fg;
      const room = r.w - 6;
      let text = name;
      if (ctx.measureText(text).width > room) {
        // Cut by the average glyph width, then trim to fit.
        const avg = ctx.measureText(text).width / text.length;
        let n = Math.max(0, Math.floor((room - ellipsisW) / avg));
        while (n > 0 && ctx.measureText(text.slice(0, n)).width + ellipsisW > room) n--;
        if (n < 2) continue;
        text = text.slice(0, n) + '…';
      }
      ctx.fillText(text, r.x + 3, y + FLAME_ROW / 2);
    }
    const s = this.rects.find((r) => r.node === this.sel);
    if (s) {
      ctx.strokeStyle = theme.sel;
      ctx.lineWidth = 2;
      ctx.strokeRect(s.x + 1, s.depth * FLAME_ROW + 1, Math.max(1, s.w - 2), FLAME_ROW - 3);
    }
  }

  /** Keyboard navigation. @param {KeyboardEvent} e */
  key(e) {
    const t = this.tree;
    if (!t || t.parent.length === 0 || e.ctrlKey || e.metaKey || e.altKey) return;
    const cur = this.sel >= 0 ? this.sel : 0;
    const shown = (/** @type {number} */ n) => this.rects.some((r) => r.node === n);
    let next = -1;
    switch (e.code) {
      case 'ArrowUp': next = cur > 0 ? t.parent[cur] : cur; break;
      case 'ArrowDown': next = t.kids[cur].find(shown) ?? cur; break;
      case 'ArrowLeft': case 'ArrowRight': {
        const p = t.parent[cur];
        if (p < 0) { next = cur; break; }
        const sib = t.kids[p].filter(shown);
        const i = sib.indexOf(cur) + (e.code === 'ArrowLeft' ? -1 : 1);
        next = sib[Math.max(0, Math.min(sib.length - 1, i))] ?? cur;
        break;
      }
      case 'Enter': next = cur; break;
      case 'ContextMenu': {
        const r = this.rects.find((x) => x.node === cur);
        const b = this.canvas.getBoundingClientRect();
        this.host.menu(cur, b.left + (r ? r.x : 0), b.top + (r ? (r.depth + 1) * FLAME_ROW : 0));
        e.preventDefault();
        e.stopPropagation();
        return;
      }
      default: return;
    }
    e.preventDefault();
    e.stopPropagation();
    this.host.select(next);
  }
}

/**
 * A frame's colour: warm hues hashed from its module, so one module's
 * frames look alike; muted while a search highlights others.
 * @param {string} name @param {boolean} dark @param {boolean} muted
 */
export function frameColor(name, dark, muted) {
  const i = name.indexOf('!');
  const h = hashString(i > 0 ? name.slice(0, i) : name);
  const hue = 10 + (h % 50);
  const light = 50 + ((h >>> 8) % 15);
  const sat = muted ? 8 : 70;
  return `hsl(${hue} ${sat}% ${dark ? light - 18 : light + 10}%)`;
}
