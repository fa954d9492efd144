// @ts-check
// Spans: the derived tracks' data (GET /api/traces/{id}/spans, PROTOCOL.md
// §3) as the page draws it, with no DOM: the reply parsed into a frame,
// where a track's items fall in pixels (slices by depth, summaries with
// their busy fraction), a counter track's min/max band per pixel column,
// the thread-state colours, the slice under the pointer, and slice edges
// for the ruler to snap to. Tested under node (ui/jstest).

'use strict';

/**
 * @typedef {object} DerivedTrack  a derived track (trace/span.Track)
 * @property {number} id
 * @property {string} kind   "cpu", "state", "slices" or "counter"
 * @property {string} name
 * @property {number} of     the trace track it belongs under, -1 for none
 * @property {number} cpu    the processor of a cpu track, else -1
 *
 * @typedef {object} SpanItem  one slice, or a summary of the slices shorter than a bucket
 * @property {number} slice   index in its track (/spans/{track}/{slice}); a summary's first
 * @property {number} depth
 * @property {bigint} start
 * @property {bigint} end
 * @property {string} name
 * @property {number} count
 * @property {boolean} summary
 * @property {number} busy    a summary's covered fraction of its bucket (1 for a slice)
 * @property {string} open    "", "start", "end" or "both"
 * @property {number} thread  the trace track the slice is about, -1 for none
 *
 * @typedef {object} CounterItem  a counter track in one bucket that holds samples
 * @property {number} bucket
 * @property {number} count
 * @property {number} min
 * @property {number} max
 * @property {number} last
 *
 * @typedef {object} SpanTrack
 * @property {DerivedTrack} track
 * @property {SpanItem[]} items   by depth, then time
 * @property {CounterItem[]} counters
 * @property {number} depths      1 + the deepest item's depth (at least 1)
 *
 * @typedef {object} SpanFrame  one reply of the spans endpoint
 * @property {bigint} start     bucket 0's start
 * @property {number} res       bucket width, ns
 * @property {number} buckets
 * @property {bigint} from      the range asked for
 * @property {bigint} to
 * @property {number} total     derived tracks of the trace
 * @property {Map<number, SpanTrack>} tracks
 * @property {Map<number, number>} enter  a counter track's value held when the range begins (its last sample before), when known
 */

/** The kinds of derived track, in the order they follow their trace track. */
export const KIND_ORDER = ['state', 'slices', 'counter', 'cpu'];

/**
 * Thread-state colours (trace/perf/sched.go's names), light and dark, and
 * the legend's order: running green, runnable blue, sleeping grey,
 * blocked red, as Perfetto and Trace Compass draw them.
 * @type {{name: string, light: string, dark: string}[]}
 */
export const STATES = [
  { name: 'running', light: '#2f9e44', dark: '#51cf66' },
  { name: 'runnable', light: '#1c7ed6', dark: '#4dabf7' },
  { name: 'runnable (preempted)', light: '#4263eb', dark: '#748ffc' },
  { name: 'sleeping', light: '#ced4da', dark: '#495057' },
  { name: 'blocked', light: '#e03131', dark: '#ff6b6b' },
  { name: 'idle', light: '#e9ecef', dark: '#343a40' },
  { name: 'stopped', light: '#f08c00', dark: '#ffa94d' },
  { name: 'dead', light: '#212529', dark: '#f8f9fa' },
];

/**
 * The colour of a thread state; states the table lacks are purple.
 * @param {string} name @param {boolean} dark
 */
export function stateColor(name, dark) {
  const s = STATES.find((x) => x.name === name);
  if (!s) return dark ? '#b197fc' : '#7048e8';
  return dark ? s.dark : s.light;
}

/** @param {unknown} v */
function big(v) {
  try {
    return BigInt(/** @type {any} */ (v));
  } catch {
    return 0n;
  }
}

/**
 * A reply of the spans endpoint as a frame.
 * @param {any} j  the JSON
 * @param {bigint} from @param {bigint} to  the range asked for
 * @returns {SpanFrame}
 */
export function parseSpans(j, from, to) {
  /** @type {Map<number, SpanTrack>} */
  const tracks = new Map();
  for (const t of Array.isArray(j?.tracks) ? j.tracks : []) {
    const track = parseTrack(t);
    let depths = 1;
    const items = (Array.isArray(t.items) ? t.items : []).map((/** @type {any} */ it) => {
      const depth = Number(it.depth) || 0;
      depths = Math.max(depths, depth + 1);
      return {
        slice: Number(it.slice) || 0, depth,
        start: big(it.start), end: big(it.end),
        name: String(it.name ?? ''), count: Number(it.count) || 1,
        summary: !!it.summary, busy: it.summary ? Number(it.busy) || 0 : 1,
        open: String(it.open ?? ''), thread: typeof it.thread === 'number' ? it.thread : -1,
      };
    });
    const counters = (Array.isArray(t.counters) ? t.counters : []).map((/** @type {any} */ c) => ({
      bucket: Number(c.bucket) || 0, count: Number(c.count) || 0,
      min: Number(c.min) || 0, max: Number(c.max) || 0, last: Number(c.last) || 0,
    }));
    tracks.set(track.id, { track, items, counters, depths });
  }
  return {
    start: big(j?.start), res: Number(j?.res) || 1, buckets: Number(j?.buckets) || 0,
    from, to, total: Number(j?.total_tracks) || 0, tracks, enter: new Map(),
  };
}

