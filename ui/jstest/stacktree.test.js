// Stack trees (ui/static/js/stacktree.js) and transforms (stacktf.js):
// aggregation, views, pruning, paths, flame rectangles, the tf encoding.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aggregate, fromJSON, pathOf, findPath, flameRects, rectAt, matchNodes, nameOf, viewPath } from '../static/js/stacktree.js';
import { encodeTransforms, decodeTransforms, applyTransforms } from '../static/js/stacktf.js';

const S = (/** @type {string} */ s, w = 1) => ({ stack: s.split(';'), weight: w });
const samples = [S('m!main;m!a;m!b'), S('m!main;m!a;m!b'), S('m!main;m!a'), S('m!main;m!c;lib!x;lib!y'), S('m!main;m!r;m!r;m!r')];

test('aggregate builds the merged top-down tree, heaviest child first', () => {
  const { json, leaf } = aggregate(samples, { view: 'top', tf: [], width: 0 });
  const t = fromJSON(json);
  assert.equal(t.total, 5);
  assert.equal(t.samples, 5);
  assert.equal(nameOf(t, 0), 'all');
  assert.deepEqual(t.kids[0].map((i) => nameOf(t, i)), ['m!main']);
  const main = t.kids[0][0];
  assert.deepEqual(t.kids[main].map((i) => [nameOf(t, i), t.tot[i]]), [['m!a', 3], ['m!c', 1], ['m!r', 1]]);
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
  const first = t.kids[0][0];
  assert.equal(nameOf(t, first), 'm!b');
  assert.equal(t.tot[first], 2);
});

test('callers and callees of a function', () => {
  assert.deepEqual(viewPath(['a', 'b', 'c'], 'callers:b'), ['b', 'a']);
  assert.deepEqual(viewPath(['a', 'b', 'c'], 'callees:b'), ['b', 'c']);
  assert.equal(viewPath(['a'], 'callees:b'), null);
  const t = fromJSON(aggregate(samples, { view: 'callees:m!a', tf: [], width: 0 }).json);
  assert.equal(t.total, 3);
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
  assert.match(enc, /^[A-Za-z0-9_%~-]*$/);
  assert.deepEqual(decodeTransforms(enc), list);
  assert.deepEqual(decodeTransforms('x1~f~m%zz~fok'), [{ op: 'focus', arg: 'ok' }]);
  const s = ['m!main', 'm!r', 'm!r', 'lib!x', 'lib!y', 'm!z'];
  assert.deepEqual(applyTransforms(s, [{ op: 'focus', arg: 'm!r' }]), ['m!r', 'm!r', 'lib!x', 'lib!y', 'm!z']);
  assert.equal(applyTransforms(s, [{ op: 'focus', arg: 'nope' }]), null);
  assert.deepEqual(applyTransforms(s, [{ op: 'merge', arg: 'm!r' }]), ['m!main', 'lib!x', 'lib!y', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'rec', arg: '' }]), ['m!main', 'm!r', 'lib!x', 'lib!y', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'module', arg: 'lib' }]), ['m!main', 'm!r', 'm!r', 'lib', 'm!z']);
  assert.deepEqual(applyTransforms(s, [{ op: 'drop', arg: 'lib!' }]), ['m!main', 'm!r', 'm!r', 'm!z']);
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
