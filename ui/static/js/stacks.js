// @ts-check
// StacksPanel: the stacks panel's controller. It aggregates the sampled
// stacks of the current selection — time range (visible, whole trace or
// ruler), tracks (all, shown or the selected one), the event carrying the
// stacks and the weight — through the source (source.js: stackEvents,
// stacks, stackSamples) and shows them as a flame graph (flame.js), a
// top-down or bottom-up call tree, or a function's callers and callees
// (calltree.js). Transforms (stacktf.js), the search, the view and the
// selected node live in the URL through the model (m.stacks). The App
// calls check() on every draw: when the query changed, a request goes out
// after a short pause, the newest winning. Selecting a node asks for its
// samples and marks them on the timeline as search hits are.

'use strict';

import { el } from './dom.js';
import { LatestWins } from './source.js';
import { fromJSON, findPath, pathOf, nameOf, matchNodes, PATH_SEP } from './stacktree.js';
import { encodeTransforms, decodeTransforms, transformText, moduleOf, quoteRE } from './stacktf.js';
import { Flame } from './flame.js';
import { CallTree } from './calltree.js';
import { formatDuration } from './viewport.js';
import { errText } from './panels.js';

/** @typedef {import('./source.js').StackQuery} StackQuery */
/** @typedef {import('./source.js').StackEvent} StackEvent */
/** @typedef {import('./stacktree.js').StackTree} StackTree */
/** @typedef {import('./stacktf.js').Transform} Transform */

/** Wait this long after the selection changes before asking (ms). */
export const DEBOUNCE_MS = 150;

/**
 * What the panel needs from the page: the App.
 * @typedef {object} StacksHost
 * @property {import('./model.js').Model} m
 * @property {import('./source.js').Source} source
 * @property {import('./page.js').UI} ui
 * @property {() => import('./render.js').Theme} theme
 * @property {() => void} schedule
 * @property {() => void} pushURL
 * @property {(delay?: number) => void} replaceURL
 * @property {(text: string) => void} status
 * @property {(text: string) => void} banner
 */

const VIEWS = /** @type {const} */ ([['flame', 'Flame'], ['top', 'Top-down'], ['bottom', 'Bottom-up'], ['butterfly', 'Callers/callees']]);

export class StacksPanel {
  /** @param {HTMLElement} root @param {StacksHost} host */
  constructor(root, host) {
    this.host = host;
    /** @type {StackEvent[] | null} */
    this.events = null;
    this.defaultEvent = ''; // the endpoint's event without `event`
    this.eventsAsked = false;
    /** @type {StackTree | null} the main tree (flame, top, bottom; callees in butterfly) */
    this.tree = null;
    /** @type {StackTree | null} butterfly: the callers tree */
    this.callers = null;
    /** @type {StackQuery | null} the query that gave this.tree */
    this.q = null;
    /** @type {StackQuery | null} */
    this.qCallers = null;
    this.asked = '';
    this.timer = 0;
    this.sel = -1; // selected node in this.tree
    this.selCallers = -1; // or in this.callers
    this.marked = ''; // the key of the marked samples
    this.loading = false;
    this.error = '';
    this.fromStacks = false; // the model's hits are a node's samples
    this.requests = new LatestWins(
      (/** @type {{key: string, main: StackQuery, callers: StackQuery | null}} */ r) => this.fetch(r),
      (/** @type {{main: StackTree, callers: StackTree | null}} */ res, r) => this.took(res, r),
      (/** @type {unknown} */ e) => {
        this.loading = false;
        this.error = errText(e);
        this.tree = this.callers = null;
        this.render();
      },
    );
    this.samples = new LatestWins(
      (/** @type {{key: string, q: StackQuery, node: number}} */ r) => this.need().stackSamples(r.q, r.node),
      (/** @type {import('./source.js').SearchResult} */ res, r) => this.mark(res, r.key),
      (/** @type {unknown} */ e) => host.banner(`stack samples: ${errText(e)}`),
    );
    this.build(root);
  }

