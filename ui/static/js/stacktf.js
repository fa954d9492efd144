// @ts-check
// Stack transforms: the list the stacks panel keeps in the URL (`stf`) and
// sends as the stacks endpoint's `tf`, its compact URL-safe encoding, and
// what each transform does to one sampled stack (the in-browser fake's
// aggregation applies them; the server applies its own). No DOM: tested
// under node (ui/jstest/stacktf.test.js).
//
// Encoding: transforms joined by "~", each one letter (the op) followed by
// its argument with every byte outside [A-Za-z0-9_-] %-escaped, so "~" and
// "." never occur inside an argument:
//   f<fn>  focus on a function: keep samples through it, from it down
//   m<fn>  merge a function away: drop its frames, callees join its caller
//   c<mod> collapse a module: its consecutive frames become one frame "mod"
//   d<pat> drop frames whose name contains the pattern
//   r<fn>  collapse recursion of fn (r alone: of every function)

'use strict';

/** @typedef {'focus' | 'merge' | 'module' | 'drop' | 'rec'} TransformOp */
/** @typedef {{op: TransformOp, arg: string}} Transform */

/** @type {Record<TransformOp, string>} */
const CODE = { focus: 'f', merge: 'm', module: 'c', drop: 'd', rec: 'r' };
/** @type {Record<string, TransformOp>} */
const OP = { f: 'focus', m: 'merge', c: 'module', d: 'drop', r: 'rec' };

/** Most transforms one list holds. */
export const MAX_TRANSFORMS = 32;

/** What the panel shows for a transform. @param {Transform} t */
export function transformText(t) {
  switch (t.op) {
    case 'focus': return `focus ${t.arg}`;
    case 'merge': return `merge ${t.arg}`;
    case 'module': return `collapse ${t.arg}`;
    case 'drop': return `drop ~${t.arg}`;
    case 'rec': return t.arg ? `recursion ${t.arg}` : 'recursion';
  }
  return '';
}

/** @param {string} s */
function escapeArg(s) {
  let out = '';
  for (const b of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9_-]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** @param {Transform[]} list @returns {string} */
export function encodeTransforms(list) {
  return list.map((t) => CODE[t.op] + escapeArg(t.arg)).join('~');
}

/**
 * The transforms of an encoded list; parts that do not decode are dropped.
 * @param {string} s @returns {Transform[]}
 */
export function decodeTransforms(s) {
  /** @type {Transform[]} */
  const out = [];
  if (!s) return out;
  for (const part of s.split('~')) {
    const op = OP[part[0]];
    if (!op || out.length >= MAX_TRANSFORMS) continue;
    let arg;
    try {
      arg = decodeURIComponent(part.slice(1));
    } catch {
      continue;
    }
    if (!arg && op !== 'rec') continue;
    out.push({ op, arg });
  }
  return out;
}

/** The module of a frame name "module!function" ("" without "!"). @param {string} f */
export function moduleOf(f) {
  const i = f.indexOf('!');
  return i > 0 ? f.slice(0, i) : '';
}

/**
 * One stack (root first) after the transforms, in order; null when a
 * focus leaves the sample out.
 * @param {readonly string[]} stack @param {readonly Transform[]} list
 * @returns {string[] | null}
 */
export function applyTransforms(stack, list) {
  let s = stack.slice();
  for (const t of list) {
    switch (t.op) {
      case 'focus': {
        const i = s.indexOf(t.arg);
        if (i < 0) return null;
        s = s.slice(i);
        break;
      }
      case 'merge':
        s = s.filter((f) => f !== t.arg);
        break;
      case 'drop':
        s = s.filter((f) => !f.includes(t.arg));
        break;
      case 'module':
        s = s.map((f) => (moduleOf(f) === t.arg ? t.arg : f)).filter((f, i, a) => !(f === t.arg && i > 0 && a[i - 1] === t.arg));
        break;
      case 'rec':
        s = s.filter((f, i, a) => !(i > 0 && a[i - 1] === f && (!t.arg || f === t.arg)));
        break;
    }
  }
  return s;
}