/** @param {any} t @returns {DerivedTrack} */
export function parseTrack(t) {
  return {
    id: Number(t.id), kind: String(t.kind ?? ''), name: String(t.name ?? ''),
    of: typeof t.of === 'number' ? t.of : -1, cpu: typeof t.cpu === 'number' ? t.cpu : -1,
  };
}

/**
 * @typedef {object} Box  an item's place in its row, CSS px
 * @property {number} x0
 * @property {number} x1   at least x0 + 1
 * @property {number} y    top, from the row's top
 * @property {number} h
 * @property {SpanItem} item
 */

/**
 * Where a track's items fall in a row rowH high: x from the viewport
 * (items wholly outside [0, width) are left out, a slice narrower than a
 * pixel is a pixel wide), depth lanes stacked from the top (lanes of
 * rowH / depths, at least 2 px; deeper lanes past the row are left out),
 * and a summary as tall as its busy fraction of its lane, at the lane's
 * bottom, so a busy CPU reads as a full bar and an idle one as a sliver.
 * @param {SpanItem[]} items @param {number} depths
 * @param {{start: bigint, nsPerPx: number, width: number}} vp
 * @param {number} rowH
 * @returns {Box[]}
 */
export function layoutItems(items, depths, vp, rowH) {
  const laneH = Math.max(2, Math.floor((rowH - 2) / Math.max(1, depths)));
  /** @type {Box[]} */
  const out = [];
  for (const it of items) {
    const y = 1 + it.depth * laneH;
    if (y + laneH > rowH) continue;
    let x0 = Number(it.start - vp.start) / vp.nsPerPx;
    let x1 = Number(it.end - vp.start) / vp.nsPerPx;
    if (x1 < 0 || x0 >= vp.width) continue;
    x0 = Math.max(-1, x0);
    x1 = Math.min(vp.width + 1, Math.max(x1, x0 + 1));
    const h = it.summary ? Math.max(1, Math.round(laneH * Math.min(1, Math.max(0, it.busy)))) : laneH;
    out.push({ x0, x1, y: y + laneH - h, h, item: it });
  }
  return out;
}

/**
 * The item under (x, y) in a row: of the items within tol px of x, the
 * one nearest the pointer, the lane under it first; null when none.
 * @param {Box[]} boxes @param {number} x @param {number} y  from the row's top
 * @param {number} [tol]
 */
export function itemAt(boxes, x, y, tol = 2) {
  /** @type {Box | null} */
  let best = null;
  let dist = Infinity;
  for (const b of boxes) {
    if (x < b.x0 - tol || x > b.x1 + tol) continue;
    // Distance to the box, vertically first: the lane under the pointer wins.
    const dy = y < b.y ? b.y - y : y >= b.y + b.h ? y - b.y - b.h + 1 : 0;
    const dx = x < b.x0 ? b.x0 - x : x > b.x1 ? x - b.x1 : 0;
    const d = dy * 1000 + dx;
    if (d < dist) {
      dist = d;
      best = b;
    }
  }
  return best;
}

/**
 * @typedef {object} Band  a counter's extent in one pixel column
 * @property {number} x
 * @property {number} min
 * @property {number} max
 */

/**
 * A counter track's bands: per pixel column the min and max its buckets
 * there hold (buckets are at most a pixel wide, so several may share a
 * column), and between buckets with samples the value held since the last
 * one, so peaks never vanish zoomed out and a flat stretch stays drawn.
 * @param {CounterItem[]} counters @param {bigint} start  bucket 0's start
 * @param {number} res @param {{start: bigint, nsPerPx: number, width: number}} vp
 * @param {number} [enter]  the value held when the frame's range begins, if known
 * @returns {{bands: Band[], lo: number, hi: number}}
 */