  /** The source's stacks methods, or an error. */
  need() {
    const s = this.host.source;
    if (!s.stacks || !s.stackSamples || !s.stackEvents) throw new Error('this source has no stacks');
    return /** @type {Required<import('./source.js').Source>} */ (s);
  }

  get st() { return this.host.m.stacks; }
  get isOpen() { return this.st.stacks === 'open'; }

  // ---- the DOM ----------------------------------------------------------

  /** @param {HTMLElement} root */
  build(root) {
    const panel = el('section', { className: 'stacks', id: 'stacks' });
    panel.setAttribute('aria-label', 'stacks');
    panel.hidden = true;
    const bar = el('div', { className: 'stacks-bar' });
    /** @type {Record<string, HTMLButtonElement>} */
    this.viewButtons = {};
    for (const [v, text] of VIEWS) {
      const b = /** @type {HTMLButtonElement} */ (el('button', { type: 'button' }));
      b.textContent = text;
      b.dataset.view = v;
      b.addEventListener('click', () => this.setView(v));
      this.viewButtons[v] = b;
      bar.append(b);
    }
    const select = (/** @type {string} */ id, /** @type {string} */ label) => {
      const s = /** @type {HTMLSelectElement} */ (el('select', { id }));
      s.setAttribute('aria-label', label);
      s.title = label;
      bar.append(s);
      return s;
    };
    this.eventSel = select('stacks-event', 'event carrying the stacks');
    this.weightSel = select('stacks-weight', 'weight');
    this.rangeSel = select('stacks-range', 'time range');
    this.tracksSel = select('stacks-tracks', 'tracks');
    for (const [v, t] of [['view', 'visible range'], ['all', 'whole trace'], ['ruler', 'ruler interval']]) this.rangeSel.append(option(v, t));
    for (const [v, t] of [['all', 'all tracks'], ['shown', 'shown tracks'], ['sel', 'selected track']]) this.tracksSel.append(option(v, t));
    this.eventSel.addEventListener('change', () => this.setState({ stacksEvent: this.eventSel.value, stacksWeight: '' }));
    this.weightSel.addEventListener('change', () => this.setState({ stacksWeight: this.weightSel.value === 'count' ? '' : this.weightSel.value }));
    this.rangeSel.addEventListener('change', () => this.setState({ stacksRange: /** @type {any} */ (this.rangeSel.value) }));
    this.tracksSel.addEventListener('change', () => this.setState({ stacksTracks: /** @type {any} */ (this.tracksSel.value) }));
    this.search = /** @type {HTMLInputElement} */ (el('input', { type: 'search', id: 'stacks-search', placeholder: 'highlight frames' }));
    this.search.setAttribute('aria-label', 'highlight frames matching');
    this.search.addEventListener('input', () => {
      this.st.stacksQ = this.search.value;
      this.host.replaceURL(300);
      this.render();
    });
    bar.append(this.search);
    /** @type {[string, string, () => void][]} */
    const acts = [
      ['Focus', 'focus on the selected function (its subtree)', () => this.transformSel('focus')],
      ['Merge', 'merge the selected function away', () => this.transformSel('merge')],
      ['Module', "collapse the selected frame's module", () => this.transformSel('module')],
      ['Drop', 'drop frames matching the search box (or the selected frame)', () => this.transformSel('drop')],
      ['Recursion', 'collapse recursion (of the selected function, or all)', () => this.transformSel('rec')],
      ['Reset', 'remove every transform', () => this.setState({ stacksTf: '' })],
    ];
    for (const [text, title, f] of acts) {
      const b = el('button', { type: 'button', title });
      b.textContent = text;
      b.dataset.stacksAction = text.toLowerCase();
      b.addEventListener('click', f);
      bar.append(b);
    }
    // Export: the shown stacks (range, tracks, event, weight, view and
    // transforms) as a speedscope file, for sources that serve one.
    this.exportLink = /** @type {HTMLAnchorElement} */ (el('a', { id: 'stacks-export', title: 'download these stacks as a speedscope file (speedscope, Firefox Profiler)' }));
    this.exportLink.textContent = 'Export';
    this.exportLink.download = 'stacks.speedscope.json';
    this.exportLink.hidden = true;
    bar.append(this.exportLink);
    const close = el('button', { type: 'button', title: 'close the stacks panel (X)', className: 'stacks-close' });
    close.textContent = '×';
    close.addEventListener('click', () => this.toggle());
    bar.append(close);
    this.tfList = el('div', { className: 'stacks-tf', id: 'stacks-tf' });
    this.info = el('div', { className: 'stacks-info', id: 'stacks-info', role: 'status' });
    this.body = el('div', { className: 'stacks-body', id: 'stacks-body' });
    const host = {
      select: (/** @type {number} */ n) => this.select(n, false),
      menu: (/** @type {number} */ n, /** @type {number} */ x, /** @type {number} */ y) => this.openMenu(n, false, x, y),
      describe: (/** @type {number} */ n) => this.describe(this.tree, n),
      weight: (/** @type {number} */ w) => this.weightText(w),
    };
    this.flame = new Flame(host);
    this.treeView = new CallTree(host, 'call tree');
    this.callersView = new CallTree({
      select: (n) => this.select(n, true),
      menu: (n, x, y) => this.openMenu(n, true, x, y),
      weight: host.weight,
    }, 'callers');
    this.menu = el('div', { className: 'stacks-menu', role: 'menu' });
    this.menu.hidden = true;
    panel.append(bar, this.tfList, this.info, this.body, this.menu);
    // Keys the panel's controls use stay in the panel.
    panel.addEventListener('keydown', (e) => {
      const t = /** @type {HTMLElement} */ (e.target);
      if (e.code === 'Escape' && !this.menu.hidden) {
        this.closeMenu();
        e.stopPropagation();
        e.preventDefault();
      } else if (t instanceof HTMLSelectElement && e.code !== 'Escape') {
        e.stopPropagation();
      }
    });
    document.addEventListener('pointerdown', (e) => {
      if (!this.menu.hidden && !this.menu.contains(/** @type {Node} */ (e.target))) this.closeMenu();
    });
    this.panel = panel;
    const details = document.getElementById('details');
    if (details && details.parentElement === root) root.insertBefore(panel, details);
    else root.append(panel);
  }

