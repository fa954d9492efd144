// @ts-check
// LiveView: the viewer page's controller of a live trace (issue #19,
// web/PROTOCOL.md §live), for the App. While the trace grows it shows the
// LIVE badge, the chase toggle and the Stop button in the toolbar and the
// events so far and their rate on the status line; it keeps the trace's
// span current (the overview, the range line and clamping follow it) and
// loads the metadata again when tracks or types appear, keeping the view
// state. Chasing, the view keeps its duration and follows the newest
// event: its requests carry `chase`, and the frames the server pushes are
// shown as they come; panning or zooming turns chasing off, the toggle
// (key `.`, the toolbar's Follow) turns it on. When the trace ends the
// page becomes an ordinary trace page, the view where it was.
//
// A stored trace being indexed (issue #21) grows the same way, its `live`
// messages marked `indexing`: the page opens on the indexed prefix, with
// no LIVE badge, Follow or Stop; the toolbar shows the indexing progress
// (app.js showProgress). A view that covers the whole span (the default
// one) is fitted to it again as it grows; another stays, its frame asked
// again when the trace grows in it. When indexing ends the metadata is
// loaded again and the frame comes from the whole trace's index. The pure
// parts are livestate.js's.

'use strict';

import { el } from './dom.js';
import { Viewport } from './viewport.js';
import { RateMeter, metaStale, chaseRange, liveText, coversSpan } from './livestate.js';
import { fullView } from './navigate.js';
import { errText } from './panels.js';

/** @typedef {import('./livestate.js').LiveMsg} LiveMsg */
/** @typedef {import('./source.js').Frame} Frame */

