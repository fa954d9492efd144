// @ts-check
// The differential flame graph's data, no DOM: GET /api/compare/stacks's
// tree (web/PROTOCOL.md §8: nodes [parent, name, totalA, selfA, totalB,
// selfB], fractions of each side's total) as a StackTree that flame.js
// draws (each node as wide as the mean of its two fractions), with both
// sides' weights kept beside it; the colour of a change in self weight
// (red: more in B, blue: less) and the hover text. Tested under node
// (ui/jstest/compareflame.test.js).

'use strict';

import { fromJSON, nameOf } from './stacktree.js';

/**
 * @typedef {object} DiffTree
 * @property {import('./stacktree.js').StackTree} tree  widths: the mean of both fractions
 * @property {Float64Array} totA  fractions of side A's total
 * @property {Float64Array} selfA
 * @property {Float64Array} totB
 * @property {Float64Array} selfB
 * @property {number} totalA  side A's weight (in unit)
 * @property {number} totalB
 * @property {number} samplesA
 * @property {number} samplesB
 * @property {string} unit
 * @property {number} maxDelta  the largest |selfB − selfA| of any node
 * @property {boolean} partial
 */

/**
 * Reads the endpoint's JSON; throws on a malformed answer.
 * @param {any} j @returns {DiffTree}
 */
export function fromDiffJSON(j) {
  const nodes = Array.isArray(j?.nodes) ? j.nodes : [];
  const n = nodes.length;
  const totA = new Float64Array(n), selfA = new Float64Array(n), totB = new Float64Array(n), selfB = new Float64Array(n);
  /** @type {[number, number, number, number][]} */
  const mean = [];
  let maxDelta = 0;
  for (let i = 0; i < n; i++) {
    const r = nodes[i];
    if (!Array.isArray(r) || r.length !== 6) throw new Error(`compare stacks: bad node ${i}`);
    const f = (/** @type {number} */ k) => {
      const x = Number(r[k]);
      return Number.isFinite(x) && x >= 0 ? x : 0;
    };
    totA[i] = f(2); selfA[i] = f(3); totB[i] = f(4); selfB[i] = f(5);
    mean.push([Number(r[0]), Number(r[1]), (totA[i] + totB[i]) / 2, (selfA[i] + selfB[i]) / 2]);
    maxDelta = Math.max(maxDelta, Math.abs(selfB[i] - selfA[i]));
  }
  const tree = fromJSON({ total: n ? mean[0][2] : 0, samples: 0, unit: String(j.unit ?? 'samples'), names: j.names, nodes: mean, pruned: j.pruned });
  return {
    tree, totA, selfA, totB, selfB,
    totalA: Number(j.total_a) || 0, totalB: Number(j.total_b) || 0,
    samplesA: Number(j.samples_a) || 0, samplesB: Number(j.samples_b) || 0,
    unit: String(j.unit ?? 'samples'), maxDelta, partial: j.partial === true,
  };
}

/** A node's change in self weight, B − A, as a fraction. @param {DiffTree} d @param {number} i */
export function selfDelta(d, i) {
  return d.selfB[i] - d.selfA[i];
}

/**
 * The colour of a change: red for more in B, blue for less, saturated by
 * its size against the largest change of the tree; grey for none.
 * @param {number} delta @param {number} maxDelta @param {boolean} dark
 */
export function deltaColor(delta, maxDelta, dark) {
  if (!(maxDelta > 0) || delta === 0) return dark ? 'hsl(220 6% 32%)' : 'hsl(220 6% 84%)';
  const k = Math.min(1, Math.abs(delta) / maxDelta);
  const hue = delta > 0 ? 2 : 220;
  const sat = Math.round(25 + 60 * k);
  const light = dark ? Math.round(30 + 12 * k) : Math.round(88 - 30 * k);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

/** A fraction as a percentage with 2 decimals. @param {number} f */
export function pct(f) {
  return `${(100 * f).toFixed(2)}%`;
}

/**
 * The hover text of a node: its name and both sides' shares (and
 * weights), self and total, and the change.
 * @param {DiffTree} d @param {number} i
 */
export function describeNode(d, i) {
  const w = (/** @type {number} */ f, /** @type {number} */ total) => `${pct(f)} (${Math.round(f * total).toLocaleString('en-US')} ${d.unit})`;
  const delta = selfDelta(d, i);
  const sign = delta > 0 ? '+' : '';
  return `${nameOf(d.tree, i)}\n` +
    `A: self ${w(d.selfA[i], d.totalA)}, total ${w(d.totA[i], d.totalA)}\n` +
    `B: self ${w(d.selfB[i], d.totalB)}, total ${w(d.totB[i], d.totalB)}\n` +
    `self change: ${sign}${(100 * delta).toFixed(2)} points`;
}
