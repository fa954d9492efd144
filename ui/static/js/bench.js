// @ts-check
// Frame-time benchmark of the renderer: draws a dense synthetic viewport
// (every pixel bucket of every track an aggregate, the worst case the
// server can send) and times each draw including the rasterization that
// getImageData forces. Loaded by the browser benchmark only.

'use strict';

import { Renderer, ROWS_Y } from './render.js';
import { Viewport } from './viewport.js';
import { emptySlice } from './source.js';

/**
 * @param {{width?: number, tracks?: number, frames?: number, rowH?: number, glyphs?: 'dense' | 'events' | 'none', mode?: 'event' | 'summary'}} opt
 * Prepares the scene; run() then draws the frames and returns the
 * timings, done() removes the canvas.
 * @returns {{run: () => {times: number[], median: number, p90: number, rects: number}, done: () => void, rects: number}}
 */
export function benchDraw(opt = {}) {
  const width = opt.width ?? 2000;
  const nTracks = opt.tracks ?? 50;
  const frames = opt.frames ?? 60;
  const rowH = opt.rowH ?? 20;
  const labelW = 120;
  const canvas = document.createElement('canvas');
  canvas.style.width = `${width + labelW}px`;
  canvas.style.height = `${ROWS_Y + nTracks * rowH}px`;
  canvas.style.position = 'absolute';
  canvas.style.left = '0';
  canvas.style.top = '0';
  document.body.append(canvas);
  const r = new Renderer(canvas);
  r.resize();

  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const nsPerPx = 1000;
  const nTypes = 24;
  /** @type {Map<number, import('./source.js').TrackSlice>} */
  const tracks = new Map();
  let rects = 0;
  for (let k = 0; k < nTracks; k++) {
    const s = emptySlice();
    if (opt.glyphs === 'none') {
      // no data: the fixed cost of a frame
    } else if ((opt.glyphs ?? 'dense') === 'dense') {
      s.an = width;
      s.aoff = new Float64Array(width);
      s.adur = new Float64Array(width);
      s.count = new Uint32Array(width);
      s.atype = new Int32Array(width);
      s.afirst = new Uint32Array(width);
      let type = 0;
      for (let i = 0; i < width; i++) {
        if (rnd() < 0.25) type = Math.floor(rnd() * nTypes);
        s.aoff[i] = i * nsPerPx;
        s.adur[i] = nsPerPx;
        s.count[i] = 2 + Math.floor(rnd() * rnd() * 5000);
        s.atype[i] = type;
        s.afirst[i] = i;
      }
      rects += width;
    } else {
      const n = Math.floor(width / 4);
      s.n = n;
      s.off = new Float64Array(n);
      s.type = new Int32Array(n);
      s.first = new Uint32Array(n);
      for (let i = 0; i < n; i++) {
        s.off[i] = (i * 4 + rnd() * 3) * nsPerPx;
        s.type[i] = Math.floor(rnd() * nTypes);
        s.first[i] = i;
      }
      rects += n;
    }
    tracks.set(k, s);
  }
  const meta = {
    name: 'bench', format: 'bench', first: 0n, last: BigInt(width * nsPerPx), events: rects,
    tracks: Array.from({ length: nTracks }, (_, id) => ({ id, name: `track ${id}`, kind: 'thread' })),
    types: Array.from({ length: nTypes }, (_, id) => ({ id, provider: 'p', name: `type${id}`, code: id })),
    lost: [], truncatedAt: null, error: '',
  };
  /** @type {import('./render.js').Scene} */
  const scene = {
    vp: new Viewport(0n, nsPerPx, width), meta, order: meta.tracks.map((t) => t.id), top: 0, rowH, labelW,
    frame: { seq: 1, base: 0n, end: BigInt(width * nsPerPx), nsPerPx, tracks },
    mode: opt.mode ?? 'summary', colorBy: 'type', hidden: new Set(), selTrack: -1, selEvent: null, popups: [], hits: [],
    fence: null, ruler: null,
    theme: { bg: '#fff', fg: '#111', muted: '#666', grid: '#ddd', rowAlt: '#f6f6f6', labelBg: '#eee', sel: '#d00', selRow: '#fee', hit: '#e70', lost: '#c00', popupBg: '#ffe', accent: '#15c', dark: false },
  };
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  // Warm up caches and the JIT before the timed frames.
  for (let f = 0; f < 3; f++) {
    r.draw(scene);
    ctx.getImageData(0, 0, 1, 1);
  }
  const run = () => {
    const times = [];
    for (let f = 0; f < frames; f++) {
      // Pan by a pixel each frame so no draw repeats the previous one exactly.
      scene.vp = new Viewport(BigInt(-f * nsPerPx), nsPerPx, width);
      const t0 = performance.now();
      r.draw(scene);
      ctx.getImageData(0, 0, 1, 1);
      times.push(performance.now() - t0);
    }
    const sorted = [...times].sort((a, b) => a - b);
    return { times, median: sorted[Math.floor(sorted.length / 2)], p90: sorted[Math.floor(sorted.length * 0.9)], rects };
  };
  return { run, done: () => canvas.remove(), rects };
}