export class LiveView {
  /** @param {import('./app.js').App} app */
  constructor(app) {
    this.app = app;
    /** The trace is growing. */
    this.live = false;
    /** The view follows the newest event. */
    this.chasing = false;
    /** A stored trace's prefix is shown while it indexes. */
    this.indexing = false;
    /** Indexing messages applied to the open page, and refits of the whole view (the browser tests read them). */
    this.grown = 0;
    this.refits = 0;
    /** Frames pushed for the chase, live messages and metadata loads so far (the browser tests read them). */
    this.chaseFrames = 0;
    this.messages = 0;
    this.reloads = 0;
    this.rate = new RateMeter();
    /** @type {LiveMsg | null} */
    this.last = null;
    /** @type {Promise<void> | null} a metadata reload under way */
    this.reloading = null;
    this.reloadAgain = false;
    const ui = app.ui;
    this.badge = el('span', { className: 'live-badge', id: 'live-badge', title: 'the trace is still being recorded' });
    this.badge.textContent = 'LIVE';
    this.follow = el('button', { type: 'button', id: 'live-follow', title: 'chase: follow the newest events, keeping the view\'s duration (.)' });
    this.follow.dataset.action = 'liveChase';
    this.follow.textContent = 'Follow';
    this.stopButton = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id: 'live-stop', title: 'end the recording: the trace is stored as it is' }));
    this.stopButton.dataset.action = 'liveStop';
    this.stopButton.textContent = 'Stop';
    this.line = el('div', { className: 'live-line', id: 'live-line' });
    ui.title.after(this.badge, this.follow, this.stopButton);
    ui.status.prepend(this.line);
    this.show();
  }

  get m() { return this.app.m; }

  /**
   * Listens to the source before it opens; the page data says whether the
   * trace was live when the page was made.
   * @param {boolean} live
   */
  attach(live) {
    const src = this.app.source;
    this.live = live;
    this.chasing = live; // on by default on a live trace
    src.onLive = (msg) => this.message(msg);
    src.onChase = (f) => this.chased(f);
    if (src.lastLive) this.message(src.lastLive);
    this.show();
  }

  /**
   * After the trace opened: the messages that came first are applied; a
   * trace the page thought live that ended meanwhile is an ordinary one.
   */
  async opened() {
    const src = this.app.source;
    if (this.last) this.message(this.last);
    if (!this.live || this.last) return;
    // No live message yet: ask whether it still is.
    const id = /** @type {any} */ (src).id;
    try {
      const r = await fetch(`/api/traces/${id}`);
      const j = r.ok ? await r.json() : null;
      if (j && !j.live && !this.last) this.end();
    } catch {
      // keep what the page said; a live message will tell
    }
  }

  /** Shows or hides the live controls. */
  show() {
    this.badge.hidden = !this.live;
    this.follow.hidden = !this.live;
    this.stopButton.hidden = !this.live;
    this.line.hidden = !this.live;
    this.follow.setAttribute('aria-pressed', String(this.chasing));
    this.app.root.classList.toggle('live', this.live);
  }

  /** A `live` message. @param {LiveMsg} msg */
  message(msg) {
    this.last = msg;
    this.messages++;
    if (msg.indexing) {
      this.indexed(msg);
      return;
    }
    if (msg.ended) {
      if (this.live || this.m.meta) this.end();
      return;
    }
    if (!this.live) {
      this.live = true;
      this.chasing = true;
      this.show();
    }
    this.rate.add(performance.now(), msg.events);
    this.line.textContent = liveText(msg.events, this.rate.rate());
    const meta = this.m.meta;
    if (!meta) return; // the trace opens: opened() applies it
    const grewInView = !this.chasing && this.m.vp.end > meta.last && msg.last > meta.last;
    meta.first = msg.first;
    if (msg.last > meta.last) meta.last = msg.last;
    meta.events = msg.events;
    this.app.showInfo();
    if (metaStale(meta, msg)) this.reload();
    if (grewInView) {
      // The view shows where the trace grows: its frame again.
      this.app.asked = null;
      this.app.request();
    }
    this.app.schedule();
  }

  /**
   * A stored trace's prefix grew, or its indexing ended.
   * @param {LiveMsg} msg
   */
  indexed(msg) {
    const app = this.app;
    const meta = this.m.meta;
    if (msg.ended) {
      const was = this.indexing;
      this.indexing = false;
      // Before the trace opens, start() hides the progress once it has.
      if (meta) app.indexingEnded();
      if (meta && was) this.finish();
      return;
    }
    this.indexing = true;
    if (!meta) return; // the trace opens: opened() applies it
    this.grown++;
    const fitted = coversSpan(this.m.vp, meta);
    const grewInView = !fitted && this.m.vp.end > meta.last && msg.last > meta.last;
    if (msg.first < meta.first) meta.first = msg.first;
    if (msg.last > meta.last) meta.last = msg.last;
    meta.events = Math.max(meta.events, msg.events);
    app.showInfo();
    if (metaStale(meta, msg)) this.reload();
    if (fitted) this.refit();
    else if (grewInView) {
      app.asked = null;
      app.request();
    }
    app.schedule();
  }

  /** Fits the view to the whole span, as the default view is. */
  refit() {
    const app = this.app;
    if (!this.m.meta) return;
    this.refits++;
    this.m.vp = fullView(this.m.meta, app.plotWidth());
    app.request();
    app.replaceURL(250);
  }

  /** Indexing ended: the whole trace's metadata, and a view that covered the prefix covers the trace. */
  async finish() {
    const meta = this.m.meta;
    const fitted = !!meta && coversSpan(this.m.vp, meta);
    await this.reload();
    if (fitted) this.refit();
    this.app.schedule();
  }

  /** A frame the server pushed for the chase: the view moves with it. @param {Frame} f */
  chased(f) {
    const app = this.app;
    const m = this.m;
    if (!this.chasing || !m.meta) return;
    this.chaseFrames++;
    const vp = m.vp;
    m.vp = new Viewport(f.end - vp.spanNs, vp.nsPerPx, vp.width, vp.spanNs);
    m.frame = f;
    if (app.asked) {
      app.asked.start = f.base;
      app.asked.end = f.end;
    }
    app.request(); // the derived tracks near the view; the frame is held
    app.schedule();
    app.replaceURL(250);
  }

  /** The chase toggle (key `.`, the Follow button). */
  toggle() {
    if (!this.live) {
      this.app.panels.status('Chase follows a live trace; this one has ended.');
      return;
    }
    this.chasing = !this.chasing;
    this.show();
    const app = this.app;
    const m = this.m;
    if (this.chasing && m.meta) {
      const r = chaseRange(m.meta.last, m.vp.spanNs);
      m.vp = new Viewport(r.start, m.vp.nsPerPx, m.vp.width, m.vp.spanNs);
    }
    app.asked = null;
    app.request(); // with chase on, or a plain request that ends it
    app.schedule();
  }

  /** The user moved the view (pan, zoom, a jump): chasing stops. */
  moved() {
    if (!this.chasing) return;
    this.chasing = false;
    this.show();
  }

  /** The Stop button: asks the source to end; the `ended` message follows. */
  async stop() {
    const src = this.app.source;
    if (!this.live || !src.stop) return;
    this.stopButton.disabled = true;
    this.app.panels.status('Stopping the recording…');
    try {
      if (!(await src.stop())) this.app.panels.status('The trace is not live any more.');
    } catch (e) {
      this.stopButton.disabled = false;
      this.app.panels.banner(`stop failed: ${errText(e)}`);
    }
  }

  /**
   * Loads the metadata again (more tracks or types), one load at a time;
   * the view state stays.
   */
  reload() {
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.reloadAgain = false;
        this.reloads++;
        try {
          await this.app.reloadMeta(this.last);
        } catch (e) {
          this.app.panels.status(`reloading the trace's tracks failed: ${errText(e)}`);
        }
      } while (this.reloadAgain);
      this.reloading = null;
    })();
    return this.reloading;
  }

  /** The trace ended: an ordinary trace page from now on, the view where it is. */
  async end() {
    const wasLive = this.live;
    this.live = false;
    this.chasing = false;
    this.stopButton.disabled = false;
    this.show();
    if (!this.m.meta) return;
    await this.reload();
    if (wasLive) this.app.panels.status('The recording ended; the trace is stored in the library.');
  }
}
