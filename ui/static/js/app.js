// @ts-check
// App: the viewer page's controller, which wires the parts together. The
// model (model.js) holds the view state; page.js builds the controls;
// input.js turns keys, buttons and pointer gestures into the actions of
// actions.js; search.js, types.js and panels.js own the search box, the
// event-type selector and the text panels; urlsync.js keeps the URL in step.
// The App itself opens the source, asks it for frames (latest wins), selects
// events and has the renderer draw at most once per animation frame.
//
// While the source indexes the trace, the canvas shows its progress
// (render.js drawProgress) until the first prefix of a big trace opens;
// the toolbar then shows it while the prefix grows (live.js). detailspane.js owns the details panel's frame,
// tip.js the track names' tooltip; the layout they change is a pref
// (prefs.js, localStorage), not view state.
//
// A live trace (still being recorded) is live.js's: the badge, chase and
// Stop, the growing span and metadata.
//
// window.__viewer is the App: the browser tests (web/browser) read its
// getters below, labelW(), rowsVisible(), draws, ui.canvas, renderer,
// progressDrawn (the progress last drawn, on the canvas or, while the
// prefix shows, the toolbar), stacks (the stacks panel) and live (live.js:
// live, chasing, chaseFrames, indexing).

'use strict';

import { Renderer } from './render.js';
import { Viewport } from './viewport.js';
import { LatestWins } from './source.js';
import { Model, ROW_MIN, ROW_MAX } from './model.js';
import { fullView, clampView, centreOn, rangeText } from './navigate.js';
import { scrollTop, revealTop } from './tracks.js';
import { hitTest } from './glyphs.js';
import { UrlSync, REPLACE_MS } from './urlsync.js';
import { buildDOM, readTheme } from './page.js';
import { Panels, errText } from './panels.js';
import { Search } from './search.js';
import { TypeSelector } from './types.js';
import { bindInput } from './input.js';
import { actions } from './actions.js';
import { enableUpload } from './upload.js';
import { renderDetails } from './dom.js';
import { StacksPanel } from './stacks.js';
import { DetailsPane } from './detailspane.js';
import { Tip } from './tip.js';
import { loadPrefs, savePrefs, clampLabelW } from './prefs.js';
import { progressText, shownPercent } from './progress.js';
import { DerivedTracks } from './derived.js';
import { TimelineFilter } from './filter.js';
import { AreaTables } from './areatable.js';
import { LiveView } from './live.js';

/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./urlstate.js').ViewState} ViewState */