  // ---- state ------------------------------------------------------------

  /** Opens or closes the panel (X, the toolbar button). */
  toggle() {
    this.st.stacks = this.isOpen ? 'closed' : 'open';
    if (!this.isOpen) this.unmark();
    this.host.pushURL();
    this.sync();
    if (this.isOpen) (this.st.stacksView === 'flame' ? this.flame.canvas : this.treeView.el).focus();
  }

  /** @param {Partial<import('./model.js').StacksState>} ch */
  setState(ch) {
    Object.assign(this.st, ch);
    this.host.pushURL();
    this.sync();
  }

  /** @param {'flame' | 'top' | 'bottom' | 'butterfly'} v */
  setView(v) {
    const st = this.st;
    if (v === 'butterfly' && !st.stacksFn && this.tree && this.sel > 0) st.stacksFn = nameOf(this.tree, this.sel);
    this.setState({ stacksView: v, stacksNode: v === st.stacksView ? st.stacksNode : '' });
  }

  /** After the URL state changed (load, Back/Forward, a control): shows it and asks. */
  sync() {
    const st = this.st;
    this.panel.hidden = !this.isOpen;
    for (const [v, b] of Object.entries(this.viewButtons)) b.setAttribute('aria-pressed', String(v === st.stacksView));
    this.rangeSel.value = st.stacksRange;
    this.tracksSel.value = st.stacksTracks;
    if (this.search.value !== st.stacksQ) this.search.value = st.stacksQ;
    if (this.isOpen && !this.eventsAsked) this.loadEvents();
    this.fillSelects();
    this.resolveSel();
    this.render();
    this.check();
    if (this.isOpen) this.markSel();
    this.host.schedule();
  }

