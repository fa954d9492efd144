// @ts-check
// Canvas renderer: draws one Scene (viewport, track order, the latest frame
// from the source, selection and overlays) onto a high-DPI canvas. It keeps
// no state of its own beyond caches keyed by what they depend on, so the same
// scene always draws the same pixels. Bulk glyphs are batched per colour into
// one Path2D each (one fill per colour instead of one per rectangle), and runs
// of neighbouring aggregate buckets with the same colour and height merge
// into one rectangle, so a dense 2000 px × 50 track view stays a few
// thousand path operations.

'use strict';

import { formatTime, formatDuration, unitFor } from './viewport.js';
import { hitMarks, binMarks } from './overview.js';
import { progressText, shownPercent } from './progress.js';
import { drawSpanRows, drawSpanLabels, drawFlows } from './spandraw.js';

/** The opacity of the events a timeline filter does not match ("dim" mode, filter.js). */
export const DIM_ALPHA = 0.22;

/** @typedef {import('./viewport.js').Viewport} Viewport */
/** @typedef {import('./source.js').Meta} Meta */
/** @typedef {import('./source.js').Frame} Frame */

// Layout, in CSS pixels.
export const OVERVIEW_H = 16;
export const AXIS_H = 22;
export const ROWS_Y = OVERVIEW_H + AXIS_H;
export const LABEL_MIN_W = 80;
export const LABEL_MAX_W = 240;
export const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
const TICK_MIN_PX = 90;
const POPUP_RISE = 20; // g2 draws detail boxes 20 px above the event
const DENSITY_LEVELS = 4;
const STRIPS = 2; // pixel strips per track: density, ticks

/**
 * @typedef {object} Theme
 * @property {string} bg
 * @property {string} fg
 * @property {string} muted
 * @property {string} grid
 * @property {string} rowAlt
 * @property {string} labelBg
 * @property {string} sel
 * @property {string} selRow      background of the selected track
 * @property {string} hit
 * @property {string} lost
 * @property {string} popupBg
 * @property {string} accent
 * @property {boolean} dark
 *
 * @typedef {object} Popup
 * @property {string} ref
 * @property {bigint} time
 * @property {number} track
 * @property {string} text
 *
 * @typedef {object} Scene
 * @property {Viewport} vp
 * @property {Meta} meta
 * @property {number[]} order       visible track ids, top to bottom
 * @property {number} top           index in order of the first row shown
 * @property {number} rowH
 * @property {number} labelW
 * @property {Frame | null} frame
 * @property {'summary' | 'event'} mode
 * @property {'type' | 'track'} colorBy
 * @property {Set<number>} hidden   event types not drawn (the server may
 *           send them anyway; aggregates whose dominant type is hidden are
 *           left out too)
 * @property {number} selTrack      -1 for none
 * @property {Set<number>} [pinned] tracks pinned to the top
 * @property {{ref: string, time: bigint, track: number} | null} selEvent
 * @property {Popup[]} popups
 * @property {bigint[]} hits        search hits (or a stack node's samples) for the overview strip
 * @property {import('./overview.js').HitBins | null} [hitBins] the search's hits over the whole
 *           trace per time bin, marked on the overview instead of a hit list the source cut short
 * @property {number} [hitTotal]    hits in all, for the overview's legend
 * @property {{time: bigint, track: number}[]} [hitMarks]  the same, marked on their tracks
 * @property {{x0: number, x1: number} | null} fence   plot x
 * @property {{t0: bigint, t1: bigint} | null} ruler
 * @property {Theme} theme
 * @property {Map<number, import('./spans.js').DerivedTrack>} [derived]  derived tracks by id
 * @property {import('./spans.js').SpanFrame | null} [spans]  the newest derived-track frame
 * @property {import('./groups.js').Group[]} [groups]
 * @property {Set<string>} [collapsed]  collapsed group keys
 * @property {{track: number, slice: number} | null} [selSlice]
 * @property {number} [selDerived]    the selected derived row's track, -1 for none
 * @property {((name: string) => boolean) | null} [sliceMatch]  slices the search highlights
 * @property {((track: string, name: string) => boolean) | null} [sliceHidden]  slices the type filter hides
 * @property {{ref: string, time: bigint, track: number}[]} [flows]  the selected event's related events
 * @property {{time: bigint, track: number}[][]} [allFlows]  chains of related events in view
 * @property {Frame | null} [filterFrame] with a timeline filter (filter.js): its matching
 *           events, drawn over the plain frame drawn dimmed (null: not come yet)
 * @property {'dim' | 'hide'} [filterMode]  hide: the plain frame is not drawn
 * @property {Map<number, number>} [trackCounts] the filter's matching events per track, in the name column
 */

/**
 * Renderer owns the canvas and its caches.
 */
