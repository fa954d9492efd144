// @ts-check
// App: the viewer page's controller. It owns the view state (viewport, track
// order and filters, selection, popups, search hits), turns input into
// actions, asks the source for frames (latest wins) and has the renderer draw
// at most once per animation frame. The URL follows the state: replaceState
// while dragging or wheeling, pushState on discrete steps, so the browser's
// Back/Forward walk through views like g2's snapshot ring.
//
// Every string that came from a trace reaches the page through textContent
// or canvas fillText, never as HTML.

'use strict';

import { Viewport, formatDuration, formatTime, unitFor } from './viewport.js';
import { Renderer, ROWS_Y, OVERVIEW_H } from './render.js';
import { LatestWins, eventID } from './source.js';
import { KEYS, MOUSE, lookup } from './keys.js';
import { parseState, formatState, defaultState } from './urlstate.js';
import { el, clear, renderDetails } from './dom.js';
import { enableUpload } from './upload.js';

/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./source.js').Hit} Hit */
/** @typedef {import('./source.js').Details} Details */
/** @typedef {import('./urlstate.js').ViewState} ViewState */
/** @typedef {import('./render.js').Popup} Popup */

const ROW_H = 24;
const ROW_MIN = 3;
const ROW_MAX = 80;
const STEP = 1 / 6; // g2: zoom and pan move each side by 1/6 of the width
const DRAG_PX = 4; // movement below this is a click
const FENCE_MIN_PX = 10; // g2's minimum fence
const PAD = 0.5; // request half a width beyond each edge
const EXTRA_ROWS = 8; // and a few rows beyond the visible ones
const REPLACE_MS = 200; // URL replace throttle while dragging

export class App {
  /**
   * @param {HTMLElement} root  the <main id="viewer"> element
   * @param {Source} source
   * @param {ViewState} initial
   */
  constructor(root, source, initial) {
    this.root = root;
    this.source = source;
    this.initial = initial;
    /** @type {Meta | null} */
    this.meta = null;
    this.ui = buildDOM(root);
    this.renderer = new Renderer(this.ui.canvas);
    this.vp = new Viewport(0n, 1, 1);
    /** @type {Frame | null} */
    this.frame = null;
    /** @type {{start: bigint, end: bigint, nsPerPx: number, tracks: string, hidden: string} | null} */
    this.asked = null;
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
    /** @type {Details | null} */
    this.details = null;
    /** @type {Popup[]} */
    this.popups = [];
    this.query = '';
    /** @type {Hit[]} */
    this.hits = [];
    this.hitTotal = 0;
    /** @type {{t0: bigint, t1: bigint} | null} */
    this.ruler = null;
    /** @type {{x0: number, x1: number} | null} */
    this.fence = null;
    this.drawPending = false;
    this.draws = 0;
    this.lastDrawMs = 0;
    this.urlTimer = 0;
    this.theme = readTheme();
    this.frames = new LatestWins(
      (/** @type {import('./source.js').ViewRequest} */ q) => this.source.view(q),
      (/** @type {Frame} */ f) => {
        this.frame = f;
        this.schedule();
      },
      (/** @type {unknown} */ e) => this.banner(`viewport request failed: ${errText(e)}`),
    );
  }

