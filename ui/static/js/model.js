// @ts-check
// Model: the timeline page's view state — viewport, track order and
// filters, selection, popups, ruler, search hits, the frame held — and the
// rules that keep it consistent, with no DOM. The URL state (urlstate.js) is
// read from and written to it here; the App and its controllers change it
// and then redraw. Tested under node (ui/jstest).

'use strict';

import { Viewport } from './viewport.js';
import { defaultState } from './urlstate.js';
import { fullView } from './navigate.js';
import { naturalOrder, currentOrder, layoutRows, clampTop } from './tracks.js';
import { groupRows } from './groups.js';
import { sliceMatcher, sliceFilter } from './spans.js';

/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./source.js').Hit} Hit */
/** @typedef {import('./source.js').Details} Details */
/** @typedef {import('./urlstate.js').ViewState} ViewState */
/** @typedef {import('./render.js').Popup} Popup */

export const ROW_H = 24;
export const ROW_MIN = 3;
export const ROW_MAX = 80;

/**
 * The stacks panel's part of a URL state.
 * @param {ViewState} st
 */
export function stacksState(st) {
  const { stacks, stacksView, stacksRange, stacksTracks, stacksEvent, stacksWeight, stacksTf, stacksQ, stacksFn, stacksNode } = st;
  return { stacks, stacksView, stacksRange, stacksTracks, stacksEvent, stacksWeight, stacksTf, stacksQ, stacksFn, stacksNode };
}

/** @typedef {ReturnType<typeof stacksState>} StacksState */

export class Model {
  constructor() {
    /** @type {Meta | null} */
    this.meta = null;
    this.vp = new Viewport(0n, 1, 1);
    /** @type {Frame | null} the newest frame from the source */
    this.frame = null;
    this.natural = /** @type {number[]} */ ([]);
    this.order = /** @type {number[]} */ ([]); // explicit order (raise/sink/chase); empty = natural
    this.pins = /** @type {number[]} */ ([]);
    this.hide = new Set(/** @type {number[]} */ ([]));
    this.hideTypes = new Set(/** @type {number[]} */ ([]));
    this.filter = '';
    this.rows = /** @type {number[]} */ ([]); // tracks shown, top to bottom
    this.top = 0;
    this.rowH = ROW_H;
    /** @type {'event' | 'summary'} */
    this.mode = 'event';
    /** @type {'type' | 'track'} */
    this.colorBy = 'type';
    this.selTrack = -1;
    /** @type {{ref: string, time: bigint, track: number} | null} */
    this.selEvent = null;
    /** @type {string | undefined} the selection to be while its details load, for keys pressed meanwhile */
    this.pendingRef = undefined;
    /** @type {Details | null} */
    this.details = null;
    /** @type {Popup[]} */
    this.popups = [];
    this.query = '';
    /** @type {Hit[]} */
    this.hits = [];
    this.hitTotal = 0;
    this.hitsMore = false; // the source cut the hit list short
    /** @type {import('./overview.js').HitBins | null} the search's hits over the whole trace, per time bin */
    this.hitBins = null;
    /** @type {{t0: bigint, t1: bigint} | null} */
    this.ruler = null;
    this.markKey = false; // the ruler came from B: selecting an event moves its end
    /** @type {{x0: number, x1: number} | null} */
    this.fence = null;
    /** @type {import('./spans.js').DerivedTrack[]} the trace's derived tracks (spans endpoint) */
    this.derived = [];
    /** @type {Set<number>} derived tracks not shown (URL `xd`) */
    this.hideDerived = new Set();
    /** @type {Set<string>} collapsed groups, by key (groups.js) */
    this.collapsed = new Set();
    /** @type {import('./groups.js').Group[]} the groups of the rows shown */
    this.groups = [];
    /** @type {import('./spans.js').SpanFrame | null} the newest derived-track frame */
    this.spans = null;
    this.selDerived = -1; // the selected derived row's track
    /** @type {{track: number, slice: number} | null} the selected derived slice */
    this.selSlice = null;
    /** @type {{ref: string, time: bigint, track: number}[]} the selected event's related events (flows), in time order */
    this.flows = [];
    /** @type {{time: bigint, track: number}[][]} chains of related events in view (the flows toggle) */
    this.allFlows = [];
    this.flowsAll = false;
    /** The stacks panel's URL state (stacks.js owns the panel). */
    this.stacks = stacksState(defaultState());
  }

  /** Takes the opened trace's metadata. @param {Meta} m */
  setMeta(m) {
    this.meta = m;
    this.natural = naturalOrder(m.tracks);
  }

  /** The opened trace's metadata (after setMeta). @returns {Meta} */
  get trace() {
    return /** @type {Meta} */ (this.meta);
  }