export class Renderer {
  /** @param {HTMLCanvasElement} canvas */
  constructor(canvas) {
    this.canvas = canvas;
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('canvas 2d context unavailable');
    this.ctx = ctx;
    this.cssW = 0;
    this.cssH = 0;
    this.dpr = 1;
    /** @type {Map<string, number>} */
    this.widths = new Map();
    /** @type {string[]} colour per type, per theme */
    this.typeColors = [];
    /** @type {Uint32Array} packed RGBA per type */
    this.rgba = new Uint32Array(0);
    /** @type {Uint32Array} packed RGBA per type and density level */
    this.densityRGBA = new Uint32Array(0);
    this.bg = 0;
    this.bgKey = '';
    /** @type {Map<string, number>} */
    this.cssCache = new Map();
    /** @type {Map<string, Uint32Array>} */
    this.densCache = new Map();
    /** @type {Map<string, Sprite>} */
    this.sprites = new Map();
    /** @type {HTMLCanvasElement | null} */
    this.band = null;
    /** @type {ImageData | null} */
    this.bandImg = null;
    /** @type {HTMLCanvasElement | null} */
    this.strip = null;
    /** @type {ImageData | null} */
    this.stripImg = null;
    this.colorKey = '';
    /** @type {{bins: import('./overview.js').HitBins, meta: Meta, L: number, w: number, marks: import('./overview.js').Mark[]} | null} */
    this.binCache = null;
  }