  async loadEvents() {
    this.eventsAsked = true;
    try {
      const r = await this.need().stackEvents();
      this.events = r.events.filter((e) => e.event);
      this.defaultEvent = r.default;
    } catch (e) {
      this.events = [];
      this.error = errText(e);
    }
    this.fillSelects();
    this.check();
    this.render();
  }

  /** The event the query names: the URL's, else the endpoint's default when listed, else the first listed. */
  event() {
    const ev = this.events ?? [];
    const want = this.st.stacksEvent;
    if (want) return want;
    return (ev.find((e) => e.event === this.defaultEvent) ?? ev[0])?.event ?? '';
  }

  fillSelects() {
    const ev = this.events ?? [];
    const cur = this.event();
    const names = ev.map((e) => e.event);
    if (cur && !names.includes(cur)) names.push(cur);
    if (this.eventSel.options.length !== names.length || [...this.eventSel.options].some((o, i) => o.value !== names[i])) {
      this.eventSel.replaceChildren(...names.map((n) => {
        const e = ev.find((x) => x.event === n);
        return option(n, e ? `${n} (${e.count.toLocaleString()})` : n);
      }));
    }
    this.eventSel.value = cur;
    // The endpoint lists no fields: a field weight comes from the URL.
    const w = this.st.stacksWeight || 'count';
    const ws = ['count', 'time'];
    if (!ws.includes(w)) ws.push(w);
    this.weightSel.replaceChildren(...ws.map((v) => option(v, v === 'count' ? 'count' : v === 'time' ? 'time (sample interval)' : v)));
    this.weightSel.value = w;
  }

  /** The main query (and butterfly's callers query) of the current state, or null. */
  queries() {
    const m = this.host.m;
    const st = this.st;
    if (!m.meta || !this.isOpen || this.events === null || (this.events.length === 0 && !st.stacksEvent)) return null;
    /** @type {bigint | null} */
    let from = m.vp.start, to = m.vp.end;
    if (st.stacksRange === 'all') from = to = null;
    else if (st.stacksRange === 'ruler' && m.ruler && m.ruler.t0 !== m.ruler.t1) {
      from = m.ruler.t0 < m.ruler.t1 ? m.ruler.t0 : m.ruler.t1;
      to = m.ruler.t0 < m.ruler.t1 ? m.ruler.t1 : m.ruler.t0;
    }
    /** @type {number[] | null} */
    let tracks = null;
    if (st.stacksTracks === 'sel' && m.selTrack >= 0) tracks = [m.selTrack];
    else if (st.stacksTracks === 'shown' && m.rows.length < m.trace.tracks.length) tracks = [...m.rows].sort((a, b) => a - b);
    // The panel's width, not the body's (whose scrollbar comes and goes
    // with the tree shown), in steps of 64 px so that a resize by a few px
    // asks for nothing new.
    const width = Math.max(128, Math.round((this.panel.clientWidth || 800) / 64) * 64);
    const base = { from, to, tracks, event: this.event(), weight: st.stacksWeight || 'count', tf: st.stacksTf, width };
    if (st.stacksView === 'butterfly') {
      if (!st.stacksFn) return { main: null, callers: null };
      return { main: { ...base, view: `callees:${st.stacksFn}` }, callers: { ...base, view: `callers:${st.stacksFn}` } };
    }
    return { main: { ...base, view: st.stacksView === 'bottom' ? 'bottom' : 'top' }, callers: null };
  }

