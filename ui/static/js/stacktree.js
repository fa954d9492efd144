// @ts-check
// Stack trees: the stacks endpoint's answer (web/PROTOCOL.md: names and
// preorder nodes [parent, name, total, self], node 0 the root) as typed
// arrays, and the pure helpers the panel needs: children, subtrees, paths
// that survive a reload, flame-graph rectangles, search matches. Also the
// aggregation itself (samples → tree, with views, transforms and pruning),
// which the in-browser fake source answers with. No DOM: tested under node
// (ui/jstest/stacktree.test.js).

'use strict';

import { applyTransforms } from './stacktf.js';

/** @typedef {import('./stacktf.js').Transform} Transform */

/**
 * @typedef {object} StackTree
 * @property {number} total     the root's weight
 * @property {number} samples   samples counted
 * @property {string} unit      "samples", "ns" or a field's unit
 * @property {string[]} names
 * @property {Int32Array} parent  -1 for the root
 * @property {Int32Array} name    index into names
 * @property {Float64Array} tot   weight of the node and below
 * @property {Float64Array} self  weight of the node itself
 * @property {Int32Array} end     one past the node's last descendant (preorder)
 * @property {Int32Array} depth
 * @property {number[][]} kids    children, in the answer's order (the server's: by name, so
 *                               a flame graph keeps its layout as the range changes)
 * @property {number[][]} heavy   children heaviest first (then in the answer's order): the call trees' order
 * @property {number} pruned    nodes the server left out (too narrow)
 *
 * @typedef {object} StackJSON
 * @property {number} total
 * @property {number} samples
 * @property {string} unit
 * @property {string[]} names
 * @property {[number, number, number, number][]} nodes
 * @property {number} pruned
 */

/** The separator of a node path in the URL (`sn`). */
export const PATH_SEP = '\n';

/**
 * Reads the endpoint's JSON; throws on a malformed answer.
 * @param {any} j @returns {StackTree}
 */
export function fromJSON(j) {
  const names = Array.isArray(j?.names) ? j.names.map(String) : [];
  const nodes = Array.isArray(j?.nodes) ? j.nodes : [];
  const n = nodes.length;
  const parent = new Int32Array(n), name = new Int32Array(n), depth = new Int32Array(n), end = new Int32Array(n);
  const tot = new Float64Array(n), self = new Float64Array(n);
  /** @type {number[][]} */
  const kids = Array.from({ length: n }, () => []);
  for (let i = 0; i < n; i++) {
    const r = nodes[i];
    const p = Number(r?.[0]), x = Number(r?.[1]);
    if (!Array.isArray(r) || !Number.isInteger(p) || !Number.isInteger(x) || x < 0 || x >= names.length ||
        (i === 0 ? p !== -1 : p < 0 || p >= i)) {
      throw new Error(`stacks: bad node ${i}`);
    }
    parent[i] = p;
    name[i] = x;
    tot[i] = Number(r[2]) || 0;
    self[i] = Number(r[3]) || 0;
    if (p >= 0) {
      depth[i] = depth[p] + 1;
      kids[p].push(i);
    }
  }
  // Preorder: a node's subtree ends where the next node not below it starts.
  for (let i = n - 1; i >= 0; i--) {
    const k = kids[i];
    end[i] = k.length ? end[k[k.length - 1]] : i + 1;
  }
  const heavy = kids.map((k) => k.slice().sort((a, b) => tot[b] - tot[a] || a - b));
  return {
    total: Number(j.total) || (n ? tot[0] : 0), samples: Number(j.samples) || 0, unit: String(j.unit ?? 'samples'),
    names, parent, name, tot, self, end, depth, kids, heavy, pruned: Number(j.pruned) || 0,
  };
}

/** A node's frame name. @param {StackTree} t @param {number} i */
export function nameOf(t, i) {
  return t.names[t.name[i]] ?? '';
}

/** The names from the root's child down to node i. @param {StackTree} t @param {number} i */
export function pathOf(t, i) {
  /** @type {string[]} */
  const p = [];
  for (let x = i; x > 0; x = t.parent[x]) p.push(nameOf(t, x));
  return p.reverse();
}

/** The node at a path of names, or -1 (0 for the empty path). @param {StackTree} t @param {readonly string[]} path */
export function findPath(t, path) {
  if (t.parent.length === 0) return -1;
  let i = 0;
  for (const n of path) {
    const next = t.kids[i].find((k) => nameOf(t, k) === n);
    if (next === undefined) return -1;
    i = next;
  }
  return i;
}

/** Deepest node depth. @param {StackTree} t */
export function maxDepth(t) {
  let d = 0;
  for (const x of t.depth) if (x > d) d = x;
  return d;
}

/**
 * Nodes whose name holds q (case-insensitive); empty q matches none.
 * @param {StackTree} t @param {string} q @returns {Uint8Array}
 */
export function matchNodes(t, q) {
  const m = new Uint8Array(t.parent.length);
  const s = q.trim().toLowerCase();
  if (!s) return m;
  const hit = t.names.map((n) => n.toLowerCase().includes(s));
  for (let i = 0; i < m.length; i++) m[i] = hit[t.name[i]] ? 1 : 0;
  return m;
}

/**
 * The flame graph's rectangles: x and width in px of a width-px wide
 * graph, the root spanning it, children side by side from their parent's
 * left edge in the answer's order; nodes narrower than minW px (and their
 * subtrees) are left out.
 * @param {StackTree} t @param {number} width @param {number} [minW]
 * @returns {{node: number, x: number, w: number, depth: number}[]}
 */