  /** Sizes the backing store for the element's CSS size and devicePixelRatio. */
  resize() {
    const r = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.floor(r.width));
    const h = Math.max(1, Math.floor(r.height));
    if (w === this.cssW && h === this.cssH && dpr === this.dpr) return false;
    this.cssW = w;
    this.cssH = h;
    this.dpr = dpr;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    return true;
  }

  /** Text width with a cache. @param {string} s */
  measure(s) {
    let w = this.widths.get(s);
    if (w === undefined) {
      this.ctx.font = FONT;
      w = this.ctx.measureText(s).width;
      if (this.widths.size > 20000) this.widths.clear();
      this.widths.set(s, w);
    }
    return w;
  }

  /** s shortened with an ellipsis to fit max px. @param {string} s @param {number} max */
  fit(s, max) {
    if (this.measure(s) <= max) return s;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const m = (lo + hi + 1) >>> 1;
      if (this.measure(s.slice(0, m) + '…') <= max) lo = m;
      else hi = m - 1;
    }
    return s.slice(0, lo) + '…';
  }

  /** Width of the label column for these tracks. @param {Meta} meta */
  labelWidth(meta) {
    let w = LABEL_MIN_W;
    for (const t of meta.tracks) {
      w = Math.max(w, this.measure(t.name) + 12);
      if (w >= LABEL_MAX_W) return LABEL_MAX_W;
    }
    return Math.ceil(w);
  }

  /** Number of rows that fit. @param {number} rowH */
  rowsVisible(rowH) {
    return Math.max(1, Math.floor((this.cssH - ROWS_Y) / rowH));
  }

  /** @param {Meta} meta @param {Theme} theme */
  colors(meta, theme) {
    const key = meta.types.length + (theme.dark ? 'd' : 'l');
    if (key === this.colorKey) return;
    this.colorKey = key;
    this.typeColors = meta.types.map((_, i) => typeColor(i, theme.dark));
    this.rgba = new Uint32Array(meta.types.length);
    this.densityRGBA = new Uint32Array(meta.types.length * DENSITY_LEVELS);
    meta.types.forEach((_, i) => {
      const [r, g, b] = rgbOf(i, theme.dark);
      this.rgba[i] = packRGBA(r, g, b, 255);
      for (let l = 0; l < DENSITY_LEVELS; l++) this.densityRGBA[i * DENSITY_LEVELS + l] = packRGBA(r, g, b, Math.round(255 * (0.3 + (0.7 * (l + 1)) / DENSITY_LEVELS)));
    });
  }

  /** Draws the scene. @param {Scene} s */
  draw(s) {
    const { ctx, cssW, cssH } = this;
    const th = s.theme;
    this.colors(s.meta, th);
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';

    const L = s.labelW;
    const plotW = cssW - L;
    const rows = this.rowsVisible(s.rowH);
    const shown = s.order.slice(s.top, s.top + rows);

    // Row backgrounds and track lines.
    for (let r = 0; r < shown.length; r++) {
      const y = ROWS_Y + r * s.rowH;
      if (shown[r] === s.selTrack || r % 2 === 1) {
        ctx.fillStyle = shown[r] === s.selTrack ? th.selRow : th.rowAlt;
        ctx.fillRect(L, y, plotW, s.rowH);
      }
      ctx.fillStyle = shown[r] === s.selTrack ? th.sel : th.grid;
      ctx.fillRect(L, y + Math.floor(s.rowH / 2), plotW, 1);
    }

    ctx.save();
    ctx.beginPath();
    ctx.rect(L, ROWS_Y, plotW, cssH - ROWS_Y);
    ctx.clip();
    ctx.translate(L, 0);
    if (s.filterFrame !== undefined) {
      if (s.filterMode !== 'hide') {
        ctx.globalAlpha = DIM_ALPHA;
        this.drawGlyphs({ ...s, selEvent: null }, shown);
        ctx.globalAlpha = 1;
      }
      if (s.filterFrame) this.drawGlyphs({ ...s, frame: s.filterFrame }, shown);
    } else {
      this.drawGlyphs(s, shown);
    }
    drawSpanRows(this, s, shown);
    this.drawMarkers(s, shown);
    this.drawHitMarks(s, shown);
    this.drawPopups(s, shown);
    drawFlows(this, s, shown);
    this.drawFenceRuler(s);
    ctx.restore();

    this.drawLabels(s, shown);
    drawSpanLabels(this, s, shown);
    this.drawAxis(s);
    this.drawOverview(s);
  }

  /**
   * Glyphs. Nothing is drawn one rectangle at a time: bars and ticks are
   * written as pixels into one-pixel-high strips, two per track (density,
   * ticks), and each strip is stretched to its height with one drawImage.
   * Event boxes (frame and text) are rendered once per text and colour into
   * a pixel sprite and copied into a band of box-high rows, one drawImage
   * per track. A software canvas (headless Chromium, machines without a
   * GPU) spends microseconds per fillRect, fillText or drawImage, and a
   * dense view has one glyph per pixel column per track; this way a frame
   * costs a pass over the pixels and a few drawImage calls per track.
   * @param {Scene} s @param {number[]} shown
   */
  drawGlyphs(s, shown) {
    const { ctx } = this;
    const f = s.frame;
    if (!f) return;
    const vp = s.vp;
    const inv = 1 / vp.nsPerPx; // multiplying beats dividing in the loops below
    const dx0 = Number(f.base - vp.start);
    const W = Math.max(1, Math.ceil(vp.width));
    const rowH = s.rowH;
    const nTypes = s.meta.types.length;
    const eventMode = s.mode === 'event';
    const boxes = eventMode && rowH > 9;
    const tickH = Math.max(3, Math.round((rowH * 2) / 3));
    const barH = Math.max(3, Math.round(rowH * 0.8));
    const boxH = Math.min(rowH - 4, 15);
    const rgba = this.rgba;
    // Density colours pre-blended over each row's background, so that
    // the stretched strips hold only opaque or empty pixels (the canvas
    // copies those without blending).
    const densBg = this.densityOver(this.cssRGBA(s.theme.bg));
    const densAlt = this.densityOver(this.cssRGBA(s.theme.rowAlt));
    const densSel = this.densityOver(this.cssRGBA(s.theme.selRow));
    const grey = packRGBA(128, 128, 128, 255);
    const bg = this.bgRGBA(s.theme);
    const hidden = s.hidden;

    const nRows = shown.length;
    // Which strips hold anything, so that empty ones are not drawn.
    const used = new Uint8Array(nRows);
    const img = this.stripImage(W, STRIPS * nRows);
    const px = new Uint32Array(img.data.buffer);
    px.fill(0);
    const dpr = this.dpr;
    const bandW = Math.ceil(W * dpr);
    const bandH = Math.max(1, Math.round(boxH * dpr));
    const band = boxes && nRows > 0 && bandW > 0 ? this.bandImage(bandW, bandH * nRows) : null;
    const bpx = band ? new Uint32Array(band.data.buffer) : null;
    // Per-type sprites and name widths for this frame (the common case of
    // colour by type), so a box costs no string building or map lookup.
    /** @type {(Sprite | undefined)[]} */
    const codeSprite = [];
    /** @type {(Sprite | undefined)[]} */
    const nameSprite = [];
    /** @type {number[]} */
    const nameW = [];

    for (let r = 0; r < nRows; r++) {
      const id = shown[r];
      const sl = f.tracks.get(id);
      if (!sl) continue;
      const trackRGB = s.colorBy === 'track' ? rgbOf(hashString(s.meta.tracks[id]?.name ?? ''), s.theme.dark) : null;
      used[r] = (sl.an > 0 ? 1 : 0) | (sl.n > 0 ? (boxes ? 4 : 2) : 0);
      const dens = id === s.selTrack ? densSel : r % 2 === 1 ? densAlt : densBg;
      const dRow = STRIPS * r * W;
      const tRow = dRow + W;
      if (bpx && sl.n > 0) bpx.fill(0, r * bandH * bandW, (r + 1) * bandH * bandW);

      // Aggregates: colour of the dominant type, opacity by event count.
      for (let i = 0; i < sl.an; i++) {
        let x0 = Math.floor((dx0 + sl.aoff[i]) * inv);
        if (x0 >= W) break;
        let x1 = Math.ceil((dx0 + sl.aoff[i] + sl.adur[i]) * inv);
        if (x1 <= x0) x1 = x0 + 1;
        if (x1 <= 0) continue;
        if (x0 < 0) x0 = 0;
        if (x1 > W) x1 = W;
        const t = sl.atype[i];
        if (hidden.size && hidden.has(t)) continue;
        // Density level: one per factor of 8 events (log2 by clz32, which
        // is several times faster than Math.log2 in this loop).
        const lg = 31 - Math.clz32(sl.count[i]);
        const level = lg >= 3 * (DENSITY_LEVELS - 1) ? DENSITY_LEVELS - 1 : (lg / 3) | 0;
        const c = trackRGB ? packRGBA(trackRGB[0], trackRGB[1], trackRGB[2], 90 + 55 * level)
          : t >= 0 && t < nTypes ? dens[t * DENSITY_LEVELS + level] : grey;
        // Runs are mostly a pixel or two: a loop beats a fill() call.
        for (let p = dRow + x0, e = dRow + x1; p < e; p++) px[p] = c;
      }

      // Individual events: g2 glyphs, decimated per track (a glyph is
      // skipped when it would start inside the previous one).
      let lastEnd = -Infinity;
      for (let i = 0; i < sl.n; i++) {
        const x = (dx0 + sl.off[i]) * inv;
        if (x < -100) continue;
        if (x >= W) break;
        if (x < lastEnd) continue;
        const t = sl.type[i];
        if (hidden.size && hidden.has(t)) continue;
        const c = trackRGB ? packRGBA(trackRGB[0], trackRGB[1], trackRGB[2], 255) : t >= 0 && t < nTypes ? rgba[t] : grey;
        const xi = Math.floor(x);
        if (bpx) {
          // g2 event box: lower-left corner at the event's time.
          const ty = s.meta.types[t];
          const next = i + 1 < sl.n ? (dx0 + sl.off[i + 1]) * inv : Infinity;
          let nw = nameW[t];
          if (nw === undefined) nw = nameW[t] = ty && ty.name ? this.measure(ty.name) + 8 : Infinity;
          const useName = nw < next - x;
          let sp = trackRGB ? undefined : useName ? nameSprite[t] : codeSprite[t];
          if (!sp) {
            sp = this.sprite(useName && ty ? ty.name : ty ? String(ty.code) : '?', c, boxH, bg, s.theme);
            if (!trackRGB) (useName ? nameSprite : codeSprite)[t] = sp;
          }
          blit(bpx, bandW, r * bandH, Math.floor(xi * dpr), sp);
          lastEnd = x + sp.cssW;
        } else {
          const w = eventMode ? 3 : 1;
          const a = Math.max(0, xi - (w >> 1));
          const b = Math.min(W, xi - (w >> 1) + w);
          for (let p = tRow + a; p < tRow + b; p++) px[p] = c;
          lastEnd = xi + w;
        }
      }
    }

    const strip = /** @type {HTMLCanvasElement} */ (this.strip);
    const sctx = /** @type {CanvasRenderingContext2D} */ (strip.getContext('2d'));
    sctx.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    const tickDrawH = eventMode ? 3 : tickH;
    for (let r = 0; r < nRows; r++) {
      const mid = ROWS_Y + r * rowH + (rowH >> 1);
      const k = STRIPS * r;
      if (used[r] & 1) ctx.drawImage(strip, 0, k, W, 1, 0, mid - (barH >> 1), W, barH);
      if (used[r] & 2) ctx.drawImage(strip, 0, k + 1, W, 1, 0, mid - (tickDrawH >> 1), W, tickDrawH);
    }
    if (band) {
      const bc = /** @type {HTMLCanvasElement} */ (this.band);
      /** @type {CanvasRenderingContext2D} */ (bc.getContext('2d')).putImageData(band, 0, 0);
      for (let r = 0; r < nRows; r++) {
        if (!(used[r] & 4)) continue;
        const y = ROWS_Y + r * rowH + ((rowH - boxH) >> 1);
        ctx.drawImage(bc, 0, r * bandH, bandW, bandH, 0, y, bandW / dpr, bandH / dpr);
      }
    }

    // Selected event ring.
    if (s.selEvent) {
      const r = shown.indexOf(s.selEvent.track);
      if (r >= 0) {
        const x = vp.x(s.selEvent.time);
        const mid = ROWS_Y + r * rowH + Math.floor(rowH / 2);
        ctx.strokeStyle = s.theme.sel;
        ctx.lineWidth = 2;
        ctx.strokeRect(Math.round(x) - 4, mid - Math.min(rowH / 2, 8), 8, Math.min(rowH, 16));
      }
    }
  }

  /** The strip canvas and its pixel buffer, grown as needed. @param {number} w @param {number} h */
  stripImage(w, h) {
    if (!this.strip) this.strip = document.createElement('canvas');
    const hh = Math.max(STRIPS, h);
    if (!this.stripImg || this.stripImg.width !== w || this.stripImg.height !== hh) {
      this.strip.width = w;
      this.strip.height = hh;
      this.stripImg = new ImageData(w, hh);
    }
    return this.stripImg;
  }

  /** The box band canvas and its pixel buffer (device pixels). @param {number} w @param {number} h */
  bandImage(w, h) {
    if (!this.band) this.band = document.createElement('canvas');
    if (!this.bandImg || this.bandImg.width !== w || this.bandImg.height !== h) {
      this.band.width = w;
      this.band.height = h;
      this.bandImg = new ImageData(w, h);
    }
    return this.bandImg;
  }

  /**
   * An event box as pixels (device resolution): the text in a frame of the
   * event's colour on the background, rendered once and cached.
   * @param {string} text @param {number} c packed colour @param {number} h box height, CSS px
   * @param {number} bg packed background @param {Theme} theme
   * @returns {Sprite}
   */
  sprite(text, c, h, bg, theme) {
    const key = `${text}\u0000${c}\u0000${h}\u0000${bg}\u0000${this.dpr}`;
    let sp = this.sprites.get(key);
    if (sp) return sp;
    if (this.sprites.size > 2000) this.sprites.clear();
    const dpr = this.dpr;
    const cssW = Math.ceil(this.measure(text) + 6);
    const w = Math.max(1, Math.round(cssW * dpr));
    const hh = Math.max(1, Math.round(h * dpr));
    const cv = document.createElement('canvas');
    cv.width = w;
    cv.height = hh;
    const g = /** @type {CanvasRenderingContext2D} */ (cv.getContext('2d', { willReadFrequently: true }));
    g.scale(dpr, dpr);
    const css = cssOf(c);
    g.fillStyle = theme.bg;
    g.fillRect(0, 0, cssW, h);
    g.strokeStyle = css;
    g.lineWidth = 1;
    g.strokeRect(0.5, 0.5, cssW - 1, h - 1);
    g.font = FONT;
    g.textBaseline = 'middle';
    g.fillStyle = css;
    g.fillText(text, 3, h / 2 + 0.5);
    const data = new Uint32Array(g.getImageData(0, 0, w, hh).data.buffer);
    sp = { w, h: hh, cssW, data };
    this.sprites.set(key, sp);
    return sp;
  }

  /**
   * Packed colour of a CSS colour (cached).
   * @param {string} css
   */
  cssRGBA(css) {
    let c = this.cssCache.get(css);
    if (c === undefined) {
      const cv = document.createElement('canvas');
      cv.width = cv.height = 1;
      const g = /** @type {CanvasRenderingContext2D} */ (cv.getContext('2d', { willReadFrequently: true }));
      g.fillStyle = css;
      g.fillRect(0, 0, 1, 1);
      const d = g.getImageData(0, 0, 1, 1).data;
      c = packRGBA(d[0], d[1], d[2], 255);
      this.cssCache.set(css, c);
    }
    return c;
  }

  /**
   * Density colours (type × level) blended over an opaque background.
   * @param {number} bg packed
   */
  densityOver(bg) {
    const key = bg + ':' + this.colorKey;
    let d = this.densCache.get(key);
    if (d) return d;
    const a = this.densityRGBA;
    d = new Uint32Array(a.length);
    const br = bg & 255, bgg = (bg >>> 8) & 255, bb = (bg >>> 16) & 255;
    for (let i = 0; i < a.length; i++) {
      const c = a[i];
      const al = (c >>> 24) / 255;
      d[i] = packRGBA(
        Math.round((c & 255) * al + br * (1 - al)),
        Math.round(((c >>> 8) & 255) * al + bgg * (1 - al)),
        Math.round(((c >>> 16) & 255) * al + bb * (1 - al)), 255);
    }
    if (this.densCache.size > 16) this.densCache.clear();
    this.densCache.set(key, d);
    return d;
  }

  /** The theme's background as a packed colour. @param {Theme} theme */
  bgRGBA(theme) {
    if (this.bgKey !== theme.bg) {
      const c = document.createElement('canvas');
      c.width = c.height = 1;
      const g = /** @type {CanvasRenderingContext2D} */ (c.getContext('2d'));
      g.fillStyle = theme.bg;
      g.fillRect(0, 0, 1, 1);
      const d = g.getImageData(0, 0, 1, 1).data;
      this.bg = packRGBA(d[0], d[1], d[2], 255);
      this.bgKey = theme.bg;
    }
    return this.bg;
  }

  /** Lost-event markers and the truncation point. @param {Scene} s @param {number[]} shown */
  drawMarkers(s, shown) {
    const { ctx } = this;
    const vp = s.vp;
    const top = ROWS_Y;
    const bottom = ROWS_Y + shown.length * s.rowH;
    ctx.fillStyle = s.theme.lost;
    ctx.strokeStyle = s.theme.lost;
    for (const g of s.meta.lost) {
      const x = vp.x(g.time);
      if (x < -10 || x > vp.width + 10) continue;
      const r = g.track >= 0 ? shown.indexOf(g.track) : -1;
      if (g.track >= 0 && r < 0) continue;
      const y0 = r >= 0 ? top + r * s.rowH : top;
      const y1 = r >= 0 ? y0 + s.rowH : bottom;
      ctx.fillRect(Math.round(x), y0, 1, y1 - y0);
      ctx.beginPath();
      ctx.moveTo(x - 5, y0);
      ctx.lineTo(x + 5, y0);
      ctx.lineTo(x, y0 + 7);
      ctx.fill();
      ctx.textAlign = 'left';
      ctx.fillText(`${g.count} lost`, x + 7, y0 + 6);
    }
    if (s.meta.truncatedAt !== null && s.meta.error) {
      const x = vp.x(s.meta.truncatedAt);
      if (x >= -1 && x <= vp.width + 1) {
        ctx.setLineDash([4, 3]);
        ctx.beginPath();
        ctx.moveTo(Math.round(x) + 0.5, top);
        ctx.lineTo(Math.round(x) + 0.5, bottom);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.textAlign = 'right';
        ctx.fillText('truncated ▸', x - 3, top + 8);
      }
    }
  }

  /**
   * Search hits (or a stack node's samples) on their tracks: a notch at the
   * top of the row, one per pixel column.
   * @param {Scene} s @param {number[]} shown
   */
  drawHitMarks(s, shown) {
    if (!s.hitMarks || s.hitMarks.length === 0) return;
    const { ctx } = this;
    const vp = s.vp;
    /** @type {Map<number, number>} */
    const row = new Map();
    shown.forEach((id, r) => row.set(id, r));
    const h = Math.max(2, Math.min(6, Math.floor(s.rowH / 3)));
    /** @type {Set<number>} */
    const done = new Set();
    ctx.fillStyle = s.theme.hit;
    for (const m of s.hitMarks) {
      const r = row.get(m.track);
      if (r === undefined || m.time < vp.start || m.time > vp.end) continue;
      const x = Math.round(vp.x(m.time));
      const key = r * 65536 + x;
      if (done.has(key)) continue;
      done.add(key);
      const y = ROWS_Y + r * s.rowH;
      ctx.fillRect(x - 1, y, 3, h);
    }
  }

  /** g2 detail boxes, joined to their event by a line. @param {Scene} s @param {number[]} shown */
  drawPopups(s, shown) {
    const { ctx } = this;
    ctx.textAlign = 'left';
    for (const p of s.popups) {
      const r = shown.indexOf(p.track);
      if (r < 0) continue;
      const x = s.vp.x(p.time);
      if (x < -400 || x > s.vp.width + 400) continue;
      const mid = ROWS_Y + r * s.rowH + Math.floor(s.rowH / 2);
      const text = this.fit(p.text, 360);
      const w = this.measure(text) + 8;
      const h = 16;
      let by = mid - POPUP_RISE - h;
      if (by < ROWS_Y) by = mid + POPUP_RISE;
      const bx = Math.min(Math.max(0, x), Math.max(0, s.vp.width - w));
      ctx.strokeStyle = s.theme.fg;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, mid);
      ctx.lineTo(Math.round(x) + 0.5, by < mid ? by + h : by);
      ctx.stroke();
      ctx.fillStyle = s.theme.popupBg;
      ctx.fillRect(bx, by, w, h);
      ctx.strokeRect(Math.floor(bx) + 0.5, Math.floor(by) + 0.5, Math.round(w), h);
      ctx.fillStyle = s.theme.fg;
      ctx.fillText(text, bx + 4, by + h / 2 + 0.5);
    }
  }

  /** @param {Scene} s */
  drawFenceRuler(s) {
    const { ctx, cssH } = this;
    if (s.fence) {
      const a = Math.min(s.fence.x0, s.fence.x1);
      const b = Math.max(s.fence.x0, s.fence.x1);
      ctx.fillStyle = s.theme.dark ? 'rgba(120,160,255,0.18)' : 'rgba(40,90,220,0.14)';
      ctx.fillRect(a, ROWS_Y, b - a, cssH - ROWS_Y);
      ctx.fillStyle = s.theme.fg;
      ctx.fillRect(Math.round(s.fence.x0), ROWS_Y, 1, cssH - ROWS_Y);
      ctx.textAlign = 'left';
      ctx.fillText('Zoom from here… ' + formatDuration((b - a) * s.vp.nsPerPx), a + 4, ROWS_Y + 10);
    }
    if (s.ruler) {
      const x0 = s.vp.x(s.ruler.t0);
      const x1 = s.vp.x(s.ruler.t1);
      ctx.fillStyle = s.theme.hit;
      ctx.fillRect(Math.round(x0), ROWS_Y, 1, cssH - ROWS_Y);
      ctx.fillRect(Math.round(x1), ROWS_Y, 1, cssH - ROWS_Y);
      const y = ROWS_Y + 24;
      ctx.fillRect(Math.min(x0, x1), y, Math.abs(x1 - x0), 1);
      const text = formatDuration(Number(s.ruler.t1 - s.ruler.t0));
      const w = this.measure(text) + 8;
      const bx = Math.max(0, Math.min((x0 + x1) / 2 - w / 2, s.vp.width - w));
      ctx.fillStyle = s.theme.popupBg;
      ctx.fillRect(bx, y - 18, w, 16);
      ctx.strokeStyle = s.theme.hit;
      ctx.strokeRect(Math.floor(bx) + 0.5, y - 17.5, Math.round(w), 16);
      ctx.fillStyle = s.theme.fg;
      ctx.textAlign = 'left';
      ctx.fillText(text, bx + 4, y - 9.5);
    }
  }

  /** @param {Scene} s @param {number[]} shown */
  drawLabels(s, shown) {
    const { ctx, cssH } = this;
    const th = s.theme;
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(0, ROWS_Y, s.labelW, cssH - ROWS_Y);
    ctx.fillStyle = th.grid;
    ctx.fillRect(s.labelW - 1, ROWS_Y, 1, cssH - ROWS_Y);
    ctx.textAlign = 'left';
    for (let r = 0; r < shown.length; r++) {
      const t = s.meta.tracks[shown[r]];
      if (!t) continue;
      const y = ROWS_Y + r * s.rowH + s.rowH / 2;
      if (shown[r] === s.selTrack) {
        ctx.fillStyle = th.sel;
        ctx.fillRect(0, y - s.rowH / 2, 3, s.rowH);
      }
      const pin = s.pinned?.has(shown[r]) ? 10 : 0;
      ctx.fillStyle = shown[r] === s.selTrack ? th.sel : th.fg;
      // With a timeline filter, the track's matching events at the right.
      let cw = 0;
      if (s.trackCounts && s.rowH >= 9) {
        const c = (s.trackCounts.get(shown[r]) ?? 0).toLocaleString('en-US');
        cw = this.measure(c) + 6;
        ctx.textAlign = 'right';
        ctx.fillText(c, s.labelW - 4 - pin, y + 0.5);
        ctx.textAlign = 'left';
      }
      if (s.rowH >= 9) ctx.fillText(this.fit(t.name, s.labelW - 10 - pin - cw), 6, y + 0.5);
      if (pin) {
        // A small pin mark at the right of a pinned track's label.
        ctx.beginPath();
        ctx.arc(s.labelW - 8, y - 1, 3, 0, 2 * Math.PI);
        ctx.fill();
        ctx.fillRect(s.labelW - 8, y + 1, 1, 4);
      }
    }
  }

  /** Time axis: absolute time since the first event, never repeating. @param {Scene} s */
  drawAxis(s) {
    const { ctx, cssW } = this;
    const th = s.theme;
    const L = s.labelW;
    const y = OVERVIEW_H;
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(0, y, cssW, AXIS_H);
    ctx.fillStyle = th.grid;
    ctx.fillRect(0, y + AXIS_H - 1, cssW, 1);
    const first = s.meta.first;
    const rel0 = s.vp.start - first;
    const rel1 = s.vp.end - first;
    const unit = unitFor(rel0 < 0n ? (-rel0 > rel1 ? -rel0 : rel1) : rel1);
    // Widen the spacing until the widest label fits between ticks.
    let minPx = TICK_MIN_PX;
    let tk = s.vp.ticks(minPx, first);
    for (let k = 0; k < 4; k++) {
      const sample = formatTime(s.vp.end - first, unit, tk.step);
      const need = this.measure(sample) + 16;
      if (need <= minPx) break;
      minPx = need;
      tk = s.vp.ticks(minPx, first);
    }
    ctx.textAlign = 'left';
    for (const t of tk.ticks) {
      const x = L + s.vp.x(t);
      if (x < L) continue;
      ctx.fillStyle = th.grid;
      ctx.fillRect(Math.round(x), y + AXIS_H - 7, 1, 7);
      ctx.fillRect(Math.round(x), ROWS_Y, 1, this.cssH - ROWS_Y);
      ctx.fillStyle = th.muted;
      ctx.fillText(formatTime(t - first, unit, tk.step), x + 3, y + AXIS_H / 2);
    }
    ctx.fillStyle = th.muted;
    ctx.textAlign = 'left';
    ctx.fillText(this.fit(formatDuration(s.vp.span) + ' shown', L - 8), 4, y + AXIS_H / 2);
  }

  /**
   * Overview strip: the whole trace, the visible window, lost events and
   * search hits — from the hit list, or from the hits per time bin when
   * the list was cut short (overview.js), taller where there are more.
   * @param {Scene} s
   */
  drawOverview(s) {
    const { ctx, cssW } = this;
    const th = s.theme;
    const L = s.labelW;
    const w = cssW - L;
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(0, 0, cssW, OVERVIEW_H);
    const a = s.meta.first;
    const span = Number(s.meta.last - a) || 1;
    const ox = (/** @type {bigint} */ t) => L + (Number(t - a) / span) * (w - 1);
    const marks = s.hitBins ? this.binMarksOf(s.hitBins, s.meta, L, w) : hitMarks(s.hits, a, s.meta.last, L, w);
    let max = 1;
    for (const m of marks) if (m.count > max) max = m.count;
    const full = OVERVIEW_H - 4;
    const lg = Math.log1p(max);
    ctx.fillStyle = th.hit;
    for (const m of marks) {
      const h = max <= 1 ? full : Math.max(3, Math.round(full * (0.3 + (0.7 * Math.log1p(m.count)) / lg)));
      ctx.fillRect(m.x, 2 + full - h, 1, h);
    }
    ctx.fillStyle = th.lost;
    for (const g of s.meta.lost) ctx.fillRect(Math.round(ox(g.time)), 0, 2, 5);
    const x0 = Math.max(L, ox(s.vp.start));
    const x1 = Math.min(cssW, ox(s.vp.end));
    ctx.strokeStyle = th.fg;
    ctx.lineWidth = 1;
    ctx.strokeRect(Math.floor(x0) + 0.5, 0.5, Math.max(2, Math.round(x1 - x0)), OVERVIEW_H - 2);
    ctx.fillStyle = th.muted;
    ctx.textAlign = 'left';
    const n = s.hitBins && s.hitTotal ? s.hitTotal : s.hits.length;
    ctx.fillText(this.fit(n ? `${n.toLocaleString('en-US')} hits` : 'overview', L - 8), 4, OVERVIEW_H / 2 + 0.5);
  }

  /**
   * The overview's marks for hit counts per bin, kept while the bins and
   * the strip stay the same (a pan redraws every frame; the marks do not
   * change).
   * @param {import('./overview.js').HitBins} bins @param {Meta} meta @param {number} L @param {number} w
   */
  binMarksOf(bins, meta, L, w) {
    const c = this.binCache;
    if (c && c.bins === bins && c.meta === meta && c.L === L && c.w === w) return c.marks;
    const marks = binMarks(bins, meta.first, meta.last, L, w);
    this.binCache = { bins, meta, L, w, marks };
    return marks;
  }

  /**
   * What the canvas shows while the source indexes the trace: a bar filled
   * to the percentage shown (progress.js) and the progress line; with
   * `failed`, that text alone. Never a blank (or black) canvas.
   * @param {import('./progress.js').Progress} p @param {Theme} th @param {string} [failed]
   */
  drawProgress(p, th, failed) {
    const { ctx, cssW, cssH } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'center';
    const cx = cssW / 2;
    const cy = Math.max(40, Math.min(cssH / 2, 160));
    if (failed) {
      ctx.fillStyle = th.lost;
      ctx.fillText(this.fit(failed, cssW - 20), cx, cy);
      return;
    }
    const bar = progressBar(cssW, cy);
    ctx.fillStyle = th.labelBg;
    ctx.fillRect(bar.x, bar.y, bar.w, bar.h);
    ctx.fillStyle = th.accent;
    ctx.fillRect(bar.x, bar.y, Math.round((bar.w * shownPercent(p.percent)) / 100), bar.h);
    ctx.strokeStyle = th.grid;
    ctx.lineWidth = 1;
    ctx.strokeRect(bar.x + 0.5, bar.y + 0.5, bar.w - 1, bar.h - 1);
    ctx.fillStyle = th.fg;
    ctx.fillText(this.fit(progressText(p), cssW - 20), cx, bar.y - 14);
  }
}

