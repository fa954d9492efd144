// Stack trees (ui/static/js/stacktree.js) and transforms (stacktf.js):
// aggregation, views, pruning, paths, flame rectangles, the tf encoding.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aggregate, fromJSON, pathOf, findPath, flameRects, rectAt, matchNodes, nameOf, viewPath } from '../static/js/stacktree.js';
import { encodeTransforms, decodeTransforms, applyTransforms, quoteRE } from '../static/js/stacktf.js';

const S = (/** @type {string} */ s, w = 1) => ({ stack: s.split(';'), weight: w });
const samples = [S('m!main;m!a;m!b'), S('m!main;m!a;m!b'), S('m!main;m!a'), S('m!main;m!c;lib!x;lib!y'), S('m!main;m!r;m!r;m!r')];

test('aggregate builds the merged top-down tree, children by name', () => {
  const { json, leaf } = aggregate(samples, { view: 'top', tf: [], width: 0 });
  const t = fromJSON(json);
  assert.equal(t.total, 5);
  assert.equal(t.samples, 5);
  assert.equal(nameOf(t, 0), 'all');
  assert.deepEqual(t.kids[0].map((i) => nameOf(t, i)), ['m!main']);
  const main = t.kids[0][0];
  assert.deepEqual(t.kids[main].map((i) => [nameOf(t, i), t.tot[i]]), [['m!a', 3], ['m!c', 1], ['m!r', 1]]);
  // By name as the server sends them; the call trees show the heaviest first.
  const byName = fromJSON(aggregate([S('m!main;m!z'), S('m!main;m!z'), S('m!main;m!b')], { view: 'top', tf: [], width: 0 }).json);
  const m2 = byName.kids[0][0];
  assert.deepEqual(byName.kids[m2].map((i) => nameOf(byName, i)), ['m!b', 'm!z']);
  assert.deepEqual(byName.heavy[m2].map((i) => nameOf(byName, i)), ['m!z', 'm!b']);
  const a = findPath(t, ['m!main', 'm!a']);
  assert.equal(t.self[a], 1);
  assert.deepEqual(pathOf(t, findPath(t, ['m!main', 'm!a', 'm!b'])), ['m!main', 'm!a', 'm!b']);
  // Samples under a: leaves within a's subtree.
  const under = [...leaf].filter((x) => x >= a && x < t.end[a]).length;
  assert.equal(under, 3);
  assert.equal(findPath(t, ['m!nope']), -1);
});

test('bottom-up puts the largest self weight first under the root', () => {
  const t = fromJSON(aggregate(samples, { view: 'bottom', tf: [], width: 0 }).json);
  const first = t.heavy[0][0];
  assert.equal(nameOf(t, first), 'm!b');
  assert.equal(t.tot[first], 2);
});

test('callers and callees of a function', () => {
  assert.deepEqual(viewPath(['a', 'b', 'c'], 'callers:b'), ['b', 'a']);
  assert.deepEqual(viewPath(['a', 'b', 'c'], 'callees:b'), ['b', 'c']);
  assert.equal(viewPath(['a'], 'callees:b'), null);
  const t = fromJSON(aggregate(samples, { view: 'callees:m!a', tf: [], width: 0 }).json);
  // total and samples count every sample, the root those in the view.
  assert.equal(t.total, 5);
  assert.equal(t.samples, 5);
  assert.equal(t.tot[0], 3);
  assert.equal(nameOf(t, t.kids[0][0]), 'm!a');
});

test('pruning drops nodes under one pixel and counts them', () => {
  const many = [S('m!main;m!a', 1000), S('m!main;m!tiny;m!t2', 1)];
  const { json, leaf } = aggregate(many, { view: 'top', tf: [], width: 100 });
  assert.equal(json.pruned, 2);
  const t = fromJSON(json);
  assert.equal(t.tot[0], 1001);
  // The pruned sample belongs to main.
  assert.equal(nameOf(t, leaf[1]), 'm!main');
});