export function counterBands(counters, start, res, vp, enter) {
  /** @type {Band[]} */
  const bands = [];
  let lo = Infinity;
  let hi = -Infinity;
  const off = Number(start - vp.start);
  const W = Math.ceil(vp.width);
  /** @type {number | null} */
  let held = enter ?? null;
  let heldX = 0;
  if (held !== null) {
    lo = held;
    hi = held;
  }
  const fill = (/** @type {number} */ to) => {
    if (held === null) return;
    for (let x = Math.max(0, heldX); x < Math.min(W, to); x++) bands.push({ x, min: held, max: held });
  };
  for (const c of counters) {
    // The columns the bucket overlaps (a bucket may be up to two pixels wide).
    const x = Math.floor((off + c.bucket * res) / vp.nsPerPx);
    const xe = Math.max(x + 1, Math.ceil((off + (c.bucket + 1) * res) / vp.nsPerPx));
    if (x >= W) {
      fill(W);
      held = null;
      break;
    }
    lo = Math.min(lo, c.min);
    hi = Math.max(hi, c.max);
    if (xe <= 0) {
      held = c.last;
      heldX = 0;
      continue;
    }
    fill(x);
    for (let cx = Math.max(0, x); cx < Math.min(W, xe); cx++) {
      const b = bands[bands.length - 1];
      if (b && b.x === cx) {
        b.min = Math.min(b.min, c.min);
        b.max = Math.max(b.max, c.max);
      } else bands.push({ x: cx, min: c.min, max: c.max });
    }
    held = c.last;
    heldX = xe;
  }
  fill(W);
  if (lo > hi) {
    lo = 0;
    hi = 0;
  }
  return { bands, lo, hi };
}

/**
 * The y (from the row's top) of value v in a row rowH high whose scale
 * runs from lo (bottom, at least 0 when every value is positive) to hi
 * (top, 1 px below the row's top).
 * @param {number} v @param {number} lo @param {number} hi @param {number} rowH
 */
export function counterY(v, lo, hi, rowH) {
  const base = Math.min(0, lo);
  const top = hi > base ? hi : base + 1;
  const f = (v - base) / (top - base);
  return Math.round(rowH - 1 - f * (rowH - 2));
}

/**
 * The slice edge nearest t within tol ns, else t: the ruler snaps to the
 * starts and ends of the (whole, not summarized) slices of the frame.
 * @param {bigint} t @param {SpanFrame | null} f @param {number} tol ns
 * @param {number[]} [only]  the derived tracks to look at (all when absent)
 */
export function snapTime(t, f, tol, only) {
  if (!f) return t;
  let best = t;
  let dist = tol;
  for (const [id, st] of f.tracks) {
    if (only && !only.includes(id)) continue;
    for (const it of st.items) {
      if (it.summary) continue;
      for (const e of [it.start, it.end]) {
        const d = Math.abs(Number(e - t));
        if (d <= dist) {
          dist = d;
          best = e;
        }
      }
    }
  }
  return best;
}

/**
 * Whether a slice's name matches the search: the query's name term (its
 * first `&&`-separated term that is neither a field predicate nor a
 * code), case-insensitive substring, as render/query matches type names.
 * @param {string} query
 * @returns {((name: string) => boolean) | null}  null when the query has no name term
 */
export function sliceMatcher(query) {
  for (const raw of query.split('&&')) {
    const term = raw.trim();
    if (!term || term.startsWith('#') || /^id:/i.test(term) || /(!=|<=|>=|=|<|>|~)/.test(term)) continue;
    const want = term.toLowerCase();
    return (name) => name.toLowerCase().includes(want);
  }
  return null;
}

/**
 * The colour index of a name or a thread id (for colourings by hash).
 * @param {string} s
 */
export function nameHash(s) {
  let h = 5381;
  for (let i = 0; i < s.length; i++) h = ((h << 5) + h + s.charCodeAt(i)) >>> 0;
  return h % 1000;
}

/**
 * Which slices the event-type filter hides: an activity (named
 * `provider/task`, trace/clr.TaskName) when its Start event type
 * (`task` + "Start" or "/Start") is hidden, and a thread's syscall
 * slices when sys_enter is. Other derived tracks stay: a CPU track is
 * the scheduler's view, not one event type's.
 * @param {{provider: string, name: string}[]} types @param {Set<number>} hidden
 * @returns {((track: string, name: string) => boolean) | null}  null when nothing is hidden
 */
export function sliceFilter(types, hidden) {
  if (!hidden.size) return null;
  /** @type {Set<string>} */
  const tasks = new Set();
  let syscalls = false;
  for (const id of hidden) {
    const t = types[id];
    if (!t) continue;
    if (t.name === 'sys_enter') syscalls = true;
    const task = t.name.endsWith('/Start') ? t.name.slice(0, -6) : t.name.endsWith('Start') ? t.name.slice(0, -5) : '';
    if (task) tasks.add(t.provider ? `${t.provider}/${task}` : task);
  }
  if (!tasks.size && !syscalls) return null;
  return (track, name) => (syscalls && track === 'syscalls') || tasks.has(name);
}