  /** Called on every draw: asks again, after a pause, when the query changed. */
  check() {
    const qs = this.queries();
    if (!qs || !qs.main) {
      if (qs && !qs.main && this.tree) {
        this.tree = this.callers = null;
        this.asked = '';
        this.render();
      }
      return;
    }
    const key = queryKey(qs.main) + '|' + (qs.callers ? queryKey(qs.callers) : '');
    if (key === this.asked) return;
    this.asked = key;
    clearTimeout(this.timer);
    const q = /** @type {{main: StackQuery, callers: StackQuery | null}} */ (qs);
    this.timer = window.setTimeout(() => {
      this.loading = true;
      this.renderInfo();
      this.requests.push({ key, main: q.main, callers: q.callers });
    }, DEBOUNCE_MS);
  }

  /** @param {{key: string, main: StackQuery, callers: StackQuery | null}} r */
  async fetch(r) {
    const s = this.need();
    const [a, b] = await Promise.all([s.stacks(r.main), r.callers ? s.stacks(r.callers) : Promise.resolve(null)]);
    return { main: fromJSON(a), callers: b ? fromJSON(b) : null };
  }

  /** A tree arrived. @param {{main: StackTree, callers: StackTree | null}} res @param {{key: string, main: StackQuery, callers: StackQuery | null}} r */
  took(res, r) {
    if (r.key !== this.asked) return; // a newer one is on its way
    this.loading = false;
    this.error = '';
    this.tree = res.main;
    this.callers = res.callers;
    this.q = r.main;
    const src = this.need();
    this.exportLink.hidden = !src.stacksExportURL;
    if (src.stacksExportURL) this.exportLink.href = src.stacksExportURL(r.main);
    this.qCallers = r.callers;
    this.resolveSel();
    this.render();
    this.markSel();
  }

  /** Finds the URL's selected node in the trees. */
  resolveSel() {
    const p = this.st.stacksNode;
    this.sel = this.selCallers = -1;
    if (!p || !this.tree) return;
    const path = p.split(PATH_SEP);
    this.sel = findPath(this.tree, path);
    if (this.sel < 0 && this.callers) this.selCallers = findPath(this.callers, path);
  }

  /**
   * Selects a node (of the callers tree in butterfly): it goes in the URL
   * and its samples are marked on the timeline.
   * @param {number} n @param {boolean} inCallers
   */
  select(n, inCallers) {
    const t = inCallers ? this.callers : this.tree;
    if (!t || n < 0 || n >= t.parent.length) return;
    this.closeMenu();
    this.st.stacksNode = n > 0 ? pathOf(t, n).join(PATH_SEP) : '';
    if (n > 0 && this.st.stacksView !== 'butterfly') this.st.stacksFn = nameOf(t, n);
    this.sel = inCallers ? -1 : n;
    this.selCallers = inCallers ? n : -1;
    this.host.replaceURL();
    this.render();
    this.markSel();
  }

  /** Asks for the selected node's samples (unless they are marked already). */
  markSel() {
    const inCallers = this.selCallers >= 0;
    const n = inCallers ? this.selCallers : this.sel;
    const q = inCallers ? this.qCallers : this.q;
    if (n < 0 || !q) return;
    const key = queryKey(q) + '#' + n;
    if (key === this.marked) return;
    this.marked = key;
    this.samples.push({ key, q, node: n });
  }

  /** Marks a node's samples on the timeline as search hits. @param {import('./source.js').SearchResult} r @param {string} key */
  mark(r, key) {
    if (key !== this.marked) return;
    const m = this.host.m;
    m.hits = r.hits;
    m.hitTotal = r.total;
    m.hitsMore = false; // not the search's list: N must not ask the search for more
    m.hitBins = null;
    this.fromStacks = true;
    this.host.ui.hitCount.textContent = `${r.hits.length.toLocaleString()}${r.more ? '+' : ''} samples`;
    this.host.status(`${r.total.toLocaleString()}${r.more ? '+' : ''} samples of the selected frame are marked on the tracks.`);
    this.host.schedule();
  }

  /** Clears marks the panel made. */
  unmark() {
    this.marked = '';
    if (!this.fromStacks) return;
    const m = this.host.m;
    m.hits = [];
    m.hitTotal = 0;
    m.hitBins = null;
    this.fromStacks = false;
    this.host.ui.hitCount.textContent = '';
    this.host.schedule();
  }