  /** Opens the source and shows the trace. */
  async start() {
    const ui = this.ui;
    this.enableUpload();
    const src = /** @type {any} */ (this.source);
    if ('onClose' in src) src.onClose = (/** @type {string} */ why) => this.banner(`${why}. Reload the page to reconnect.`);
    ui.progress.hidden = false;
    try {
      this.meta = await this.source.open((pct, text) => {
        ui.progress.value = pct;
        ui.progressText.textContent = `${text} ${pct.toFixed(0)}%`;
      });
    } catch (e) {
      ui.progress.hidden = true;
      ui.progressText.textContent = '';
      this.banner(errText(e));
      return;
    }
    ui.progress.hidden = true;
    ui.progressText.textContent = '';
    const m = this.meta;
    if (!ui.title.textContent) ui.title.textContent = m.name;
    ui.info.textContent = `${m.format} · ${m.events.toLocaleString()} events · ${m.tracks.length} tracks`;
    if (m.error) this.banner(`The trace is damaged: ${m.error}. Events up to the dashed line are shown.`);
    // Natural order: by track id, tracks without events last (a perf.data
    // file names every thread of the machine, most of them silent).
    this.natural = m.tracks.filter((t) => t.events !== 0).map((t) => t.id)
      .concat(m.tracks.filter((t) => t.events === 0).map((t) => t.id));
    this.buildTypeSelector();
    this.renderer.resize();
    this.vp = this.fullView();
    this.applyState(this.initial, false);
    this.bind();
    new ResizeObserver(() => {
      if (this.renderer.resize()) {
        this.vp = this.vp.resize(this.plotWidth());
        this.layout();
        this.request();
        this.schedule();
      }
    }).observe(ui.canvas);
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.theme = readTheme();
      this.schedule();
    });
    this.replaceURL();
  }

  /** Dropping a file on the viewer uploads it and opens it (as on the library page). */
  enableUpload() {
    enableUpload({ status: (t) => this.status(t), error: (t) => this.banner(t) });
  }

  // ---- geometry -------------------------------------------------------

  plotWidth() {
    return Math.max(1, this.renderer.cssW - this.labelW());
  }

  labelW() {
    return this.meta ? this.renderer.labelWidth(this.meta) : 80;
  }

  /** The whole trace with a small margin. */
  fullView() {
    const m = /** @type {Meta} */ (this.meta);
    const span = m.last > m.first ? m.last - m.first : 1000n;
    const margin = span / 40n + 1n;
    return Viewport.fromRange(m.first - margin, m.last + margin, this.plotWidth());
  }

  /** @param {Viewport} vp */
  clamp(vp) {
    const m = /** @type {Meta} */ (this.meta);
    return vp.clamp(m.first, m.last > m.first ? m.last : m.first + 1000n);
  }

  rowsVisible() {
    return this.renderer.rowsVisible(this.rowH);
  }

  /** Recomputes the rows shown from order, pins, hidden tracks and the filter. */
  layout() {
    const base = this.order.length ? mergeOrder(this.order, this.natural) : this.natural;
    const f = this.filter.toLowerCase();
    const tracks = /** @type {Meta} */ (this.meta).tracks;
    const ok = (/** @type {number} */ id) => !this.hide.has(id) && (!f || (tracks[id]?.name ?? '').toLowerCase().includes(f));
    const pinned = this.pins.filter((id) => tracks[id] && ok(id));
    const pinSet = new Set(pinned);
    this.rows = [...pinned, ...base.filter((id) => !pinSet.has(id) && ok(id))];
    this.top = Math.max(0, Math.min(this.top, this.rows.length - this.rowsVisible()));
    this.ui.hidden.textContent = this.hide.size ? `show ${this.hide.size} hidden` : '';
    this.ui.hidden.hidden = this.hide.size === 0;
  }

  // ---- data -----------------------------------------------------------

  /** Asks for a frame when the one held does not cover the view. */
  request() {
    if (!this.meta) return;
    const vp = this.vp;
    const n = this.rowsVisible();
    const lo = Math.max(0, this.top - EXTRA_ROWS);
    const tracks = this.rows.slice(lo, this.top + n + EXTRA_ROWS);
    const hidden = [...this.hideTypes].sort((a, b) => a - b);
    const tk = tracks.join(',');
    const hk = hidden.join(',');
    const a = this.asked;
    const shown = this.rows.slice(this.top, this.top + n);
    const tracksCovered = a !== null && shown.every((id) => (',' + a.tracks + ',').includes(',' + id + ','));
    if (
      a && tracksCovered && a.hidden === hk &&
      a.start <= vp.start && a.end >= vp.end &&
      Math.abs(Math.log2(a.nsPerPx / vp.nsPerPx)) < 0.01
    ) return;
    const pad = BigInt(Math.round(vp.span * PAD));
    const width = Math.round(vp.width * (1 + 2 * PAD));
    const start = vp.start - pad;
    const end = vp.end + pad;
    this.asked = { start, end, nsPerPx: vp.nsPerPx, tracks: tk, hidden: hk };
    this.frames.push({ start, end, width, tracks, hidden, mode: this.mode });
  }

  /** Draws on the next animation frame. */
  schedule() {
    if (this.drawPending) return;
    this.drawPending = true;
    requestAnimationFrame(() => {
      this.drawPending = false;
      this.draw();
    });
  }

  draw() {
    if (!this.meta) return;
    const t0 = performance.now();
    this.renderer.draw(this.scene());
    this.lastDrawMs = performance.now() - t0;
    this.draws++;
    this.ui.range.textContent = this.rangeText();
  }

  /** @returns {import('./render.js').Scene} */
  scene() {
    return {
      vp: this.vp,
      meta: /** @type {Meta} */ (this.meta),
      order: this.rows,
      top: this.top,
      rowH: this.rowH,
      labelW: this.labelW(),
      frame: this.frame,
      mode: this.mode,
      colorBy: this.colorBy,
      hidden: this.hideTypes,
      selTrack: this.selTrack,
      pinned: new Set(this.pins),
      selEvent: this.selEvent,
      popups: this.popups,
      hits: this.hits.map((h) => h.time),
      fence: this.fence,
      ruler: this.ruler,
      theme: this.theme,
    };
  }

  rangeText() {
    const m = /** @type {Meta} */ (this.meta);
    const a = this.vp.start - m.first;
    const b = this.vp.end - m.first;
    const u = unitFor(b > 0n ? b : -a);
    const step = BigInt(Math.max(1, Math.floor(this.vp.nsPerPx)));
    return `${formatTime(a, u, step)} – ${formatTime(b, u, step)} (${formatDuration(this.vp.span)})`;
  }

  // ---- state and URL --------------------------------------------------

  /** @returns {ViewState} */
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
    st.mode = this.mode;
    st.q = this.query;
    st.filter = this.filter;
    return st;
  }

  /**
   * Applies a URL state (initial load, Back/Forward).
   * @param {ViewState} st @param {boolean} fromHistory
   */
  applyState(st, fromHistory) {
    const m = /** @type {Meta} */ (this.meta);
    const valid = (/** @type {number} */ id) => id >= 0 && id < m.tracks.length;
    this.vp = st.start !== null && st.end !== null ? Viewport.fromRange(st.start, st.end, this.plotWidth()) : this.fullView();
    this.hide = new Set(st.hide.filter(valid));
    this.pins = st.pin.filter(valid);
    this.order = st.order.filter(valid);
    this.hideTypes = new Set(st.hideTypes.filter((id) => id >= 0 && id < m.types.length));
    this.mode = st.mode;
    this.filter = st.filter;
    this.ui.filter.value = st.filter;
    this.selTrack = valid(st.track) ? st.track : -1;
    this.syncTypeBoxes();
    this.layout();
    if (st.q !== this.query) {
      this.ui.search.value = st.q;
      this.runSearch(st.q, false);
    }
    if (st.sel) {
      if (!this.selEvent || this.selEvent.ref !== st.sel) this.selectRef(st.sel, { push: false, reveal: !fromHistory, popup: false });
    } else {
      this.selEvent = null;
      this.details = null;
      renderDetails(this.ui.details, null, m);
    }
    this.ui.mode.textContent = this.mode === 'event' ? 'Summary' : 'Events';
    this.request();
    this.schedule();
  }

  /** Records the view as a new history entry (a discrete step). */
  pushURL() {
    clearTimeout(this.urlTimer);
    const q = '?' + formatState(this.state());
    if (q !== location.search) history.pushState(null, '', q);
  }

  /** Rewrites the current history entry (continuous moves), throttled. */
  replaceURL(delay = 0) {
    clearTimeout(this.urlTimer);
    const run = () => {
      const q = '?' + formatState(this.state());
      if (q !== location.search) history.replaceState(null, '', q);
    };
    if (delay) this.urlTimer = window.setTimeout(run, delay);
    else run();
  }

  /**
   * Sets the viewport, asks for data and draws.
   * @param {Viewport} vp @param {'push' | 'replace' | 'none'} url
   */
  setView(vp, url) {
    this.vp = this.clamp(vp);
    this.request();
    this.schedule();
    if (url === 'push') this.pushURL();
    else if (url === 'replace') this.replaceURL(REPLACE_MS);
  }

  // ---- actions (named in keys.js) ---------------------------------------

  zoomIn() { this.setView(this.vp.zoom(1 - 2 * STEP, this.vp.width / 2), 'push'); }
  zoomOut() { this.setView(this.vp.zoom(1 / (1 - 2 * STEP), this.vp.width / 2), 'push'); }
  panLeft() { this.setView(this.vp.pan(-this.vp.width * STEP), 'push'); }
  panRight() { this.setView(this.vp.pan(this.vp.width * STEP), 'push'); }
  zoomAll() { this.setView(this.fullView(), 'push'); }

  toStart() {
    const m = /** @type {Meta} */ (this.meta);
    this.setView(new Viewport(m.first - BigInt(Math.round(this.vp.span / 40)), this.vp.nsPerPx, this.vp.width), 'push');
  }

  toEnd() {
    const m = /** @type {Meta} */ (this.meta);
    const s = m.last - BigInt(Math.round(this.vp.span * (39 / 40)));
    this.setView(new Viewport(s, this.vp.nsPerPx, this.vp.width), 'push');
  }

  zoomSelection() {
    if (this.ruler && this.ruler.t0 !== this.ruler.t1) {
      const [a, b] = this.ruler.t0 < this.ruler.t1 ? [this.ruler.t0, this.ruler.t1] : [this.ruler.t1, this.ruler.t0];
      const pad = (b - a) / 20n;
      this.setView(Viewport.fromRange(a - pad, b + pad, this.vp.width), 'push');
    } else if (this.selEvent) {
      // Centre on the event at 100 ns per pixel, or closer if already zoomed in.
      const npp = Math.min(this.vp.nsPerPx, 100);
      const half = BigInt(Math.round((npp * this.vp.width) / 2));
      this.setView(new Viewport(this.selEvent.time - half, npp, this.vp.width), 'push');
    }
  }

  back() { history.back(); }
  forward() { history.forward(); }

  /** @param {number} n */
  scrollRows(n) {
    const max = Math.max(0, this.rows.length - this.rowsVisible());
    const top = Math.max(0, Math.min(max, this.top + n));
    if (top === this.top) return;
    this.top = top;
    this.request();
    this.schedule();
  }

  rowsUp() { this.scrollRows(-1); }
  rowsDown() { this.scrollRows(1); }
  pageUp() { this.scrollRows(-this.rowsVisible()); }
  pageDown() { this.scrollRows(this.rowsVisible()); }

  /** @param {number} h */
  setRowH(h) {
    this.rowH = Math.max(ROW_MIN, Math.min(ROW_MAX, h));
    this.layout();
    this.request();
    this.schedule();
  }

  taller() { this.setRowH(Math.round(this.rowH * 1.25) + 1); }
  shorter() { this.setRowH(Math.round(this.rowH / 1.25)); }

  /** @param {number} d */
  moveTrack(d) {
    if (this.rows.length === 0) return;
    let i = this.rows.indexOf(this.selTrack);
    i = i < 0 ? (d > 0 ? this.top : this.top + this.rowsVisible() - 1) : i + d;
    i = Math.max(0, Math.min(this.rows.length - 1, i));
    this.selectTrack(this.rows[i], true);
  }

  trackUp() { this.moveTrack(-1); }
  trackDown() { this.moveTrack(1); }

  /**
   * @param {number} id @param {boolean} reveal scroll it into view
   */
  selectTrack(id, reveal) {
    this.selTrack = id;
    if (reveal) this.revealTrack(id);
    this.replaceURL();
    this.schedule();
  }

  /** @param {number} id */
  revealTrack(id) {
    const i = this.rows.indexOf(id);
    if (i < 0) return;
    const n = this.rowsVisible();
    if (i < this.top) this.top = i;
    else if (i >= this.top + n) this.top = i - n + 1;
    this.request();
  }

  /**
   * Glyphs of the selected track in the current frame, in time order.
   * @param {number} track
   * @returns {{time: bigint, ref: string}[]}
   */
  glyphs(track) {
    const f = this.frame;
    const sl = f?.tracks.get(track);
    if (!f || !sl) return [];
    const out = [];
    const hid = this.hideTypes;
    for (let i = 0; i < sl.n; i++) if (!hid.has(sl.type[i])) out.push({ time: f.base + BigInt(Math.round(sl.off[i])), ref: eventID(track, sl.first[i]) });
    for (let i = 0; i < sl.an; i++) if (!hid.has(sl.atype[i])) out.push({ time: f.base + BigInt(Math.round(sl.aoff[i])), ref: eventID(track, sl.afirst[i]) });
    return out.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  }

  /** @param {number} d */
  stepEvent(d) {
    const track = this.selEvent ? this.selEvent.track : this.selTrack;
    if (track < 0) {
      this.moveTrack(1);
      return;
    }
    const g = this.glyphs(track);
    if (g.length === 0) return;
    const from = this.selEvent && this.selEvent.track === track ? this.selEvent.time : this.vp.time(d > 0 ? 0 : this.vp.width);
    let pick;
    if (d > 0) pick = g.find((x) => x.time > from);
    else pick = g.findLast((x) => x.time < from);
    if (!pick) return;
    this.selectRef(pick.ref, { push: true, reveal: true, popup: false });
  }

  eventPrev() { this.stepEvent(-1); }
  eventNext() { this.stepEvent(1); }

  togglePopup() {
    if (this.selEvent && this.details) this.toggle(this.details);
  }

  /** @param {Details} d */
  toggle(d) {
    const i = this.popups.findIndex((p) => p.ref === d.ref);
    if (i >= 0) this.popups.splice(i, 1);
    else this.popups.push({ ref: d.ref, time: d.time, track: d.track, text: popupText(d, /** @type {Meta} */ (this.meta)) });
    this.schedule();
  }

  mark() {
    if (this.ruler) {
      this.ruler = null;
    } else {
      const t = this.selEvent ? this.selEvent.time : this.vp.time(this.vp.width / 2);
      this.ruler = { t0: t, t1: t };
      this.markKey = true;
    }
    this.schedule();
  }

  raise() {
    if (this.selTrack < 0) return;
    this.order = [this.selTrack, ...this.currentOrder().filter((id) => id !== this.selTrack)];
    this.afterOrder();
  }

  sink() {
    if (this.selTrack < 0) return;
    this.order = [...this.currentOrder().filter((id) => id !== this.selTrack), this.selTrack];
    this.afterOrder();
  }

  currentOrder() {
    return this.order.length ? mergeOrder(this.order, this.natural) : [...this.natural];
  }

  afterOrder() {
    this.layout();
    if (this.selTrack >= 0) this.revealTrack(this.selTrack);
    this.request();
    this.schedule();
    this.pushURL();
  }

  pin() {
    if (this.selTrack < 0) return;
    const i = this.pins.indexOf(this.selTrack);
    if (i >= 0) this.pins.splice(i, 1);
    else this.pins.push(this.selTrack);
    this.afterOrder();
  }

  hideTrack() {
    if (this.selTrack < 0) return;
    this.hide.add(this.selTrack);
    const i = this.rows.indexOf(this.selTrack);
    this.layout();
    this.selTrack = this.rows[Math.min(i, this.rows.length - 1)] ?? -1;
    this.afterOrder();
  }

  showTracks() {
    this.hide.clear();
    this.afterOrder();
  }

  /** Chase (g2): order tracks by the next occurrence of the selected event's type. */
  async chase() {
    const d = this.details;
    const m = /** @type {Meta} */ (this.meta);
    if (!d || !this.selEvent) {
      this.status('Chase needs a selected event.');
      return;
    }
    const ty = m.types[d.type];
    if (!ty) return;
    const q = ty.name ? `#${ty.code} && ${ty.provider ? ty.provider + '/' : ''}${ty.name}` : `#${ty.code}`;
    this.status(`Chasing ${typeText(ty)}…`);
    try {
      const r = await this.source.search(q);
      const first = new Map();
      for (const h of r.hits) if (h.time >= d.time && !first.has(h.track)) first.set(h.track, h.time);
      const chased = [...first.keys()].sort((a, b) => {
        const x = first.get(a), y = first.get(b);
        return x < y ? -1 : x > y ? 1 : a - b;
      });
      const rest = this.currentOrder().filter((id) => !first.has(id));
      this.order = [...chased, ...rest];
      this.top = 0;
      this.afterOrder();
      this.status(`Chase: ${chased.length} tracks hold ${typeText(ty)} from the selected event on.`);
    } catch (e) {
      this.banner(`chase failed: ${errText(e)}`);
    }
  }

  noChase() {
    this.order = [];
    this.afterOrder();
  }

  toggleMode() {
    this.mode = this.mode === 'event' ? 'summary' : 'event';
    this.ui.mode.textContent = this.mode === 'event' ? 'Summary' : 'Events';
    this.asked = null;
    this.request();
    this.schedule();
    this.pushURL();
  }

  toggleColor() {
    this.colorBy = this.colorBy === 'type' ? 'track' : 'type';
    this.schedule();
  }

  focusSearch() { this.ui.search.focus(); this.ui.search.select(); }
  focusFilter() { this.ui.filter.focus(); this.ui.filter.select(); }
  focusTypes() { this.ui.typesAll.focus(); }
  focusDetails() { this.ui.details.focus(); }

  searchNext() { this.stepHit(1); }
  searchPrev() { this.stepHit(-1); }

  async copyLink() {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      this.status('Link copied.');
    } catch {
      this.ui.link.value = url;
      this.ui.link.hidden = false;
      this.ui.link.select();
      this.status('Copy the selected link (Ctrl+C).');
    }
  }

  help() {
    this.ui.help.hidden = !this.ui.help.hidden;
    if (!this.ui.help.hidden) this.ui.helpClose.focus();
  }

  escape() {
    if (!this.ui.help.hidden) {
      this.ui.help.hidden = true;
      this.ui.canvas.focus();
    } else if (this.ruler || this.fence) {
      this.ruler = null;
      this.fence = null;
    } else if (this.popups.length) {
      this.popups = [];
    } else if (this.selEvent || this.selTrack >= 0) {
      this.selEvent = null;
      this.details = null;
      this.selTrack = -1;
      renderDetails(this.ui.details, null, /** @type {Meta} */ (this.meta));
      this.pushURL();
    }
    this.schedule();
  }

  // ---- selection ------------------------------------------------------

  /**
   * Selects an event by id: fetches its details, shows them.
   * @param {string} ref
   * @param {{push: boolean, reveal: boolean, popup: boolean, center?: boolean}} opt
   */
  async selectRef(ref, opt) {
    const m = /** @type {Meta} */ (this.meta);
    this.selSeq = (this.selSeq ?? 0) + 1;
    const seq = this.selSeq;
    this.pendingRef = ref; // the selection to be, for keys pressed meanwhile
    let d;
    try {
      d = await this.source.details(ref);
    } catch (e) {
      if (seq === this.selSeq) {
        this.pendingRef = undefined;
        this.banner(`event ${ref}: ${errText(e)}`);
      }
      return;
    }
    if (seq !== this.selSeq) return;
    this.pendingRef = undefined;
    this.details = d;
    this.selEvent = { ref: d.ref, time: d.time, track: d.track };
    this.selTrack = d.track;
    if (this.ruler && this.markKey) this.ruler = { t0: this.ruler.t0, t1: d.time };
    if (opt.popup) this.toggle(d);
    if (opt.reveal) {
      if (!this.rows.includes(d.track)) {
        this.hide.delete(d.track);
        this.filter = '';
        this.ui.filter.value = '';
        this.layout();
      }
      this.revealTrack(d.track);
      const x = this.vp.x(d.time);
      if (opt.center || x < 0 || x > this.vp.width) {
        this.vp = this.clamp(new Viewport(d.time - BigInt(Math.round(this.vp.span / 2)), this.vp.nsPerPx, this.vp.width));
        this.request();
      }
    }
    renderDetails(this.ui.details, d, m);
    if (opt.push) this.pushURL();
    else this.replaceURL();
    this.schedule();
  }

  /**
   * Hit test at a plot position: the nearest glyph within a few pixels.
   * @param {number} x plot x @param {number} track
   */
  hitTest(x, track) {
    const f = this.frame;
    const sl = f?.tracks.get(track);
    if (!f || !sl) return '';
    const dx0 = Number(f.base - this.vp.start);
    const npp = this.vp.nsPerPx;
    let best = '';
    let bestD = 5;
    const hid = this.hideTypes;
    for (let i = 0; i < sl.n; i++) {
      if (hid.has(sl.type[i])) continue;
      const gx = (dx0 + sl.off[i]) / npp;
      const boxW = this.mode === 'event' ? 14 : 0;
      const d = x >= gx && x <= gx + boxW ? 0 : Math.abs(x - gx);
      if (d < bestD) {
        bestD = d;
        best = eventID(track, sl.first[i]);
      }
    }
    for (let i = 0; i < sl.an; i++) {
      if (hid.has(sl.atype[i])) continue;
      const a = (dx0 + sl.aoff[i]) / npp;
      const b = Math.max(a + 1, (dx0 + sl.aoff[i] + sl.adur[i]) / npp);
      const d = x >= a && x <= b ? 0 : Math.min(Math.abs(x - a), Math.abs(x - b));
      if (d < bestD) {
        bestD = d;
        best = eventID(track, sl.afirst[i]);
      }
    }
    return best;
  }

  // ---- search ---------------------------------------------------------

  /** @param {string} q @param {boolean} jump */
  async runSearch(q, jump) {
    this.query = q.trim();
    this.searchSeq = (this.searchSeq ?? 0) + 1;
    const seq = this.searchSeq;
    this.hits = [];
    this.hitTotal = 0;
    this.ui.hitCount.textContent = '';
    if (!this.query) {
      this.schedule();
      return;
    }
    this.ui.hitCount.textContent = 'searching…';
    try {
      const r = await this.source.search(this.query);
      if (seq !== this.searchSeq) return;
      this.hits = r.hits;
      this.hitTotal = r.total;
      this.hitsMore = !!r.more;
      this.ui.hitCount.textContent = r.total === 0 ? 'no match' : `${r.hits.length}${r.more ? '+' : ''} hits`;
      if (r.total === 0) this.status(`Search for “${this.query}” found nothing.`);
      this.schedule();
      if (jump && this.hits.length) this.stepHit(1);
    } catch (e) {
      if (seq === this.searchSeq) {
        this.ui.hitCount.textContent = 'error';
        this.banner(`search: ${errText(e)}`);
      }
    }
  }

  /** Next/previous hit from the selected event (or the view's start), wrapping. @param {number} d */
  stepHit(d) {
    if (this.hits.length === 0) {
      if (this.ui.search.value.trim() && this.ui.search.value.trim() !== this.query) this.runSearch(this.ui.search.value, true);
      else this.status('No search hits: type a query and press Enter.');
      return;
    }
    const h = this.hits;
    const sel = this.selEvent;
    const from = sel ? sel.time : d > 0 ? this.vp.start : this.vp.end;
    const now = this.pendingRef ?? sel?.ref;
    const cur = now ? h.findIndex((x) => x.ref === now) : -1;
    // Past the end of a list the source cut short: ask for the next hit.
    if (this.hitsMore && cur === h.length - 1 && d > 0 && this.source.searchFrom) {
      this.source.searchFrom(this.query, h[cur].ref, 1).then((hit) => {
        if (!hit) {
          this.status('Search wrapped around.');
          this.ui.hitCount.textContent = `1 / ${h.length}+`;
          this.selectRef(h[0].ref, { push: true, reveal: true, popup: false, center: true });
          return;
        }
        h.push(hit);
        this.ui.hitCount.textContent = `${h.length} / ${h.length}+`;
        this.selectRef(hit.ref, { push: true, reveal: true, popup: false, center: true });
      }, (e) => this.banner(`search: ${errText(e)}`));
      return;
    }
    let i;
    if (cur >= 0) i = (cur + d + h.length) % h.length;
    else if (d > 0) {
      i = h.findIndex((x) => x.time >= from);
      if (i < 0) i = 0;
    } else {
      i = h.findLastIndex((x) => x.time <= from);
      if (i < 0) i = h.length - 1;
    }
    if (cur >= 0 && ((d > 0 && i < cur) || (d < 0 && i > cur))) this.status('Search wrapped around.');
    this.ui.hitCount.textContent = `${i + 1} / ${h.length}${this.hitsMore ? '+' : ''}`;
    this.selectRef(h[i].ref, { push: true, reveal: true, popup: false, center: true });
  }

  // ---- event types ----------------------------------------------------

  buildTypeSelector() {
    const m = /** @type {Meta} */ (this.meta);
    const box = this.ui.types;
    clear(box);
    /** @type {Map<string, import('./source.js').EventType[]>} */
    const groups = new Map();
    for (const t of m.types) {
      const g = groups.get(t.provider) ?? [];
      g.push(t);
      groups.set(t.provider, g);
    }
    this.typeBoxes = /** @type {HTMLInputElement[]} */ ([]);
    for (const [prov, types] of groups) {
      const fs = el('fieldset', { className: 'type-group' });
      const legend = el('legend');
      const all = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', title: 'all of this provider' }));
      legend.append(all, ' ', prov || 'events');
      fs.append(legend);
      const mine = /** @type {HTMLInputElement[]} */ ([]);
      for (const t of types) {
        const cb = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox' }));
        cb.dataset.type = String(t.id);
        cb.checked = !this.hideTypes.has(t.id);
        cb.addEventListener('change', () => {
          if (cb.checked) this.hideTypes.delete(t.id);
          else this.hideTypes.add(t.id);
          this.syncTypeBoxes();
          this.typesChanged();
        });
        const label = el('label', { className: 'type' });
        const sw = el('span', { className: 'swatch' });
        sw.style.background = this.renderer.typeColors[t.id] ?? '';
        label.append(cb, sw, `[${t.code}] ${t.name}`);
        fs.append(label);
        mine.push(cb);
        this.typeBoxes.push(cb);
      }
      all.addEventListener('change', () => {
        for (const cb of mine) {
          const id = Number(cb.dataset.type);
          if (all.checked) this.hideTypes.delete(id);
          else this.hideTypes.add(id);
        }
        this.syncTypeBoxes();
        this.typesChanged();
      });
      box.append(fs);
    }
    this.renderer.colors(m, this.theme);
    for (const cb of this.typeBoxes) {
      const sw = /** @type {HTMLElement} */ (cb.nextSibling);
      sw.style.background = this.renderer.typeColors[Number(cb.dataset.type)] ?? '';
    }
  }

  syncTypeBoxes() {
    for (const cb of this.typeBoxes ?? []) cb.checked = !this.hideTypes.has(Number(cb.dataset.type));
    for (const fs of this.ui.types.querySelectorAll('fieldset')) {
      const boxes = [...fs.querySelectorAll('label input')].map((x) => /** @type {HTMLInputElement} */ (x));
      const all = /** @type {HTMLInputElement} */ (fs.querySelector('legend input'));
      all.checked = boxes.every((b) => b.checked);
      all.indeterminate = !all.checked && boxes.some((b) => b.checked);
    }
  }

  typesChanged() {
    this.request();
    this.schedule();
    this.pushURL();
  }

  // ---- status ---------------------------------------------------------

  /** @param {string} text */
  status(text) {
    this.ui.message.textContent = text;
  }

  /** An error banner with a close button. @param {string} text */
  banner(text) {
    const b = el('div', { className: 'banner', role: 'alert' });
    const close = el('button', { type: 'button', className: 'close', title: 'dismiss' });
    close.textContent = '×';
    close.addEventListener('click', () => b.remove());
    const span = el('span');
    span.textContent = text;
    b.append(span, close);
    this.ui.status.append(b);
  }

  // ---- input ----------------------------------------------------------

  bind() {
    const ui = this.ui;
    const c = ui.canvas;
    /** @type {Record<string, () => void>} */
    const actions = {};
    for (const k of KEYS) actions[k.action] = () => /** @type {any} */ (this)[k.action]();
    actions.help = () => this.help();

    document.addEventListener('keydown', (e) => {
      const t = /** @type {HTMLElement} */ (e.target);
      const typing = t instanceof HTMLInputElement && t.type !== 'checkbox' || t instanceof HTMLTextAreaElement;
      if (typing) {
        if (e.code === 'Escape') {
          t.blur();
          c.focus();
          e.preventDefault();
        }
        return;
      }
      if (t instanceof HTMLButtonElement && (e.code === 'Enter' || e.code === 'Space')) return;
      if (t instanceof HTMLInputElement && (e.code === 'Space' || e.code === 'Enter')) return;
      const a = lookup(e);
      if (!a || !actions[a]) return;
      if (!ui.help.hidden && a !== 'help' && a !== 'escape') return;
      e.preventDefault();
      actions[a]();
    });

    // Buttons in the toolbar name their action.
    for (const b of ui.bar.querySelectorAll('button[data-action]')) {
      const a = /** @type {HTMLElement} */ (b).dataset.action ?? '';
      b.addEventListener('click', () => actions[a]?.());
    }
    ui.helpClose.addEventListener('click', () => this.help());

    ui.search.addEventListener('keydown', (e) => {
      if (e.code === 'Enter') {
        e.preventDefault();
        const q = ui.search.value;
        if (q.trim() === this.query && this.hits.length) this.stepHit(e.shiftKey ? -1 : 1);
        else this.runSearch(q, true).then(() => this.pushURL());
      }
    });
    ui.filter.addEventListener('input', () => {
      this.filter = ui.filter.value;
      this.layout();
      this.request();
      this.schedule();
      this.replaceURL(REPLACE_MS);
    });
    ui.typesAll.addEventListener('click', () => {
      this.hideTypes.clear();
      this.syncTypeBoxes();
      this.typesChanged();
    });
    ui.typesNone.addEventListener('click', () => {
      for (const t of /** @type {Meta} */ (this.meta).types) this.hideTypes.add(t.id);
      this.syncTypeBoxes();
      this.typesChanged();
    });
    ui.hidden.addEventListener('click', () => this.showTracks());

    window.addEventListener('popstate', () => this.applyState(parseState(location.search), true));

    c.addEventListener('contextmenu', (e) => e.preventDefault());
    c.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    c.addEventListener('pointerdown', (e) => this.onPointerDown(e));
  }

  /** @param {WheelEvent} e */
  onWheel(e) {
    e.preventDefault();
    const r = this.ui.canvas.getBoundingClientRect();
    const x = e.clientX - r.left - this.labelW();
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    const dy = e.deltaY * unit;
    const dx = e.deltaX * unit;
    if (e.ctrlKey || e.metaKey) {
      this.setView(this.vp.zoom(Math.exp(dy * 0.002), Math.max(0, Math.min(this.vp.width, x))), 'replace');
    } else if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      this.setView(this.vp.pan(e.shiftKey ? dy || dx : dx), 'replace');
    } else {
      this.wheelRows = (this.wheelRows ?? 0) + dy / 40;
      const n = Math.trunc(this.wheelRows);
      if (n !== 0) {
        this.wheelRows -= n;
        this.scrollRows(n);
      }
    }
  }

  /** @param {PointerEvent} e */
  onPointerDown(e) {
    const c = this.ui.canvas;
    c.focus();
    const r = c.getBoundingClientRect();
    const L = this.labelW();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top;
    const row = py >= ROWS_Y ? Math.floor((py - ROWS_Y) / this.rowH) + this.top : -1;
    const track = row >= 0 && row < this.rows.length ? this.rows[row] : -1;

    if (py < OVERVIEW_H && px >= L && e.button === 0) {
      const m = /** @type {Meta} */ (this.meta);
      const f = (px - L) / (r.width - L);
      const t = m.first + BigInt(Math.round(f * Number(m.last - m.first)));
      this.setView(new Viewport(t - BigInt(Math.round(this.vp.span / 2)), this.vp.nsPerPx, this.vp.width), 'push');
      return;
    }
    if (px < L) {
      if (track < 0 || e.button !== 0) return;
      this.selTrack = track;
      if (e.ctrlKey || e.metaKey) this.sink();
      else if (e.shiftKey) this.raise();
      else this.selectTrack(track, false);
      return;
    }
    const x0 = px - L;
    const vp0 = this.vp;
    let moved = false;
    const kind = e.button === 2 ? 'ruler' : e.button === 0 ? (e.shiftKey ? 'fence' : 'pan') : '';
    if (!kind) return;
    e.preventDefault();
    c.setPointerCapture(e.pointerId);
    if (kind === 'ruler') {
      const t = vp0.time(x0);
      this.ruler = { t0: t, t1: t };
      this.markKey = false;
    }
    const move = (/** @type {PointerEvent} */ ev) => {
      const x = ev.clientX - r.left - L;
      if (!moved && Math.abs(x - x0) < DRAG_PX) return;
      moved = true;
      if (kind === 'pan') this.setView(vp0.pan(x0 - x), 'replace');
      else if (kind === 'fence') {
        this.fence = { x0, x1: x };
        this.schedule();
      } else {
        this.ruler = { t0: vp0.time(x0), t1: vp0.time(x) };
        this.schedule();
      }
    };
    const up = (/** @type {PointerEvent} */ ev) => {
      c.removeEventListener('pointermove', move);
      c.removeEventListener('pointerup', up);
      c.removeEventListener('pointercancel', up);
      const x = ev.clientX - r.left - L;
      if (kind === 'fence') {
        this.fence = null;
        if (Math.abs(x - x0) >= FENCE_MIN_PX) {
          const a = Math.min(x, x0), b = Math.max(x, x0);
          this.setView(Viewport.fromRange(vp0.time(a), vp0.time(b), vp0.width), 'push');
        }
        this.schedule();
        return;
      }
      if (kind === 'pan' && moved) {
        this.pushURLAfterDrag();
        return;
      }
      if (kind === 'pan' && !moved && track >= 0) this.click(x0, track);
    };
    c.addEventListener('pointermove', move);
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
  }

  pushURLAfterDrag() {
    // The drag replaced the entry it started from; the next discrete step pushes.
    this.replaceURL();
  }

  /** A click in the plot: toggle the event's box, or select the track. @param {number} x @param {number} track */
  click(x, track) {
    const ref = this.hitTest(x, track);
    if (ref) {
      this.selectRef(ref, { push: true, reveal: false, popup: true });
    } else {
      this.selectTrack(this.selTrack === track ? -1 : track, false);
    }
  }
}

