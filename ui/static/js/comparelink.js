// @ts-check
// Links to the compare page (/compare, web/PROTOCOL.md §8) and the
// viewer's Compare… menu: the first against the second half of the view,
// or the view against the ruler. compareHref and viewChoices are pure
// (ui/jstest/comparelink.test.js); openCompareMenu shows the choices.

'use strict';

/**
 * The compare page of two sides, each a trace id and a range in absolute
 * ns ([from, to), null bounds: the trace's start or end).
 * @param {{id: string, from?: bigint | null, to?: bigint | null}} a
 * @param {{id: string, from?: bigint | null, to?: bigint | null}} b
 */
export function compareHref(a, b) {
  const p = new URLSearchParams();
  for (const [k, s] of /** @type {const} */ ([['a', a], ['b', b]])) {
    p.set(k, s.id);
    if (s.from != null) p.set(`${k}from`, String(s.from));
    if (s.to != null) p.set(`${k}to`, String(s.to));
  }
  return `/compare?${p}`;
}

/**
 * The viewer's compare choices for trace id: the view's halves, and the
 * view against the ruler when there is a ruler of some length.
 * @param {string} id @param {{start: bigint, end: bigint}} view
 * @param {{t0: bigint, t1: bigint} | null} ruler
 * @returns {{label: string, href: string}[]}
 */
export function viewChoices(id, view, ruler) {
  const out = [];
  const mid = view.start + (view.end - view.start) / 2n;
  if (mid > view.start) {
    out.push({ label: 'First half of the view (A) against the second half (B)', href: compareHref({ id, from: view.start, to: mid }, { id, from: mid, to: view.end }) });
  }
  if (ruler) {
    const lo = ruler.t0 < ruler.t1 ? ruler.t0 : ruler.t1, hi = ruler.t0 < ruler.t1 ? ruler.t1 : ruler.t0;
    if (hi > lo) {
      out.push({ label: 'The view (A) against the ruler (B)', href: compareHref({ id, from: view.start, to: view.end }, { id, from: lo, to: hi }) });
    }
  }
  return out;
}

/**
 * Shows the choices as a menu of links under the anchor element (a new
 * tab each); Escape, a click elsewhere or a pick closes it.
 * @param {HTMLElement} anchor @param {{label: string, href: string}[]} choices
 */
export function openCompareMenu(anchor, choices) {
  document.getElementById('compare-menu')?.remove();
  const menu = document.createElement('div');
  menu.id = 'compare-menu';
  menu.className = 'stacks-menu compare-menu';
  menu.setAttribute('role', 'menu');
  for (const c of choices) {
    const a = document.createElement('a');
    a.href = c.href;
    a.target = '_blank';
    a.rel = 'noopener';
    a.textContent = c.label;
    a.setAttribute('role', 'menuitem');
    menu.append(a);
  }
  if (!choices.length) {
    const p = document.createElement('span');
    p.textContent = 'The view is too short to compare.';
    menu.append(p);
  }
  const r = anchor.getBoundingClientRect();
  menu.style.position = 'fixed';
  menu.style.left = `${Math.max(0, Math.min(r.left, window.innerWidth - 360))}px`;
  menu.style.top = `${r.bottom + 2}px`;
  document.body.append(menu);
  const close = () => {
    menu.remove();
    document.removeEventListener('pointerdown', outside, true);
    document.removeEventListener('keydown', esc, true);
  };
  const outside = (/** @type {Event} */ e) => { if (!menu.contains(/** @type {Node} */ (e.target))) close(); };
  const esc = (/** @type {KeyboardEvent} */ e) => { if (e.key === 'Escape') { e.stopPropagation(); close(); } };
  document.addEventListener('pointerdown', outside, true);
  document.addEventListener('keydown', esc, true);
  menu.addEventListener('click', () => setTimeout(close, 0));
  /** @type {HTMLElement | null} */ (menu.querySelector('a'))?.focus();
}
