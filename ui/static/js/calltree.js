// @ts-check
// CallTree: a stack tree as an expandable table (role tree): name, self
// and total columns, children under their parent heaviest first (the
// tree's heavy lists; the server sends them by name). Only expanded
// nodes' children are built. Names go in with textContent. Click selects a row and its triangle toggles it; with
// the tree focused ↑ ↓ move, → expands or steps in, ← collapses or steps
// out, Enter marks the samples, the context-menu key opens the node menu.

'use strict';

import { nameOf } from './stacktree.js';
import { el } from './dom.js';

/** @typedef {import('./stacktree.js').StackTree} StackTree */

/**
 * @typedef {object} CallTreeHost
 * @property {(node: number) => void} select
 * @property {(node: number, x: number, y: number) => void} menu
 * @property {(w: number) => string} weight   a weight as text
 */

export class CallTree {
  /** @param {CallTreeHost} host @param {string} label */
  constructor(host, label) {
    this.host = host;
    this.el = el('div', { className: 'calltree' });
    this.el.tabIndex = 0;
    this.el.setAttribute('role', 'tree');
    this.el.setAttribute('aria-label', label);
    /** @type {StackTree | null} */
    this.tree = null;
    /** @type {Set<number>} */
    this.open = new Set();
    this.sel = -1;
    this.match = new Uint8Array(0);
    /** @type {number[]} rows shown, in order */
    this.rows = [];
    this.el.addEventListener('keydown', (e) => this.key(e));
    this.el.addEventListener('click', (e) => {
      const row = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest('[data-node]'));
      if (!row) return;
      const n = Number(row.dataset.node);
      if (/** @type {HTMLElement} */ (e.target).classList.contains('twisty')) this.toggle(n);
      else this.host.select(n);
    });
    this.el.addEventListener('contextmenu', (e) => {
      const row = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest('[data-node]'));
      if (!row) return;
      e.preventDefault();
      const n = Number(row.dataset.node);
      this.host.select(n);
      this.host.menu(n, e.clientX, e.clientY);
    });
  }

  /**
   * Shows a tree; a new tree opens the heaviest path a few levels deep and
   * the path to the selection.
   * @param {StackTree | null} tree @param {Uint8Array} match @param {number} sel
   */
  set(tree, match, sel) {
    if (tree !== this.tree) {
      this.open = new Set();
      if (tree && tree.parent.length) {
        this.open.add(0);
        for (let i = 0, d = 0; d < 8 && tree.heavy[i].length; d++) {
          const c = tree.heavy[i][0];
          if (tree.tot[c] < tree.tot[0] * 0.1) break;
          this.open.add(c);
          i = c;
        }
      }
    }
    this.tree = tree;
    this.match = match;
    this.sel = sel;
    if (tree && sel > 0) for (let x = tree.parent[sel]; x >= 0; x = tree.parent[x]) this.open.add(x);
    this.render();
  }

  /** @param {number} n */
  toggle(n) {
    if (this.open.has(n)) this.open.delete(n);
    else this.open.add(n);
    this.render();
  }

  render() {
    const t = this.tree;
    this.el.replaceChildren();
    this.rows = [];
    if (!t || t.parent.length === 0) return;
    const head = el('div', { className: 'ct-row ct-head' });
    for (const [c, s] of [['ct-name', 'function'], ['ct-num', 'self'], ['ct-num', 'total']]) {
      const x = el('span', { className: c });
      x.textContent = s;
      head.append(x);
    }
    this.el.append(head);
    const root = t.tot[0] || 1;
    /** @param {number} n */
    const add = (n) => {
      this.rows.push(n);
      const row = el('div', { className: 'ct-row' });
      row.dataset.node = String(n);
      row.setAttribute('role', 'treeitem');
      row.setAttribute('aria-level', String(t.depth[n] + 1));
      const hasKids = t.kids[n].length > 0;
      if (hasKids) row.setAttribute('aria-expanded', String(this.open.has(n)));
      if (n === this.sel) {
        row.classList.add('sel');
        row.setAttribute('aria-selected', 'true');
      }
      if (this.match[n]) row.classList.add('match');
      const name = el('span', { className: 'ct-name' });
      name.style.paddingLeft = `${t.depth[n] * 12}px`;
      const tw = el('span', { className: 'twisty' });
      tw.textContent = hasKids ? (this.open.has(n) ? '▾' : '▸') : ' ';
      const label = el('span');
      label.textContent = nameOf(t, n);
      name.append(tw, label);
      name.title = nameOf(t, n);
      const self = el('span', { className: 'ct-num' });
      self.textContent = `${this.host.weight(t.self[n])} ${pct(t.self[n], root)}`;
      const tot = el('span', { className: 'ct-num' });
      tot.textContent = `${this.host.weight(t.tot[n])} ${pct(t.tot[n], root)}`;
      row.append(name, self, tot);
      this.el.append(row);
      if (hasKids && this.open.has(n)) for (const c of t.heavy[n]) add(c);
    };
    add(0);
    this.el.querySelector('.sel')?.scrollIntoView?.({ block: 'nearest' });
  }

  /** @param {KeyboardEvent} e */
  key(e) {
    const t = this.tree;
    if (!t || this.rows.length === 0 || e.ctrlKey || e.metaKey || e.altKey) return;
    const cur = this.sel >= 0 && this.rows.includes(this.sel) ? this.sel : this.rows[0];
    const i = this.rows.indexOf(cur);
    let next = -1;
    switch (e.code) {
      case 'ArrowUp': next = this.rows[Math.max(0, i - 1)]; break;
      case 'ArrowDown': next = this.rows[Math.min(this.rows.length - 1, i + 1)]; break;
      case 'ArrowRight':
        if (t.kids[cur].length && !this.open.has(cur)) { this.toggle(cur); next = cur; } else next = t.heavy[cur][0] ?? cur;
        break;
      case 'ArrowLeft':
        if (this.open.has(cur) && t.kids[cur].length) { this.toggle(cur); next = cur; } else next = cur > 0 ? t.parent[cur] : cur;
        break;
      case 'Home': next = this.rows[0]; break;
      case 'End': next = this.rows[this.rows.length - 1]; break;
      case 'Enter': next = cur; break;
      case 'ContextMenu': {
        const row = this.el.querySelector(`[data-node="${cur}"]`);
        const b = row ? row.getBoundingClientRect() : this.el.getBoundingClientRect();
        e.preventDefault();
        e.stopPropagation();
        this.host.menu(cur, b.left + 20, b.bottom);
        return;
      }
      default: return;
    }
    e.preventDefault();
    e.stopPropagation();
    this.host.select(next);
  }
}

/** @param {number} x @param {number} of */
function pct(x, of) {
  return `(${((100 * x) / of).toFixed(1)}%)`;
}