export function flameRects(t, width, minW = 0.5) {
  /** @type {{node: number, x: number, w: number, depth: number}[]} */
  const out = [];
  const n = t.parent.length;
  if (n === 0 || !(t.tot[0] > 0)) return out;
  const scale = width / t.tot[0];
  const x = new Float64Array(n);
  const next = new Float64Array(n); // left edge of a node's next child
  for (let i = 0; i < n; ) {
    const p = t.parent[i];
    if (p >= 0) {
      x[i] = next[p];
      next[p] += t.tot[i] * scale;
    }
    next[i] = x[i];
    const w = t.tot[i] * scale;
    if (w < minW) {
      i = t.end[i];
      continue;
    }
    out.push({ node: i, x: x[i], w, depth: t.depth[i] });
    i++;
  }
  return out;
}

/** The node whose rectangle holds (x, depth), or -1. @param {{node: number, x: number, w: number, depth: number}[]} rects @param {number} x @param {number} depth */
export function rectAt(rects, x, depth) {
  for (const r of rects) if (r.depth === depth && x >= r.x && x < r.x + r.w) return r.node;
  return -1;
}

/**
 * The path a view gives one stack (root first): top-down, bottom-up
 * (leaf first), or a function's callers (from it up to the root) or
 * callees (from its outermost call down); null when the stack is not in
 * the view.
 * @param {string[]} s @param {string} view
 */
export function viewPath(s, view) {
  if (view === 'top') return s;
  if (view === 'bottom') return s.slice().reverse();
  const m = /^(callers|callees):(.+)$/s.exec(view);
  if (!m) return null;
  const i = s.indexOf(m[2]);
  if (i < 0) return null;
  return m[1] === 'callers' ? s.slice(0, i + 1).reverse() : s.slice(i);
}

/**
 * Aggregates samples as the stacks endpoint does (render/stacks):
 * transforms, then the view's path, merged into a tree under "all";
 * children in name order; nodes under 1/width of the root's weight pruned
 * (width 0: none); total and samples of every sample given, the root's
 * total of those the transforms and view kept.
 * leaf[k] is the deepest kept node of sample k (-1: not counted), so the
 * samples under node i are those with leaf in [i, end(i)).
 * @param {{stack: string[], weight: number}[]} samples  stacks root first
 * @param {{view: string, tf: Transform[], width: number, unit?: string}} opt
 * @returns {{json: StackJSON, leaf: Int32Array}}
 */
export function aggregate(samples, opt) {
  const names = ['all'];
  /** @type {Map<string, number>} */
  const ids = new Map([['all', 0]]);
  const nameID = (/** @type {string} */ s) => {
    let id = ids.get(s);
    if (id === undefined) {
      id = names.length;
      names.push(s);
      ids.set(s, id);
    }
    return id;
  };
  /** @type {{name: number, tot: number, self: number, kids: Map<number, number>}[]} */
  const trie = [{ name: 0, tot: 0, self: 0, kids: new Map() }];
  const at = new Int32Array(samples.length).fill(-1);
  let total = 0;
  samples.forEach((smp, k) => {
    const w = smp.weight;
    total += w;
    const t = applyTransforms(smp.stack, opt.tf);
    const p = t && viewPath(t, opt.view);
    if (!p) return;
    let cur = 0;
    trie[0].tot += w;
    for (const f of p) {
      const id = nameID(f);
      let c = trie[cur].kids.get(id);
      if (c === undefined) {
        c = trie.length;
        trie.push({ name: id, tot: 0, self: 0, kids: new Map() });
        trie[cur].kids.set(id, c);
      }
      cur = c;
      trie[cur].tot += w;
    }
    trie[cur].self += w;
    at[k] = cur;
  });
  const rootTotal = trie[0].tot;
  /** @type {[number, number, number, number][]} */
  const nodes = [];
  const newID = new Int32Array(trie.length).fill(-1);
  let pruned = 0;
  /** @param {number} x @param {number} parent */
  const emit = (x, parent) => {
    const n = trie[x];
    newID[x] = nodes.length;
    nodes.push([parent, n.name, n.tot, n.self]);
    const kids = [...n.kids.values()].sort((a, b) => (names[trie[a].name] < names[trie[b].name] ? -1 : 1));
    const me = newID[x];
    for (const c of kids) {
      if (opt.width > 0 && !(trie[c].tot > 0 && trie[c].tot * opt.width >= rootTotal)) {
        pruned += countNodes(trie, c);
        continue;
      }
      emit(c, me);
    }
  };
  emit(0, -1);
  // A pruned node's samples belong to its nearest kept ancestor.
  const parentOf = new Int32Array(trie.length).fill(-1);
  trie.forEach((n, i) => { for (const c of n.kids.values()) parentOf[c] = i; });
  const leaf = at.map((x) => {
    while (x >= 0 && newID[x] < 0) x = parentOf[x];
    return x >= 0 ? newID[x] : -1;
  });
  return { json: { total, samples: samples.length, unit: opt.unit ?? 'samples', names, nodes, pruned }, leaf };
}

/** @param {{kids: Map<number, number>}[]} trie @param {number} x */
function countNodes(trie, x) {
  let n = 1;
  for (const c of trie[x].kids.values()) n += countNodes(trie, c);
  return n;
}