  // ---- transforms -------------------------------------------------------

  transforms() {
    return decodeTransforms(this.st.stacksTf);
  }

  /** @param {Transform} t */
  addTransform(t) {
    const list = this.transforms();
    list.push(t);
    this.closeMenu();
    this.setState({ stacksTf: encodeTransforms(list), stacksNode: t.op === 'focus' ? t.arg : this.st.stacksNode });
  }

  /** @param {number} i */
  removeTransform(i) {
    const list = this.transforms();
    list.splice(i, 1);
    this.setState({ stacksTf: encodeTransforms(list) });
  }

  /** A transform on the selected node (or, for drop, the search box). @param {Transform['op']} op @param {number} [n] @param {boolean} [inCallers] */
  transformSel(op, n, inCallers) {
    const c = inCallers ?? this.selCallers >= 0;
    const t = c ? this.callers : this.tree;
    const node = n ?? (c ? this.selCallers : this.sel);
    const name = t && node > 0 ? nameOf(t, node) : '';
    if (op === 'drop') {
      // What the search box highlights, or the selected frame, literally.
      const pat = quoteRE(this.st.stacksQ.trim() || name);
      if (pat) this.addTransform({ op, arg: pat });
      else this.host.status('Drop: type a pattern in the stacks search box or select a frame.');
      return;
    }
    if (op === 'rec') {
      this.addTransform({ op, arg: name });
      return;
    }
    if (!name) {
      this.host.status('Select a frame first (click it, or Enter on it).');
      return;
    }
    if (op === 'module') {
      const mod = moduleOf(name);
      if (mod) this.addTransform({ op, arg: mod });
      else this.host.status(`${name} names no module.`);
      return;
    }
    this.addTransform({ op, arg: name });
  }

  // ---- the node menu ----------------------------------------------------

  /** @param {number} n @param {boolean} inCallers @param {number} x @param {number} y */
  openMenu(n, inCallers, x, y) {
    const t = inCallers ? this.callers : this.tree;
    if (!t || n <= 0) return;
    const name = nameOf(t, n);
    const mod = moduleOf(name);
    /** @type {[string, () => void][]} */
    const items = [
      [`Focus on ${name}`, () => this.transformSel('focus', n, inCallers)],
      [`Merge ${name} away`, () => this.transformSel('merge', n, inCallers)],
      ...(mod ? /** @type {[string, () => void][]} */ ([[`Collapse module ${mod}`, () => this.transformSel('module', n, inCallers)]]) : []),
      [`Drop frames named ${name}`, () => this.addTransform({ op: 'drop', arg: `^${quoteRE(name)}$` })],
      [`Collapse recursion of ${name}`, () => this.transformSel('rec', n, inCallers)],
      [`Callers and callees of ${name}`, () => {
        this.closeMenu();
        this.setState({ stacksView: 'butterfly', stacksFn: name, stacksNode: name });
      }],
    ];
    this.menu.replaceChildren(...items.map(([text, f]) => {
      const b = el('button', { type: 'button' });
      b.setAttribute('role', 'menuitem');
      b.textContent = text;
      b.addEventListener('click', f);
      return b;
    }));
    this.menu.hidden = false;
    const r = this.panel.getBoundingClientRect();
    this.menu.style.left = `${Math.max(0, x - r.left)}px`;
    this.menu.style.top = `${Math.max(0, y - r.top)}px`;
    this.menuFrom = /** @type {HTMLElement | null} */ (document.activeElement);
    /** @type {HTMLElement | null} */ (this.menu.firstElementChild)?.focus();
    this.menu.onkeydown = (e) => {
      const bs = [...this.menu.querySelectorAll('button')];
      const i = bs.indexOf(/** @type {any} */ (document.activeElement));
      if (e.code === 'ArrowDown' || e.code === 'ArrowUp') {
        bs[(i + (e.code === 'ArrowDown' ? 1 : -1) + bs.length) % bs.length]?.focus();
        e.preventDefault();
        e.stopPropagation();
      }
    };
  }

