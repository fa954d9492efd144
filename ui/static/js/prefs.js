// @ts-check
// Prefs: the page's layout, kept across reloads in localStorage (not in
// the URL: it is the reader's screen, not the view a link shares) — the
// details panel collapsed or open and its height, and the width of the
// track-name column. Parsing checks every value, so a stale or edited
// entry falls back to the defaults. Pure except load/save, which touch
// localStorage only when called.

'use strict';

/** The localStorage key. */
export const PREFS_KEY = 'viewer.layout';

export const DETAILS_MIN_H = 60; // CSS px
export const DETAILS_DEFAULT_H = 200;
export const LABEL_MIN_W = 60;
export const LABEL_MAX_W = 1200;

/**
 * @typedef {object} Prefs
 * @property {boolean} detailsOpen
 * @property {number} detailsH   CSS px
 * @property {number} labelW     CSS px of the name column; 0: fit the names
 */

/** @returns {Prefs} */
export function defaultPrefs() {
  return { detailsOpen: true, detailsH: DETAILS_DEFAULT_H, labelW: 0 };
}

/**
 * Prefs from their stored text; defaults for anything missing or wrong.
 * @param {string | null} text @returns {Prefs}
 */
export function parsePrefs(text) {
  const p = defaultPrefs();
  if (!text) return p;
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    return p;
  }
  if (!j || typeof j !== 'object') return p;
  if (typeof j.detailsOpen === 'boolean') p.detailsOpen = j.detailsOpen;
  if (Number.isFinite(j.detailsH) && j.detailsH >= DETAILS_MIN_H && j.detailsH <= 10000) p.detailsH = Math.round(j.detailsH);
  if (Number.isFinite(j.labelW) && j.labelW >= LABEL_MIN_W && j.labelW <= LABEL_MAX_W) p.labelW = Math.round(j.labelW);
  return p;
}

/** @param {Prefs} p */
export function formatPrefs(p) {
  return JSON.stringify({ detailsOpen: p.detailsOpen, detailsH: p.detailsH, labelW: p.labelW });
}

/**
 * The details panel's height for a drag: at least DETAILS_MIN_H, and
 * leaving the timeline at least `keep` px of a page `pageH` high.
 * @param {number} h @param {number} pageH @param {number} keep
 */
export function clampDetailsH(h, pageH, keep) {
  return Math.round(Math.max(DETAILS_MIN_H, Math.min(h, pageH - keep)));
}

/**
 * The name column's width for a drag: within LABEL_MIN_W..LABEL_MAX_W and
 * leaving the plot at least `keep` px of a canvas `canvasW` wide.
 * @param {number} w @param {number} canvasW @param {number} keep
 */
export function clampLabelW(w, canvasW, keep) {
  return Math.round(Math.max(LABEL_MIN_W, Math.min(w, LABEL_MAX_W, canvasW - keep)));
}

/** The stored prefs (defaults when storage is unavailable). @returns {Prefs} */
export function loadPrefs() {
  try {
    return parsePrefs(globalThis.localStorage?.getItem(PREFS_KEY) ?? null);
  } catch {
    return defaultPrefs(); // storage disabled
  }
}

/** Stores the prefs; a refusal (private mode, quota) only loses them. @param {Prefs} p */
export function savePrefs(p) {
  try {
    globalThis.localStorage?.setItem(PREFS_KEY, formatPrefs(p));
  } catch {
    // not kept
  }
}
