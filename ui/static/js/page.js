// @ts-check
// The page around the canvas: the toolbar, the range line, the side panel
// (track filter, event types) and the help overlay, built once; and the
// theme colours the CSS defines. Handlers are attached by the modules that
// own the behaviour (input.js, search.js, types.js).

'use strict';

import { el } from './dom.js';
import { buildHelp } from './panels.js';

/**
 * Toolbar buttons: [text, action (actions.js), title]. The mode button and
 * the search box sit among them, at the places marked 'mode' and 'search'.
 * @type {([string, string, string] | 'mode' | 'search')[]}
 */
export const TOOLBAR = [
  ['⇤', 'toStart', 'start (Home)'], ['−', 'zoomOut', 'zoom out (S)'], ['+', 'zoomIn', 'zoom in (W)'],
  ['⇥', 'toEnd', 'end (End)'], ['All', 'zoomAll', 'whole trace (0)'], ['Zoom sel.', 'zoomSelection', 'zoom to the ruler or the selected event (Z)'],
  'mode', ['Chase', 'chase', 'order tracks by the selected event type (M)'], ['Unchase', 'noChase', 'natural track order (Shift+M)'],
  'search', ['◀', 'searchPrev', 'previous hit (Shift+N)'], ['▶', 'searchNext', 'next hit (N)'],
  ['Stacks', 'toggleStacks', 'stacks panel: flame graph and call trees (X)'],
  ['Compare…', 'compareMenu', 'compare two ranges of this trace: the halves of the view, or the view and the ruler'],
];

/**
 * Builds the controls around the canvas (the server renders main#viewer,
 * canvas#timeline, aside#details, div#status and a#library-link; missing
 * ones are created).
 * @param {HTMLElement} root
 */
export function buildDOM(root) {
  const find = (/** @type {string} */ id, /** @type {string} */ tag) => {
    let e = document.getElementById(id);
    if (!e) {
      e = el(tag, { id });
      root.append(e);
    }
    return e;
  };
  const canvas = /** @type {HTMLCanvasElement} */ (find('timeline', 'canvas'));
  const details = find('details', 'aside');
  const status = find('status', 'div');
  const library = /** @type {HTMLAnchorElement} */ (find('library-link', 'a'));
  if (!library.getAttribute('href')) library.href = '/';
  if (!library.textContent) library.textContent = '← Library';
  canvas.tabIndex = 0;
  canvas.setAttribute('aria-label', 'timeline; press ? for keys');
  details.tabIndex = 0;

  const button = (/** @type {string} */ text, /** @type {string} */ action, /** @type {string} */ title) => {
    const b = el('button', { type: 'button', title });
    b.dataset.action = action;
    b.textContent = text;
    return b;
  };
  const bar = root.querySelector(':scope > header') ?? el('header');
  bar.classList.add('bar');
  const title = document.getElementById('trace-name') ?? el('h1', { id: 'trace-name' });
  title.classList.add('title');
  const info = el('span', { className: 'info', id: 'trace-info' });
  const search = /** @type {HTMLInputElement} */ (el('input', { type: 'search', id: 'search', placeholder: 'search: name, #code, field > 3, a && b', title: 'search (/); Enter: next hit, Shift+Enter: previous' }));
  search.setAttribute('aria-label', 'search events');
  const hitCount = el('span', { className: 'hits', id: 'hit-count' });
  const mode = button('Summary', 'toggleMode', 'event boxes ↔ summary ticks (E)');
  const link = /** @type {HTMLInputElement} */ (el('input', { type: 'text', readOnly: true, className: 'link' }));
  link.hidden = true;
  const progress = /** @type {HTMLProgressElement} */ (el('progress', { max: 100, value: 0 }));
  const progressText = el('span', { className: 'progress-text' });
  if (library.parentElement !== bar) bar.prepend(library);
  if (title.parentElement !== bar) library.after(title);
  bar.append(
    info, progress, progressText,
    ...TOOLBAR.map((b) => (b === 'mode' ? mode : b === 'search' ? search : button(...b))),
    hitCount, button('Copy link', 'copyLink', 'K'), link, button('?', 'help', 'keys (?)'),
  );
  const range = el('div', { className: 'range', id: 'range' });
  const message = el('div', { className: 'message', id: 'message', role: 'status' });

  const side = el('aside', { className: 'side', id: 'side' });
  const filter = /** @type {HTMLInputElement} */ (el('input', { type: 'search', id: 'track-filter', placeholder: 'filter tracks by name (L)' }));
  filter.setAttribute('aria-label', 'filter tracks by name');
  const hidden = el('button', { type: 'button', className: 'show-hidden' });
  const typesHead = el('div', { className: 'types-head' });
  const typesAll = el('button', { type: 'button', id: 'types-all' });
  typesAll.textContent = 'ALL';
  const typesNone = el('button', { type: 'button', id: 'types-none' });
  typesNone.textContent = 'NONE';
  const h = el('span');
  h.textContent = 'Event types';
  typesHead.append(h, typesAll, typesNone);
  const types = el('div', { className: 'types', id: 'types' });
  side.append(filter, hidden, typesHead, types);

  const { help, helpBox, helpClose } = buildHelp();

  // The details panel's bar: its toggle, what it shows, and the edge that
  // resizes it (detailspane.js).
  const detailsBar = el('div', { className: 'details-bar', id: 'details-bar', title: 'drag to resize the details panel' });
  const detailsToggle = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id: 'details-toggle' }));
  detailsToggle.setAttribute('aria-controls', 'details');
  const detailsSummary = el('span', { className: 'details-summary', id: 'details-summary' });
  detailsBar.append(detailsToggle, detailsSummary);
  // The hover tooltip of the track names (tip.js).
  const tip = el('div', { className: 'tip', id: 'tip', role: 'tooltip' });
  tip.hidden = true;

  root.classList.add('viewer');
  root.prepend(bar, range);
  status.append(message);
  root.append(side, help, tip);
  // Order inside the grid is set by CSS; keep the canvas before details for
  // tab order.
  root.insertBefore(canvas, details.parentElement === root ? details : null);
  root.insertBefore(detailsBar, details);
  return {
    canvas, details, detailsBar, detailsToggle, detailsSummary, tip, status, bar, title, info, search, hitCount, mode, link,
    progress, progressText, range, message, filter, hidden, typesAll, typesNone, types, help, helpBox, helpClose,
  };
}

/** @typedef {ReturnType<typeof buildDOM>} UI */

/** Theme colours from the CSS custom properties. @returns {import('./render.js').Theme} */
export function readTheme() {
  const cs = getComputedStyle(document.documentElement);
  const v = (/** @type {string} */ k, /** @type {string} */ d) => cs.getPropertyValue(k).trim() || d;
  return {
    bg: v('--canvas-bg', '#fff'),
    fg: v('--fg', '#111'),
    muted: v('--muted', '#666'),
    grid: v('--grid', '#ddd'),
    rowAlt: v('--row-alt', '#f6f7f9'),
    labelBg: v('--label-bg', '#f0f1f4'),
    sel: v('--sel', '#d00'),
    selRow: v('--sel-row', '#fde9e9'),
    hit: v('--hit', '#e67e00'),
    lost: v('--lost', '#c00'),
    popupBg: v('--popup-bg', '#ffffe8'),
    accent: v('--accent', '#1f5fd1'),
    dark: matchMedia('(prefers-color-scheme: dark)').matches,
  };
}