test('transforms: encoding round-trips and each op changes stacks', () => {
  const list = [{ op: 'focus', arg: 'm!Foo.Bar(int, string)~x' }, { op: 'merge', arg: 'a.b' }, { op: 'rec', arg: '' }, { op: 'module', arg: 'lib' }, { op: 'drop', arg: 'é' }];
  const enc = encodeTransforms(/** @type {any} */ (list));
  assert.match(enc, /^[A-Za-z0-9_.-]*$/);
  assert.deepEqual(decodeTransforms(enc), list);
  // The server's encoding (PROTOCOL.md, render/stacks.FormatTransforms).
  assert.equal(encodeTransforms([{ op: 'focus', arg: 'Main' }, { op: 'rec', arg: '' }]), 'fTWFpbg.r');
  assert.equal(encodeTransforms([{ op: 'drop', arg: 'é?>' }]), 'dw6k_Pg');
  assert.deepEqual(decodeTransforms('x1.f.m%zz.mb2s.fb2s~.f!!.fb2s'), [{ op: 'merge', arg: 'ok' }, { op: 'focus', arg: 'ok' }]);
  assert.deepEqual(decodeTransforms('fmod%2521Main~r'), [], 'the old ~ list decodes to nothing');
  const s = ['m!main', 'm!r', 'm!r', 'lib!x', 'lib!y', 'm!z'];
  assert.deepEqual(applyTransforms(s, [{ op: 'focus', arg: 'm!r' }]), ['m!r', 'm!r', 'lib!x', 'lib!y', 'm!z']);
  assert.equal(applyTransforms(s, [{ op: 'focus', arg: 'nope' }]), null);
  assert.deepEqual(applyTransforms(s, [{ op: 'merge', arg: 'm!r' }]), ['m!main', 'lib!x', 'lib!y', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'rec', arg: '' }]), ['m!main', 'm!r', 'lib!x', 'lib!y', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'module', arg: 'lib' }]), ['m!main', 'm!r', 'm!r', 'lib', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'drop', arg: 'lib!' }]), ['m!main', 'm!r', 'm!r', 'm!z']);
  // drop takes a regular expression; quoteRE makes a name literal.
  assert.deepEqual(applyTransforms(s, [{ op: 'drop', arg: '^m!(main|z)$' }]), ['m!r', 'm!r', 'lib!x', 'lib!y']);
  assert.deepEqual(applyTransforms(['a.b(int[])', 'aXb(int[])'], [{ op: 'drop', arg: quoteRE('a.b(int[])') }]), ['aXb(int[])']);
  // recursion of a function: indirect too, from its outermost to its innermost frame.
  const ind = ['main', 'f', 'g', 'f', 'h'];
  assert.deepEqual(applyTransforms(ind, [{ op: 'rec', arg: 'f' }]), ['main', 'f', 'h']);
  assert.deepEqual(applyTransforms(ind, [{ op: 'rec', arg: '' }]), ind);
  // a module's collapsed frame is of the module too.
  assert.deepEqual(applyTransforms(['lib', 'lib!x', 'm!a'], [{ op: 'module', arg: 'lib' }]), ['lib', 'm!a']);
});

test('flame rectangles: root spans the width, children from the left', () => {
  const t = fromJSON(aggregate(samples, { view: 'top', tf: [], width: 0 }).json);
  const r = flameRects(t, 500);
  assert.deepEqual(r[0], { node: 0, x: 0, w: 500, depth: 0 });
  const a = findPath(t, ['m!main', 'm!a']), c = findPath(t, ['m!main', 'm!c']);
  const ra = r.find((x) => x.node === a), rc = r.find((x) => x.node === c);
  assert.equal(ra?.x, 0);
  assert.equal(ra?.w, 300);
  assert.equal(rc?.x, 300);
  assert.equal(rectAt(r, 350, 2), c);
  assert.equal(rectAt(r, 350, 9), -1);
  // Narrow nodes are left out with their subtrees.
  assert.ok(flameRects(t, 500, 150).every((x) => x.w >= 150));
});

test('search matches names case-insensitively', () => {
  const t = fromJSON(aggregate(samples, { view: 'top', tf: [], width: 0 }).json);
  const m = matchNodes(t, 'LIB!');
  assert.equal([...m].filter(Boolean).length, 2);
  assert.equal([...matchNodes(t, ' ')].filter(Boolean).length, 0);
});

test('fromJSON refuses nodes out of preorder', () => {
  assert.throws(() => fromJSON({ names: ['all'], nodes: [[-1, 0, 1, 0], [5, 0, 1, 1]] }));
  assert.throws(() => fromJSON({ names: ['all'], nodes: [[0, 0, 1, 0]] }));
});