  closeMenu() {
    if (this.menu.hidden) return;
    this.menu.hidden = true;
    this.menuFrom?.focus();
  }

  // ---- showing ----------------------------------------------------------

  /** A weight as text in the tree's unit. @param {number} w */
  weightText(w) {
    const u = this.tree?.unit ?? 'samples';
    if (u === 'ns') return formatDuration(w);
    return Math.round(w).toLocaleString();
  }

  /** The hover text of a node. @param {StackTree | null} t @param {number} n */
  describe(t, n) {
    if (!t) return '';
    const pc = t.tot[0] ? ((100 * t.tot[n]) / t.tot[0]).toFixed(1) : '0';
    return `${nameOf(t, n)}\ntotal ${this.weightText(t.tot[n])} (${pc}%), self ${this.weightText(t.self[n])}`;
  }

  renderInfo() {
    const t = this.tree;
    const st = this.st;
    let text;
    if (this.error) text = `stacks: ${this.error}`;
    else if (this.events && this.events.length === 0 && !st.stacksEvent) text = 'No event in this trace carries stacks.';
    else if (st.stacksView === 'butterfly' && !st.stacksFn) text = 'Select a function (click a frame, then Callers/callees) to see its callers and callees.';
    else if (!t) text = 'loading stacks…';
    else {
      const unit = t.unit === 'samples' ? '' : t.unit === 'ns' ? ' of sample time' : ` ${t.unit}`;
      text = `${t.samples.toLocaleString()} samples, total ${this.weightText(t.total)}${unit}` +
        (t.pruned ? ` · ${t.pruned.toLocaleString()} narrow nodes left out` : '') +
        (this.loading ? ' · updating…' : '');
      if (st.stacksView === 'butterfly') text += ` · callers (above) and callees (below) of ${st.stacksFn}`;
    }
    this.info.textContent = text;
  }

  render() {
    if (!this.isOpen) return;
    this.renderInfo();
    const list = this.transforms();
    this.tfList.replaceChildren(...list.map((t, i) => {
      const b = el('button', { type: 'button', className: 'tf', title: 'remove this transform' });
      b.textContent = `${transformText(t)} ×`;
      b.addEventListener('click', () => this.removeTransform(i));
      return b;
    }));
    this.tfList.hidden = list.length === 0;
    const v = this.st.stacksView;
    const q = this.st.stacksQ;
    const t = this.tree;
    const match = t ? matchNodes(t, q) : new Uint8Array(0);
    if (v === 'flame') {
      if (this.body.firstChild !== this.flame.canvas || this.body.childNodes.length !== 1) this.body.replaceChildren(this.flame.canvas);
      this.flame.set(t, match, this.sel, Math.max(100, this.body.clientWidth || 800));
      this.flame.draw(this.host.theme());
    } else if (v === 'butterfly') {
      if (this.body.firstChild !== this.callersView.el) this.body.replaceChildren(this.callersView.el, this.treeView.el);
      this.callersView.set(this.callers, this.callers ? matchNodes(this.callers, q) : new Uint8Array(0), this.selCallers);
      this.treeView.set(t, match, this.sel);
    } else {
      if (this.body.firstChild !== this.treeView.el || this.body.childNodes.length !== 1) this.body.replaceChildren(this.treeView.el);
      this.treeView.set(t, match, this.sel);
    }
  }
}

/** @param {string} value @param {string} text */
function option(value, text) {
  const o = /** @type {HTMLOptionElement} */ (el('option'));
  o.value = value;
  o.textContent = text;
  return o;
}

/** A query as a string, for "did it change". @param {StackQuery} q */
function queryKey(q) {
  return `${q.from}:${q.to}:${q.tracks ? q.tracks.join(',') : '*'}:${q.event}:${q.weight}:${q.view}:${q.tf}:${q.width}`;
}