  /**
   * Recomputes the rows shown from order, pins, hidden tracks and the
   * filter, keeping the top row in range.
   * @param {number} visible rows that fit on screen
   */
  layout(visible) {
    const rows = layoutRows({ order: this.order, natural: this.natural, pins: this.pins, hide: this.hide, filter: this.filter, tracks: this.trace.tracks });
    if (this.derived.length || this.trace.traces) {
      const pins = new Set(this.pins);
      let pinned = 0;
      while (pinned < rows.length && pins.has(rows[pinned])) pinned++;
      const g = groupRows({ rows, pinned, tracks: this.trace.tracks, derived: this.derived, hideDerived: this.hideDerived, collapsed: this.collapsed, traces: this.trace.traces });
      this.rows = g.rows;
      this.groups = g.groups;
    } else {
      this.rows = rows;
      this.groups = [];
    }
    this.top = clampTop(this.top, this.rows.length, visible);
  }

  /** The track order in force (a new array). */
  currentOrder() {
    return currentOrder(this.order, this.natural);
  }

  /** The trace track at dy CSS px below the first row, or -1 (also for derived and group rows). @param {number} dy */
  trackAt(dy) {
    const r = this.rowAt(dy);
    return r >= 0 ? r : -1;
  }

  /** The row at dy CSS px below the first row (groups.js ids), or -1. @param {number} dy */
  rowAt(dy) {
    const row = dy >= 0 ? Math.floor(dy / this.rowH) + this.top : -1;
    return row >= 0 && row < this.rows.length ? this.rows[row] : -1;
  }

  /** The trace tracks among rows (the rows without derived tracks and group headers). @param {number[]} rows */
  static traceRows(rows) {
    return rows.filter((r) => r >= 0);
  }

  /** Clears the selected event and track (not the ruler or popups). */
  clearSelection() {
    this.selEvent = null;
    this.details = null;
    this.selTrack = -1;
  }

  /** The URL state of the view. @returns {ViewState} */
  state() {
    const st = defaultState();
    st.start = this.vp.start;
    st.end = this.vp.end;
    st.sel = this.selEvent ? this.selEvent.ref : '';
    st.track = this.selTrack;
    st.hide = [...this.hide];
    st.pin = [...this.pins];
    st.order = [...this.order];
    st.hideTypes = [...this.hideTypes];
    st.hideDerived = [...this.hideDerived].sort((a, b) => a - b);
    st.mode = this.mode;
    st.q = this.query;
    st.filter = this.filter;
    Object.assign(st, this.stacks);
    return st;
  }

  /**
   * Takes a URL state's viewport, tracks, types, mode, filter and selected
   * track, dropping ids the trace does not have. The selected event and the
   * query need the source, so the caller applies them.
   * @param {ViewState} st @param {number} width plot width in CSS px
   */
  apply(st, width) {
    const m = this.trace;
    const valid = (/** @type {number} */ id) => id >= 0 && id < m.tracks.length;
    this.vp = st.start !== null && st.end !== null ? Viewport.fromRange(st.start, st.end, width) : fullView(m, width);
    this.hide = new Set(st.hide.filter(valid));
    this.pins = st.pin.filter(valid);
    this.order = st.order.filter(valid);
    this.hideTypes = new Set(st.hideTypes.filter((id) => id >= 0 && id < m.types.length));
    this.hideDerived = new Set(st.hideDerived.filter((id) => id >= 0));
    this.mode = st.mode;
    this.filter = st.filter;
    this.selTrack = valid(st.track) ? st.track : -1;
    this.stacks = stacksState(st);
  }

  /**
   * What the renderer draws.
   * @param {number} labelW @param {import('./render.js').Theme} theme
   * @returns {import('./render.js').Scene}
   */
  scene(labelW, theme) {
    return {
      vp: this.vp,
      meta: this.trace,
      order: this.rows,
      top: this.top,
      rowH: this.rowH,
      labelW,
      frame: this.frame,
      mode: this.mode,
      colorBy: this.colorBy,
      hidden: this.hideTypes,
      selTrack: this.selTrack,
      pinned: new Set(this.pins),
      selEvent: this.selEvent,
      popups: this.popups,
      hits: this.hits.map((h) => h.time),
      hitBins: this.hitBins,
      hitTotal: this.hitTotal,
      hitMarks: this.hits,
      fence: this.fence,
      ruler: this.ruler,
      theme,
      derived: new Map(this.derived.map((d) => [d.id, d])),
      spans: this.spans,
      groups: this.groups,
      collapsed: this.collapsed,
      selSlice: this.selSlice,
      selDerived: this.selDerived,
      sliceMatch: this.query ? sliceMatcher(this.query) : null,
      sliceHidden: sliceFilter(this.trace.types, this.hideTypes),
      flows: this.flows,
      allFlows: this.flowsAll ? this.allFlows : [],
    };
  }
}