/** Explicit order first, then any track it misses, in natural order. @param {number[]} order @param {number[]} natural */
function mergeOrder(order, natural) {
  const seen = new Set(order);
  return [...order, ...natural.filter((id) => !seen.has(id))];
}

/** @param {import('./source.js').EventType} t */
export function typeText(t) {
  return `[${t.code}] ${t.name}`;
}

/** @param {Details} d @param {Meta} m */
function popupText(d, m) {
  if (d.label) return d.label;
  const t = m.types[d.type];
  return t ? typeText(t) : `event ${d.ref}`;
}

/** @param {unknown} e */
export function errText(e) {
  return e instanceof Error ? e.message : String(e);
}

/** Theme colours from the CSS custom properties. @returns {import('./render.js').Theme} */
function readTheme() {
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
    dark: matchMedia('(prefers-color-scheme: dark)').matches,
  };
}

/**
 * Builds the controls around the canvas (the server renders main#viewer,
 * canvas#timeline, aside#details, div#status and a#library-link; missing
 * ones are created).
 * @param {HTMLElement} root
 */
function buildDOM(root) {
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
    button('⇤', 'toStart', 'start (Home)'), button('−', 'zoomOut', 'zoom out (S)'), button('+', 'zoomIn', 'zoom in (W)'),
    button('⇥', 'toEnd', 'end (End)'), button('All', 'zoomAll', 'whole trace (0)'), button('Zoom sel.', 'zoomSelection', 'zoom to the ruler or the selected event (Z)'),
    mode, button('Chase', 'chase', 'order tracks by the selected event type (M)'), button('Unchase', 'noChase', 'natural track order (Shift+M)'),
    search, button('◀', 'searchPrev', 'previous hit (Shift+N)'), button('▶', 'searchNext', 'next hit (N)'), hitCount,
    button('Copy link', 'copyLink', 'K'), link, button('?', 'help', 'keys (?)'),
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

  const help = el('div', { className: 'help', id: 'help', role: 'dialog' });
  help.setAttribute('aria-label', 'keyboard and mouse');
  help.hidden = true;
  const helpBox = el('div', { className: 'help-box' });
  const helpTitle = el('h2');
  helpTitle.textContent = 'Keys';
  const table = el('table');
  const row = (/** @type {string} */ k, /** @type {string} */ v) => {
    const tr = el('tr');
    const a = el('td');
    const kbd = el('kbd');
    kbd.textContent = k;
    a.append(kbd);
    const b = el('td');
    b.textContent = v;
    tr.append(a, b);
    table.append(tr);
  };
  for (const k of KEYS) row(k.keys, k.help);
  row('?', 'this overlay');
  const mouseTitle = el('h2');
  mouseTitle.textContent = 'Mouse';
  const mtable = el('table');
  for (const [k, v] of MOUSE) {
    const tr = el('tr');
    const a = el('td');
    a.textContent = k;
    const b = el('td');
    b.textContent = v;
    tr.append(a, b);
    mtable.append(tr);
  }
  const helpClose = el('button', { type: 'button' });
  helpClose.textContent = 'Close (Esc)';
  helpBox.append(helpTitle, table, mouseTitle, mtable, helpClose);
  help.append(helpBox);

  root.classList.add('viewer');
  root.prepend(bar, range);
  status.append(message);
  root.append(side, help);
  // Order inside the grid is set by CSS; keep the canvas before details for
  // tab order.
  root.insertBefore(canvas, details.parentElement === root ? details : null);
  return { canvas, details, status, bar, title, info, search, hitCount, mode, link, progress, progressText, range, message, filter, hidden, typesAll, typesNone, types, help, helpClose };
}

export { renderDetails };
