// @ts-check
// The key table: one row per action, read by the keyboard handler and by the
// `?` overlay, so the help can never drift from the bindings. Navigation is
// bound by KeyboardEvent.code (the key's position), so W/A/S/D sit under the
// same fingers on AZERTY and Dvorak keyboards.

'use strict';

/**
 * @typedef {object} Key
 * @property {string} code       KeyboardEvent.code
 * @property {boolean} [shift]   requires Shift (else Shift must be up)
 * @property {string} keys       what the overlay shows
 * @property {string} action     name of the action (actions.js)
 * @property {string} help
 */

/** @type {Key[]} */
export const KEYS = [
  { code: 'KeyW', keys: 'W', action: 'zoomIn', help: 'zoom in (each side by 1/6)' },
  { code: 'KeyS', keys: 'S', action: 'zoomOut', help: 'zoom out' },
  { code: 'KeyA', keys: 'A', action: 'panLeft', help: 'pan left by 1/6 of the width' },
  { code: 'KeyD', keys: 'D', action: 'panRight', help: 'pan right' },
  { code: 'Home', keys: 'Home', action: 'toStart', help: 'jump to the start (keep the width)' },
  { code: 'End', keys: 'End', action: 'toEnd', help: 'jump to the end' },
  { code: 'Period', keys: '.', action: 'liveChase', help: 'live trace: follow the newest events on / off, keeping the duration (panning or zooming turns it off)' },
  { code: 'Digit0', keys: '0', action: 'zoomAll', help: 'show the whole trace' },
  { code: 'KeyZ', keys: 'Z', action: 'zoomSelection', help: 'zoom to the ruler interval, or around the selected event' },
  { code: 'BracketLeft', keys: '[', action: 'back', help: 'back to the previous view (browser history)' },
  { code: 'BracketRight', keys: ']', action: 'forward', help: 'forward again' },
  { code: 'KeyR', keys: 'R', action: 'rowsUp', help: 'scroll tracks up by one' },
  { code: 'KeyF', keys: 'F', action: 'rowsDown', help: 'scroll tracks down by one' },
  { code: 'PageUp', keys: 'PageUp', action: 'pageUp', help: 'scroll tracks up by a page' },
  { code: 'PageDown', keys: 'PageDown', action: 'pageDown', help: 'scroll tracks down by a page' },
  { code: 'KeyT', keys: 'T', action: 'taller', help: 'fewer tracks on screen (taller rows)' },
  { code: 'KeyG', keys: 'G', action: 'shorter', help: 'more tracks on screen (shorter rows)' },
  { code: 'ArrowUp', keys: '↑', action: 'trackUp', help: 'select the track above' },
  { code: 'ArrowDown', keys: '↓', action: 'trackDown', help: 'select the track below' },
  { code: 'ArrowLeft', keys: '←', action: 'eventPrev', help: 'select the previous event on the selected track (the previous slice on a selected derived track)' },
  { code: 'ArrowRight', keys: '→', action: 'eventNext', help: 'select the next event on the selected track' },
  { code: 'Enter', keys: 'Enter', action: 'togglePopup', help: 'toggle the detail box of the selected event' },
  { code: 'KeyB', keys: 'B', action: 'mark', help: 'time ruler: measure from the selected event (B again clears)' },
  { code: 'KeyU', keys: 'U', action: 'raise', help: 'raise the selected track to the top' },
  { code: 'KeyJ', keys: 'J', action: 'sink', help: 'sink the selected track to the bottom' },
  { code: 'KeyP', keys: 'P', action: 'pin', help: 'pin / unpin the selected track' },
  { code: 'KeyH', keys: 'H', action: 'hideTrack', help: 'hide the selected track' },
  { code: 'KeyH', shift: true, keys: 'Shift+H', action: 'showTracks', help: 'show all hidden tracks' },
  { code: 'KeyM', keys: 'M', action: 'chase', help: "chase: order tracks by the next occurrence of the selected event's type" },
  { code: 'KeyM', shift: true, keys: 'Shift+M', action: 'noChase', help: 'no chase: natural track order' },
  { code: 'Minus', keys: '-', action: 'toggleGroup', help: "collapse / expand the selected track's group (or click its header)" },
  { code: 'KeyF', shift: true, keys: 'Shift+F', action: 'toggleFlows', help: "flows: arrows between all related events in view (the selected event's always show)" },
  { code: 'KeyE', keys: 'E', action: 'toggleMode', help: 'event boxes ↔ summary ticks' },
  { code: 'KeyC', keys: 'C', action: 'toggleColor', help: 'colour by event type ↔ by track' },
  { code: 'Slash', keys: '/', action: 'focusSearch', help: 'search (name, #code, field op value)' },
  { code: 'KeyN', keys: 'N', action: 'searchNext', help: 'next search hit (wraps around)' },
  { code: 'KeyN', shift: true, keys: 'Shift+N', action: 'searchPrev', help: 'previous search hit' },
  { code: 'KeyL', keys: 'L', action: 'focusFilter', help: 'filter tracks by name' },
  { code: 'KeyQ', keys: 'Q', action: 'focusWhere', help: 'filter events by a query: the others are dimmed (or hidden)' },
  { code: 'KeyO', keys: 'O', action: 'toggleArea', help: 'area tables: counts per type and track, a field histogram, the events table' },
  { code: 'KeyY', keys: 'Y', action: 'focusTypes', help: 'event-type selector' },
  { code: 'KeyK', keys: 'K', action: 'copyLink', help: 'copy a link to this view' },
  { code: 'KeyX', keys: 'X', action: 'toggleStacks', help: 'stacks panel: flame graph, call trees, callers/callees of the selection' },
  { code: 'KeyI', keys: 'I', action: 'focusDetails', help: 'move focus to the details panel' },
  { code: 'KeyV', keys: 'V', action: 'toggleDetails', help: 'collapse / expand the details panel (drag its bar to resize it)' },
  { code: 'Escape', keys: 'Esc', action: 'escape', help: 'close overlays, clear ruler, then selection' },
];

/** Mouse bindings, for the overlay. */
export const MOUSE = [
  ['drag', 'pan'],
  ['Shift+drag', 'zoom fence: release zooms to the dragged interval'],
  ['right drag', 'time ruler (shows the interval)'],
  ['Ctrl/⌘+wheel', 'zoom at the pointer'],
  ['wheel', 'scroll tracks; Shift+wheel or horizontal wheel pans'],
  ['click an event', 'select it and toggle its detail box'],
  ['click a slice', 'its fields at both ends and its duration; a summary zooms to it'],
  ['click a group header', 'collapse / expand the group'],
  ['click a track label', 'select the track; Shift+click raises it, Ctrl/⌘+click sinks it'],
  ['hover a track label', 'its full name, and its earlier names'],
  ['drag the name column\'s edge', 'widen or narrow the track names (double click: fit them)'],
  ['drag the details bar', 'resize the details panel'],
  ['click the overview strip', 'centre the view there'],
];

/**
 * The action bound to a key event, or undefined.
 * @param {KeyboardEvent} e
 */
export function lookup(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return undefined;
  if (e.key === '?') return 'help';
  return KEYS.find((k) => k.code === e.code && !!k.shift === e.shiftKey)?.action;
}
