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
// (render.js drawProgress). detailspane.js owns the details panel's frame,
// tip.js the track names' tooltip; the layout they change is a pref
// (prefs.js, localStorage), not view state.
//
// window.__viewer is the App: the browser tests (web/browser) read its
// getters below, labelW(), rowsVisible(), draws, ui.canvas, renderer,
// progressDrawn (the progress last drawn) and stacks (the stacks panel).

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
import { layoutItems, itemAt, snapTime } from './spans.js';
import { rowKind } from './groups.js';
import { renderSliceDetails } from './dom.js';

/** @typedef {import('./source.js').Source} Source */
/** @typedef {import('./source.js').Frame} Frame */
/** @typedef {import('./urlstate.js').ViewState} ViewState */

const PAD = 0.5; // request half a width beyond each edge
const EXTRA_ROWS = 8; // and a few rows beyond the visible ones
const PLOT_KEEP = 100; // px of plot a wide name column leaves
const SPANS_DEBOUNCE_MS = 40; // derived tracks are asked for once a pan or zoom pauses this long
const SNAP_PX = 6; // the ruler snaps to a slice edge this close

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
    this.url = new UrlSync(() => this.m.state());
    this.panels = new Panels(this.m, this.ui);
    this.search = new Search(this.m, this.ui, source, {
      schedule: () => this.schedule(),
      pushURL: () => this.pushURL(),
      status: (t) => this.panels.status(t),
      banner: (t) => this.panels.banner(t),
      select: (ref, opt) => this.selectRef(ref, opt),
      overviewWidth: () => this.plotWidth(),
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
    /** @type {string} the derived-track request last sent, as a key */
    this.spansAsked = '';
    this.spansTimer = 0;
    this.spanFrames = new LatestWins(
      (/** @type {import('./source.js').SpanQuery} */ q) => this.spansWithEntry(q),
      (/** @type {import('./spans.js').SpanFrame} */ f) => {
        this.m.spans = f;
        this.spanDraws++;
        this.schedule();
      },
      (/** @type {unknown} */ e) => this.panels.banner(`derived tracks request failed: ${errText(e)}`),
    );
    this.spanDraws = 0;
    /** @type {import('./source.js').SliceDetails | null} the selected slice's details */
    this.sliceDetails = null;
    this.sliceSeq = 0;
    this.flowsSeq = 0;
    this.selFlowsSeq = 0;
    this.flowsTimer = 0;
    this.spansRes = 0;
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
    this.loading = null;
    ui.progress.hidden = true;
    ui.progressText.textContent = '';
    if (!ui.title.textContent) ui.title.textContent = meta.name;
    ui.info.textContent = `${meta.format} · ${meta.events.toLocaleString()} events · ${meta.tracks.length} tracks`;
    // Before the model takes the trace: until the view state is applied
    // nothing may draw or ask for frames.
    await this.loadDerived(meta);
    this.m.setMeta(meta);
    if (meta.error) panels.banner(`The trace is damaged: ${meta.error}. Events up to the dashed line are shown.`);
    this.types.build(this.theme);
    this.renderer.resize();
    this.m.vp = fullView(meta, this.plotWidth());
    this.applyState(this.initial, false);
    bindInput(this);
    this.search.bind();
    this.types.bind();
    this.url.onPop((st) => this.applyState(st, true));
    matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.theme = readTheme();
      this.schedule();
    });
    this.replaceURL();
  }

  /**
   * The source's progress while it indexes: on the toolbar and drawn on
   * the canvas. @param {import('./progress.js').Progress} p
   */
  showProgress(p) {
    this.loading = p;
    this.ui.progress.value = Math.min(99, Math.max(0, p.percent));
    this.ui.progressText.textContent = progressText(p);
    this.schedule();
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

  /**
   * Learns the trace's derived tracks (one spans request over the whole
   * trace, one pixel wide: the tracks come with it).
   * @param {import('./source.js').Meta} meta
   */
  async loadDerived(meta) {
    const src = this.source;
    if (!src.spans) return;
    try {
      const f = await src.spans({ from: meta.first, to: meta.last + 1n, width: 1, tracks: null });
      this.m.derived = [...f.tracks.values()].map((t) => t.track);
      if (f.total > this.m.derived.length) this.panels.status(`${f.total} derived tracks; the first ${this.m.derived.length} are shown.`);
    } catch (e) {
      this.panels.banner(`derived tracks: ${errText(e)}`);
    }
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
    if (m.flowsAll) {
      clearTimeout(this.flowsTimer);
      this.flowsTimer = setTimeout(() => this.requestAllFlows(), SPANS_DEBOUNCE_MS);
    }
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
    const width = Math.round(vp.width * (1 + 2 * PAD));
    const start = vp.start - pad;
    const end = vp.end + pad;
    this.asked = { start, end, nsPerPx: vp.nsPerPx, tracks: tk, hidden: hk };
    this.frames.push({ start, end, width, tracks, hidden, mode: m.mode });
  }

  /**
   * Asks for the derived tracks among the rows near the view over the
   * padded range, once a pan or zoom pauses (latest wins), and, with the
   * flows toggle on, for the chains of related events in view.
   * @param {number[]} near  rows near the view
   */
  requestSpans(near) {
    const m = this.m;
    if (!this.source.spans || !m.derived.length) return;
    const ids = [];
    for (const r of near) {
      const k = rowKind(r);
      if (k.kind === 'derived') ids.push(k.id);
    }
    const vp = m.vp;
    const f = m.spans;
    const key = ids.join(',');
    // The frame held (or the one asked for) covers the view at its zoom: nothing to ask.
    if (f && this.spansAsked.startsWith(key + '|') && f.from <= vp.start && f.to >= vp.end &&
      Math.abs(Math.log2(this.spansRes / vp.nsPerPx)) < 0.01) return;
    if (ids.length === 0) return;
    const pad = BigInt(Math.round(vp.span * PAD));
    const q = { from: vp.start - pad, to: vp.end + pad, width: Math.min(8192, Math.round(vp.width * (1 + 2 * PAD))), tracks: ids };
    const k2 = `${key}|${q.from}|${q.to}|${q.width}`;
    if (k2 === this.spansAsked) return;
    this.spansAsked = k2;
    this.spansRes = vp.nsPerPx;
    clearTimeout(this.spansTimer);
    this.spansTimer = setTimeout(() => {
      this.spanFrames.push(q);
    }, m.spans ? SPANS_DEBOUNCE_MS : 0);
  }

  /**
   * A spans frame, with the values its counter tracks hold when its range
   * begins (the last sample before it: one more request, one bucket
   * wide, over the trace up to the range), so a counter zoomed in between
   * two samples is still drawn.
   * @param {import('./source.js').SpanQuery} q
   */
  async spansWithEntry(q) {
    const src = this.source;
    const spans = (/** @type {import('./source.js').SpanQuery} */ x) => /** @type {NonNullable<Source['spans']>} */ (src.spans).call(src, x);
    const f = await spans(q);
    const first = this.m.trace.first;
    const counters = [...f.tracks.values()].filter((t) => t.track.kind === 'counter').map((t) => t.track.id);
    if (counters.length && q.from > first) {
      const before = await spans({ from: first, to: q.from, width: 1, tracks: counters });
      for (const [id, t] of before.tracks) {
        const c = t.counters[t.counters.length - 1];
        if (c) f.enter.set(id, c.last);
      }
    }
    return f;
  }

  /** The chains of related events in view (the flows toggle). */
  async requestAllFlows() {
    const src = this.source;
    if (!src.flowsIn) return;
    const seq = ++this.flowsSeq;
    const vp = this.m.vp;
    try {
      const chains = await src.flowsIn(vp.start, vp.end);
      if (seq !== this.flowsSeq) return;
      this.m.allFlows = chains;
      this.schedule();
    } catch (e) {
      this.panels.banner(`flows: ${errText(e)}`);
    }
  }

  /** Turns the arrows between all related events in view on or off. */
  toggleFlows() {
    const m = this.m;
    m.flowsAll = !m.flowsAll;
    this.panels.status(m.flowsAll ? 'Flows: arrows between related events in view.' : 'Flows: only the selected event\'s.');
    if (m.flowsAll) this.requestAllFlows();
    else m.allFlows = [];
    this.schedule();
  }

  /**
   * Collapses or expands a group (by its key), or the group of the
   * selected track when key is absent.
   * @param {string} [key]
   */
  toggleGroup(key) {
    const m = this.m;
    if (key === undefined) {
      const sel = m.selTrack >= 0 ? m.selTrack : -1;
      const i = sel >= 0 ? m.rows.indexOf(sel) : m.top;
      for (let r = Math.min(i, m.rows.length - 1); r >= 0; r--) {
        const k = rowKind(m.rows[r]);
        if (k.kind === 'group') {
          key = m.groups[k.id]?.key;
          break;
        }
      }
      if (key === undefined) return;
    }
    if (m.collapsed.has(key)) m.collapsed.delete(key);
    else m.collapsed.add(key);
    this.layout();
    this.request();
    this.schedule();
  }

  /**
   * A click on a derived row or a group header: a group's header (or its
   * name) collapses it; a slice is selected; a summary zooms to its bucket.
   * @param {number} x plot x (-1: the name column) @param {number} row @param {number} dy from the row's top
   */
  clickRow(x, row, dy) {
    const m = this.m;
    const k = rowKind(row);
    if (k.kind === 'group') {
      const g = m.groups[k.id];
      if (g) this.toggleGroup(g.key);
      return;
    }
    if (k.kind !== 'derived') return;
    m.selDerived = k.id;
    const st = m.spans?.tracks.get(k.id);
    if (x < 0 || !st) {
      this.schedule();
      return;
    }
    const b = itemAt(layoutItems(st.items, st.depths, m.vp, m.rowH), x, dy);
    if (!b) {
      this.schedule();
      return;
    }
    if (b.item.summary) {
      this.setView(Viewport.fromRange(b.item.start, b.item.end > b.item.start ? b.item.end : b.item.start + 1n, m.vp.width), 'push');
      return;
    }
    this.selectSlice(k.id, b.item.slice);
  }

  /** Selects a derived slice: its details from the source. @param {number} track @param {number} slice */
  async selectSlice(track, slice) {
    const m = this.m;
    const src = this.source;
    if (!src.slice) return;
    const seq = ++this.sliceSeq;
    m.selSlice = { track, slice };
    this.schedule();
    let d;
    try {
      d = await src.slice(track, slice);
    } catch (e) {
      if (seq === this.sliceSeq) this.panels.banner(`slice ${track}/${slice}: ${errText(e)}`);
      return;
    }
    if (seq !== this.sliceSeq) return;
    this.sliceDetails = d;
    m.selEvent = null;
    m.details = null;
    m.flows = [];
    if (m.ruler && m.markKey) m.ruler = { t0: d.start, t1: d.end };
    renderSliceDetails(this.ui.details, d, m.derived.find((t) => t.id === track), m.trace);
    this.ui.detailsSummary.textContent = `slice ${d.name}`;
    this.schedule();
  }

  /** The events related to the selected one (flow arrows). @param {string} ref */
  async loadFlows(ref) {
    const m = this.m;
    m.flows = [];
    const src = this.source;
    if (!src.flows) return;
    const seq = ++this.selFlowsSeq;
    try {
      const f = await src.flows(ref);
      if (seq !== this.selFlowsSeq || m.selEvent?.ref !== ref) return;
      m.flows = f;
      this.schedule();
    } catch (e) {
      this.panels.status(`flows: ${errText(e)}`);
    }
  }

  /**
   * Selects the next (d 1) or previous (d -1) whole slice of the selected
   * derived row in the frame held, from the selected slice or the view's
   * edge. @param {number} d
   */
  stepSlice(d) {
    const m = this.m;
    const st = m.spans?.tracks.get(m.selDerived);
    if (!st) return;
    const cur = m.selSlice && m.selSlice.track === m.selDerived ? st.items.find((it) => it.slice === m.selSlice?.slice) : undefined;
    const from = cur ? cur.start : m.vp.time(d > 0 ? 0 : m.vp.width);
    /** @type {import('./spans.js').SpanItem | undefined} */
    let best;
    for (const it of st.items) {
      if (it.summary || it === cur) continue;
      if (d > 0 ? it.start > from || (it.start === from && cur && it.slice > cur.slice) : it.start < from) {
        if (!best || (d > 0 ? it.start < best.start : it.start > best.start)) best = it;
      }
    }
    if (!best) return;
    const x = m.vp.x(best.start);
    if (x < 0 || x > m.vp.width) this.setView(centreOn(m.vp, best.start), 'push');
    this.selectSlice(m.selDerived, best.slice);
  }

  /** t snapped to the nearest slice edge in view within a few pixels. @param {bigint} t */
  snap(t) {
    return snapTime(t, this.m.spans, SNAP_PX * this.m.vp.nsPerPx);
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
    this.renderer.draw(m.scene(this.labelW(), this.theme));
    this.lastDrawMs = performance.now() - t0;
    this.draws++;
    this.ui.range.textContent = rangeText(m.vp, m.meta);
    if (this.stacks.isOpen) this.stacks.check();
  }

  // ---- state and URL --------------------------------------------------

  /**
   * Applies a URL state (initial load, Back/Forward).
   * @param {ViewState} st @param {boolean} fromHistory
   */
  applyState(st, fromHistory) {
    const m = this.m;
    m.apply(st, this.plotWidth());
    this.ui.filter.value = st.filter;
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
    const ref = hitTest(m.frame, m.vp, track, x, m.hideTypes, m.mode);
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