const PAD = 0.5; // request half a width beyond each edge
const EXTRA_ROWS = 8; // and a few rows beyond the visible ones
const PLOT_KEEP = 100; // px of plot a wide name column leaves

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
    this.m = new Model();
    this.ui = buildDOM(root);
    this.renderer = new Renderer(this.ui.canvas);
    /** @type {{start: bigint, end: bigint, nsPerPx: number, tracks: string, hidden: string} | null} */
    this.asked = null;
    this.drawPending = false;
    this.draws = 0;
    this.lastDrawMs = 0;
    this.selSeq = 0;
    this.theme = readTheme();
    this.prefs = loadPrefs();
    this.pane = new DetailsPane(root, this.ui, this.prefs);
    this.tip = new Tip(this.ui.tip);
    /** @type {import('./progress.js').Progress | null} the source's progress while it indexes */
    this.loading = null;
    /** @type {string} why the trace could not be opened */
    this.failed = '';
    /** @type {{percent: number, events: number} | null} the progress the canvas shows, percent as drawn */
    this.progressDrawn = null;
    // A combined view's source adds its traces and offsets (together.js).
    this.url = new UrlSync(() => {
      const st = this.filter.addState(this.m.state());
      /** @type {any} */ (this.source).addState?.(st);
      return st;
    });
    this.panels = new Panels(this.m, this.ui);
    this.search = new Search(this.m, this.ui, source, {
      schedule: () => this.schedule(),
      pushURL: () => this.pushURL(),
      status: (t) => this.panels.status(t),
      banner: (t) => this.panels.banner(t),
      select: (ref, opt) => this.selectRef(ref, opt),
      overviewWidth: () => this.plotWidth(),
    });
    // The timeline filter (filter.js) and the area-selection panel
    // (areatable.js, with the events table).
    this.filter = new TimelineFilter(this.ui.hitCount, source, {
      refresh: () => {
        this.asked = null;
        this.request();
        this.schedule();
      },
      schedule: () => this.schedule(),
      pushURL: () => this.pushURL(),
      status: (t) => this.panels.status(t),
      banner: (t) => this.panels.banner(t),
    });
    this.area = new AreaTables(root, source, {
      m: this.m,
      filterQuery: () => this.filter.query,
      search: (q) => {
        this.ui.search.value = q;
        this.search.run(q, true).then(() => this.pushURL());
      },
      select: (ref) => this.selectRef(ref, { push: true, reveal: true, popup: false, center: true }),
      status: (t) => this.panels.status(t),
    });
    this.types = new TypeSelector(this.m, this.ui, this.renderer, () => {
      this.request();
      this.schedule();
      this.pushURL();
    });
    this.stacks = new StacksPanel(root, {
      m: this.m, source, ui: this.ui,
      theme: () => this.theme,
      schedule: () => this.schedule(),
      pushURL: () => this.pushURL(),
      replaceURL: (d) => this.replaceURL(d),
      status: (t) => this.panels.status(t),
      banner: (t) => this.panels.banner(t),
    });
    this.actions = actions(this);
    this.frames = new LatestWins(
      (/** @type {import('./source.js').ViewRequest} */ q) => this.source.view(q),
      (/** @type {Frame} */ f) => {
        this.m.frame = f;
        this.schedule();
      },
      (/** @type {unknown} */ e) => this.panels.banner(`viewport request failed: ${errText(e)}`),
    );
    this.dt = new DerivedTracks(this);
    this.live = new LiveView(this);
  }

  // The view state the browser tests read (window.__viewer.vp, …).
  get meta() { return this.m.meta; }
  get frame() { return this.m.frame; }
  get vp() { return this.m.vp; }
  get rows() { return this.m.rows; }
  get top() { return this.m.top; }
  get rowH() { return this.m.rowH; }
  get order() { return this.m.order; }
  get mode() { return this.m.mode; }
  get hideTypes() { return this.m.hideTypes; }
  get selTrack() { return this.m.selTrack; }
  get selEvent() { return this.m.selEvent; }
  get details() { return this.m.details; }
  get hits() { return this.m.hits; }
  get ruler() { return this.m.ruler; }
  get spans() { return this.m.spans; }
  get derived() { return this.m.derived; }
  get groups() { return this.m.groups; }
  get selSlice() { return this.m.selSlice; }
  get flows() { return this.m.flows; }
  get allFlows() { return this.m.allFlows; }

  /** Opens the source and shows the trace. */
  async start() {
    const ui = this.ui;
    const panels = this.panels;
    // Dropping a file on the viewer uploads it and opens it (as on the library page).
    enableUpload({ status: (t) => panels.status(t), error: (t) => panels.banner(t) });
    const src = /** @type {any} */ (this.source);
    if ('onClose' in src) src.onClose = (/** @type {string} */ why) => panels.banner(`${why}. Reload the page to reconnect.`);
    this.pane.bind();
    new ResizeObserver(() => this.resized()).observe(ui.canvas);
    ui.progress.hidden = false;
    this.showProgress({ state: 'connecting', percent: 0, events: 0 });
    this.live.attach(!!src.info?.live);
    let meta;
    try {
      meta = await this.source.open((p) => this.showProgress(p));
    } catch (e) {
      ui.progress.hidden = true;
      ui.progressText.textContent = '';
      this.loading = null;
      this.failed = errText(e);
      this.schedule();
      panels.banner(errText(e));
      return;
    }
    // A stored trace still indexing opens on its prefix: the progress
    // stays on the toolbar until indexing ends (live.js).
    if (!this.live.indexing) this.indexingEnded();
    if (!ui.title.textContent) ui.title.textContent = meta.name;
    // Before the model takes the trace: until the view state is applied
    // nothing may draw or ask for frames.
    await this.loadDerived(meta);
    this.m.setMeta(meta);
    this.showInfo();
    if (meta.error) panels.banner(`The trace is damaged: ${meta.error}. Events up to the dashed line are shown.`);
    this.types.build(this.theme);
    this.renderer.resize();
    this.m.vp = fullView(meta, this.plotWidth());
    this.applyState(this.initial, false);
    bindInput(this);
    this.search.bind();
    this.filter.bind();
    this.types.bind();
    this.url.onPop((st) => this.applyState(st, true));
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.theme = readTheme();
      this.schedule();
    });
    this.replaceURL();
    this.live.opened();
  }

  /** The trace's line in the toolbar: format, events, tracks. */
  showInfo() {
    const meta = this.m.trace;
    this.ui.info.textContent = `${meta.format} · ${meta.events.toLocaleString()} events · ${meta.tracks.length} tracks`;
  }

  /**
   * Takes the trace's metadata again (a live trace grew tracks or types,
   * or ended), keeping the view state: order, pins, hidden tracks and
   * types, selection, the view's range. A live message's span and count
   * are newer than the metadata's.
   * @param {import('./livestate.js').LiveMsg | null} msg
   */
  async reloadMeta(msg) {
    const src = this.source;
    if (!src.loadMeta || !this.m.meta) return;
    const meta = await src.loadMeta();
    if (msg && !msg.ended) {
      if (msg.last > meta.last) meta.last = msg.last;
      if (msg.first < meta.first) meta.first = msg.first;
      meta.events = Math.max(meta.events, msg.events);
    }
    await this.loadDerived(meta);
    this.m.setMeta(meta);
    this.types.build(this.theme);
    this.types.sync();
    this.showInfo();
    this.layout();
    this.m.vp = this.m.vp.resize(this.plotWidth()); // the name column may have widened
    this.asked = null;
    this.request();
    this.schedule();
  }

  /**
   * The source's progress while it indexes: on the toolbar and drawn on
   * the canvas. @param {import('./progress.js').Progress} p
   */
  showProgress(p) {
    // Once open, progress is a stored trace's indexing while its prefix
    // shows (on the toolbar only), else a live trace's or its stored
    // index's being built in the background (live.js says what matters).
    if (this.m.meta && !(this.live.indexing && p.state === 'indexing')) return;
    this.loading = p;
    this.ui.progress.hidden = false;
    this.ui.progress.value = shownPercent(p.percent);
    this.ui.progressText.textContent = progressText(p);
    if (this.m.meta) this.progressDrawn = { percent: shownPercent(p.percent), events: p.events };
    this.schedule();
  }

  /** The trace is indexed (or was when it opened): the progress goes. */
  indexingEnded() {
    this.loading = null;
    this.ui.progress.hidden = true;
    this.ui.progressText.textContent = '';
  }

  /**
   * The canvas changed size (window, details panel, stacks panel). Resizing
   * clears it, so it is drawn again at once (a ResizeObserver runs before
   * the paint): no blank frame.
   */
  resized() {
    if (!this.renderer.resize()) return;
    if (this.m.meta) {
      this.m.vp = this.m.vp.resize(this.plotWidth());
      this.layout();
      this.request();
    }
    this.draw();
  }


  // ---- geometry -------------------------------------------------------

  plotWidth() {
    return Math.max(1, this.renderer.cssW - this.labelW());
  }

  /** The name column's width: the reader's (dragged), else fitting the names. */
  labelW() {
    if (this.prefs.labelW > 0) return clampLabelW(this.prefs.labelW, this.renderer.cssW, PLOT_KEEP);
    return this.m.meta ? this.renderer.labelWidth(this.m.meta) : 80;
  }

  /**
   * Sets the name column's width (a drag of its edge), 0 to fit the
   * names; with save, keeps it in the prefs for the next visit.
   * @param {number} w @param {boolean} save
   */
  setLabelW(w, save) {
    // 0: back to fitting the names (a double click on the edge).
    this.prefs.labelW = w > 0 ? clampLabelW(w, this.renderer.cssW, PLOT_KEEP) : 0;
    if (save) savePrefs(this.prefs);
    this.m.vp = this.m.vp.resize(this.plotWidth());
    this.request();
    this.schedule();
  }

  rowsVisible() {
    return this.renderer.rowsVisible(this.m.rowH);
  }

  /** Recomputes the rows shown and the hidden-tracks button. */
  layout() {
    const m = this.m;
    m.layout(this.rowsVisible());
    const n = m.hide.size + m.hideDerived.size;
    this.ui.hidden.textContent = n ? `show ${n} hidden` : '';
    this.ui.hidden.hidden = n === 0;
  }

  // ---- data and drawing -----------------------------------------------

  /** Asks for a frame when the one held does not cover the view. */
  request() {
    const m = this.m;
    if (!m.meta) return;
    const vp = m.vp;
    const n = this.rowsVisible();
    const lo = Math.max(0, m.top - EXTRA_ROWS);
    const near = m.rows.slice(lo, m.top + n + EXTRA_ROWS);
    const tracks = near.filter((r) => r >= 0);
    this.requestSpans(near);
    if (m.flowsAll) this.dt.flowsSoon();
    const hidden = [...m.hideTypes].sort((a, b) => a - b);
    const tk = tracks.join(',');
    const hk = hidden.join(',');
    const a = this.asked;
    const shown = m.rows.slice(m.top, m.top + n).filter((r) => r >= 0);
    const tracksCovered = a !== null && shown.every((id) => (',' + a.tracks + ',').includes(',' + id + ','));
    if (
      a && tracksCovered && a.hidden === hk &&
      a.start <= vp.start && a.end >= vp.end &&
      Math.abs(Math.log2(a.nsPerPx / vp.nsPerPx)) < 0.01
    ) return;
    const pad = BigInt(Math.round(vp.span * PAD));
    // A chased view ends at the trace's end: nothing to pad after it.
    const chase = this.live.chasing;
    const width = Math.round(vp.width * (1 + (chase ? 1 : 2) * PAD));
    const start = vp.start - pad;
    const end = chase ? vp.end : vp.end + pad;
    this.asked = { start, end, nsPerPx: vp.nsPerPx, tracks: tk, hidden: hk };
    this.frames.push({ start, end, width, tracks, hidden, mode: m.mode, chase });
    this.filter.request({ start, end, width, tracks, hidden, mode: m.mode });
  }

  // ---- derived tracks (derived.js) -------------------------------------

  /** @param {import('./source.js').Meta} meta */
  loadDerived(meta) { return this.dt.load(meta); }
  /** @param {number[]} near */
  requestSpans(near) { this.dt.requestSpans(near); }
  requestAllFlows() { return this.dt.requestAllFlows(); }
  toggleFlows() { this.dt.toggleFlows(); }
  /** @param {string} [key] */
  toggleGroup(key) { this.dt.toggleGroup(key); }
  /** @param {number} x @param {number} row @param {number} dy */
  clickRow(x, row, dy) { this.dt.clickRow(x, row, dy); }
  /** @param {number} track @param {number} slice */
  selectSlice(track, slice) { return this.dt.selectSlice(track, slice); }
  /** @param {string} ref */
  loadFlows(ref) { return this.dt.loadFlows(ref); }
  /** @param {number} d */
  stepSlice(d) { this.dt.stepSlice(d); }
  /** @param {bigint} t */
  snap(t) { return this.dt.snap(t); }
  get sliceDetails() { return this.dt.sliceDetails; }
  get spanDraws() { return this.dt.spanDraws; }

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
    const m = this.m;
    if (!m.meta) {
      // Not open yet: the progress, or why it failed; never a blank canvas.
      if (this.renderer.cssW === 0) this.renderer.resize();
      const p = this.loading ?? { state: 'indexing', percent: 0, events: 0 };
      this.renderer.drawProgress(p, this.theme, this.failed ? `This trace could not be opened: ${this.failed}` : undefined);
      this.progressDrawn = this.failed ? null : { percent: shownPercent(p.percent), events: p.events };
      return;
    }
    const t0 = performance.now();
    this.renderer.draw(this.filter.decorate(m.scene(this.labelW(), this.theme)));
    this.lastDrawMs = performance.now() - t0;
    this.draws++;
    this.ui.range.textContent = rangeText(m.vp, m.meta);
    if (this.stacks.isOpen) this.stacks.check();
    if (this.area.isOpen) this.area.check();
  }

  // ---- state and URL --------------------------------------------------

  /**
   * Applies a URL state (initial load, Back/Forward).
   * @param {ViewState} st @param {boolean} fromHistory
   */
  applyState(st, fromHistory) {
    const m = this.m;
    if (fromHistory) this.live.moved(); // Back/Forward leaves the chase
    m.apply(st, this.plotWidth());
    this.ui.filter.value = st.filter;
    this.filter.apply(st.where, st.whereMode);
    this.types.sync();
    this.layout();
    if (st.q !== m.query) {
      this.ui.search.value = st.q;
      this.search.run(st.q, false);
    }
    if (st.sel) {
      if (!m.selEvent || m.selEvent.ref !== st.sel) this.selectRef(st.sel, { push: false, reveal: !fromHistory, popup: false });
    } else {
      m.selEvent = null;
      m.details = null;
      this.panels.showDetails(null);
    }
    this.ui.mode.textContent = m.mode === 'event' ? 'Summary' : 'Events';
    this.stacks.sync();
    this.request();
    this.schedule();
  }

  pushURL() { this.url.push(); }
  /** @param {number} [delay] */
  replaceURL(delay) { this.url.replace(delay); }

  /**
   * Sets the viewport, asks for data and draws.
   * @param {Viewport} vp @param {'push' | 'replace' | 'none'} url
   */
  setView(vp, url) {
    this.live.moved();
    this.m.vp = clampView(vp, this.m.trace);
    this.request();
    this.schedule();
    if (url === 'push') this.pushURL();
    else if (url === 'replace') this.replaceURL(REPLACE_MS);
  }

  // ---- rows and tracks ------------------------------------------------

  /** @param {number} n */
  scrollRows(n) {
    const m = this.m;
    const top = scrollTop(m.top, n, m.rows.length, this.rowsVisible());
    if (top === m.top) return;
    m.top = top;
    this.request();
    this.schedule();
  }

  /** @param {number} h */
  setRowH(h) {
    this.m.rowH = Math.max(ROW_MIN, Math.min(ROW_MAX, h));
    this.layout();
    this.request();
    this.schedule();
  }

  /** @param {number} id @param {boolean} reveal scroll it into view */
  selectTrack(id, reveal) {
    this.m.selTrack = id;
    this.m.selDerived = -1;
    if (reveal) this.revealTrack(id);
    if (!this.m.selEvent) this.panels.showDetails(null); // the track's details
    this.replaceURL();
    this.schedule();
  }

  /** @param {number} id */
  revealTrack(id) {
    const m = this.m;
    const i = m.rows.indexOf(id);
    if (i < 0) return;
    m.top = revealTop(m.top, i, this.rowsVisible());
    this.request();
  }

  /** After the track order, pins or hidden tracks changed. */
  afterOrder() {
    this.layout();
    if (this.m.selTrack >= 0) this.revealTrack(this.m.selTrack);
    this.request();
    this.schedule();
    this.pushURL();
  }

  // ---- selection ------------------------------------------------------

  /** A click in the plot: toggle the event's box, or select the track. @param {number} x @param {number} track */
  click(x, track) {
    const m = this.m;
    // With the filter hiding the other events, only the drawn ones are hit.
    const f = this.filter.query && this.filter.mode === 'hide' ? this.filter.frame : m.frame;
    const ref = hitTest(f, m.vp, track, x, m.hideTypes, m.mode);
    if (ref) this.selectRef(ref, { push: true, reveal: false, popup: true });
    else this.selectTrack(m.selTrack === track ? -1 : track, false);
  }

  /**
   * Selects an event by id: fetches its details, shows them.
   * @param {string} ref
   * @param {{push: boolean, reveal: boolean, popup: boolean, center?: boolean}} opt
   */
  async selectRef(ref, opt) {
    const m = this.m;
    const seq = ++this.selSeq;
    m.pendingRef = ref;
    let d;
    try {
      d = await this.source.details(ref);
    } catch (e) {
      if (seq === this.selSeq) {
        m.pendingRef = undefined;
        this.panels.banner(`event ${ref}: ${errText(e)}`);
      }
      return;
    }
    if (seq !== this.selSeq) return;
    m.pendingRef = undefined;
    m.details = d;
    m.selEvent = { ref: d.ref, time: d.time, track: d.track };
    m.selTrack = d.track;
    if (m.ruler && m.markKey) m.ruler = { t0: m.ruler.t0, t1: d.time };
    if (opt.popup) {
      this.panels.togglePopup(d);
      this.schedule();
    }
    if (opt.reveal) {
      if (!m.rows.includes(d.track)) {
        m.hide.delete(d.track);
        m.filter = '';
        this.ui.filter.value = '';
        this.layout();
      }
      this.revealTrack(d.track);
      const x = m.vp.x(d.time);
      if (opt.center || x < 0 || x > m.vp.width) {
        this.live.moved();
        m.vp = clampView(centreOn(m.vp, d.time), m.trace);
        this.request();
      }
    }
    m.selSlice = null;
    m.selDerived = -1;
    this.panels.showDetails(d);
    this.loadFlows(d.ref);
    if (opt.push) this.pushURL();
    else this.replaceURL();
    this.schedule();
  }
}

export { typeText, errText } from './panels.js';
export { renderDetails };