/**
 * Where drawProgress puts its bar on a canvas cssW wide, centred on y.
 * @param {number} cssW @param {number} y
 */
export function progressBar(cssW, y) {
  const w = Math.max(40, Math.min(480, Math.round(cssW * 0.6)));
  return { x: Math.round((cssW - w) / 2), y: Math.round(y), w, h: 14 };
}

/**
 * @typedef {object} Sprite
 * @property {number} w     device pixels
 * @property {number} h
 * @property {number} cssW  width in CSS pixels
 * @property {Uint32Array} data
 */

/**
 * Copies a sprite into a pixel buffer of width bw at row y0, column x,
 * clipped to the buffer.
 * @param {Uint32Array} dst @param {number} bw @param {number} y0 @param {number} x @param {Sprite} sp
 */
function blit(dst, bw, y0, x, sp) {
  const a = Math.max(0, -x);
  const b = Math.min(sp.w, bw - x);
  if (b <= a) return;
  const d = sp.data;
  for (let y = 0; y < sp.h; y++) {
    // A plain loop: subarray() would allocate an object per line.
    let o = (y0 + y) * bw + x + a;
    for (let i = y * sp.w + a, e = y * sp.w + b; i < e; i++) dst[o++] = d[i];
  }
}

/**
 * RGB of colour i: golden-angle hues, darker on light themes.
 * @param {number} i @param {boolean} dark @returns {[number, number, number]}
 */
export function rgbOf(i, dark) {
  const h = (i * 137.508) % 360;
  const sat = 0.65;
  const l = dark ? 0.66 : 0.4;
  const a = sat * Math.min(l, 1 - l);
  const f = (/** @type {number} */ n) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/** Colour i as CSS. @param {number} i @param {boolean} dark */
export function typeColor(i, dark) {
  const [r, g, b] = rgbOf(i, dark);
  return `rgb(${r} ${g} ${b})`;
}

/** Packs a colour for a Uint32Array over ImageData (little-endian RGBA). @param {number} r @param {number} g @param {number} b @param {number} a */
function packRGBA(r, g, b, a) {
  return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** CSS of a packed colour (opaque). @param {number} c */
function cssOf(c) {
  return `rgb(${c & 255} ${(c >>> 8) & 255} ${(c >>> 16) & 255})`;
}

/** Bernstein hash of a track name up to its first '(' (g2's colour mode). @param {string} s */
export function hashString(s) {
  let h = 5381;
  for (let i = 0; i < s.length && s[i] !== '('; i++) h = ((h << 5) + h + s.charCodeAt(i)) >>> 0;
  return h % 1000;
}
