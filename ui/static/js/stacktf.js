// @ts-check
// Stack transforms: the list the stacks panel keeps in the URL (`stf`) and
// sends as the stacks endpoint's `tf`, its compact URL-safe encoding, and
// what each transform does to one sampled stack (the in-browser fake's
// aggregation applies them; the server applies its own). No DOM: tested
// under node (ui/jstest/stacktf.test.js).
//
// Encoding (web/PROTOCOL.md, the stacks endpoint's `tf`, as
// render/stacks.ParseTransforms reads it): transforms joined by ".", each
// one letter (the op) followed by its argument in unpadded base64url, so
// the list holds only [A-Za-z0-9_.-] and sits in a URL as it is:
//   f<fn>  focus on a function: keep stacks through it, from its frame
//          nearest the root down
//   m<fn>  merge a function away: drop its frames, callees join its caller
//   c<mod> collapse a module: each run of frames "mod!…" becomes one "mod"
//   d<re>  drop frames whose name matches a regular expression (unanchored)
//   r      collapse direct recursion (runs of a frame calling itself)
//   r<fn>  collapse fn's recursion, indirect too: its frames from the one
//          nearest the root to the one nearest the leaf become one
// "fTWFpbg.r" is focus on "Main", then collapse recursion.

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
    case 'drop': return `drop /${t.arg}/`;
    case 'rec': return t.arg ? `recursion ${t.arg}` : 'recursion';
  }
  return '';
}

/** Unpadded base64url of a string's UTF-8 bytes. @param {string} s */
export function b64url(s) {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The string of unpadded base64url UTF-8 (as Go's RawURLEncoding decodes
 * it), or null when it is not that.
 * @param {string} s @returns {string | null}
 */
export function unb64url(s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) return null;
  try {
    const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '=='.slice(0, (4 - (s.length % 4)) % 4));
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** @param {Transform[]} list @returns {string} */
export function encodeTransforms(list) {
  return list.map((t) => CODE[t.op] + b64url(t.arg)).join('.');
}

/**
 * The transforms of an encoded list; items that do not decode are
 * dropped. (A drop's pattern is Go syntax: the server judges it.)
 * @param {string} s @returns {Transform[]}
 */
export function decodeTransforms(s) {
  /** @type {Transform[]} */
  const out = [];
  if (!s) return out;
  for (const part of s.split('.')) {
    const op = OP[part[0]];
    if (!op || out.length >= MAX_TRANSFORMS) continue;
    const arg = unb64url(part.slice(1));
    if (arg === null || (!arg && op !== 'rec')) continue;
    out.push({ op, arg });
  }
  return out;
}

/** A regular expression's literal text (to drop one frame name exactly). @param {string} s */
export function quoteRE(s) {
  return s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

/** A drop pattern as a JavaScript RegExp (near enough to Go's for the fake), or null. @param {string} pat */
function dropRE(pat) {
  try {
    return new RegExp(pat);
  } catch {
    return null;
  }
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
      case 'drop': {
        const re = dropRE(t.arg);
        if (re) s = s.filter((f) => !re.test(f));
        break;
      }
      case 'module':
        s = s.map((f) => (f === t.arg || moduleOf(f) === t.arg ? t.arg : f)).filter((f, i, a) => !(f === t.arg && i > 0 && a[i - 1] === t.arg));
        break;
      case 'rec': {
        if (!t.arg) {
          s = s.filter((f, i, a) => !(i > 0 && a[i - 1] === f));
          break;
        }
        const lo = s.indexOf(t.arg), hi = s.lastIndexOf(t.arg);
        if (lo >= 0 && lo < hi) s = [...s.slice(0, lo), ...s.slice(hi)];
        break;
      }
    }
  }
  return s;
}
