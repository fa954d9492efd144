// @ts-check
// Viewport: the one place where time and pixels meet (it mirrors
// render.Viewport on the server). Absolute times are BigInt nanoseconds,
// because traces counted from boot or the Unix epoch pass 2^53 ns; everything
// on screen is a Number offset from the viewport's start, which stays exact
// for any window narrower than ~104 days.

'use strict';

/** Smallest ns per pixel we zoom to (20 px per nanosecond). */
export const MIN_NS_PER_PX = 0.05;

/** Tick steps tried, in ns, as mantissas of powers of ten. */
const NICE = [1, 2, 5];

/** Time units, largest first, with their size in ns. */
export const UNITS = /** @type {const} */ ([
  ['s', 1_000_000_000n],
  ['ms', 1_000_000n],
  ['µs', 1_000n],
  ['ns', 1n],
]);

export class Viewport {
  /**
   * @param {bigint} start first visible ns (left edge of the plot)
   * @param {number} nsPerPx nanoseconds per CSS pixel
   * @param {number} width plot width in CSS pixels
   * @param {bigint} [spanNs] the exact span, when it is known as a whole
   *        number (a range from a URL): nsPerPx × width in floating point
   *        can land just above it (7 / 100 × 100 = 7.000000000000001), and
   *        rounding that up moved a shared URL's end by 1 ns
   */
  constructor(start, nsPerPx, width, spanNs) {
    this.start = start;
    this.nsPerPx = Math.max(MIN_NS_PER_PX, nsPerPx);
    this.width = Math.max(1, width);
    /** @type {bigint} */
    this.spanNs = spanNs !== undefined && nsPerPx === this.nsPerPx && spanNs > 0n ? spanNs : BigInt(Math.ceil(this.nsPerPx * this.width));
  }

  /** End of the visible range (exclusive), in ns. */
  get end() {
    return this.start + this.spanNs;
  }

  /** Duration of the visible range in ns, as a Number. */
  get span() {
    return this.nsPerPx * this.width;
  }

  /** @param {bigint} start @param {bigint} end @param {number} width */
  static fromRange(start, end, width) {
    const span = end > start ? end - start : 1n;
    return new Viewport(start, Number(span) / Math.max(1, width), width, span);
  }

  /** x in CSS px of absolute time t. @param {bigint} t */
  x(t) {
    return Number(t - this.start) / this.nsPerPx;
  }

  /** x of a time given as an ns offset from `base`. @param {bigint} base @param {number} off */
  xOff(base, off) {
    return (Number(base - this.start) + off) / this.nsPerPx;
  }

  /** Absolute time at x (rounded to whole ns). @param {number} x */
  time(x) {
    return this.start + BigInt(Math.round(x * this.nsPerPx));
  }

  /**
   * Zoom by factor (< 1 zooms in) keeping the time under x fixed.
   * @param {number} factor @param {number} x
   */
  zoom(factor, x) {
    const t = this.time(x);
    const nsPerPx = Math.max(MIN_NS_PER_PX, this.nsPerPx * factor);
    return new Viewport(t - BigInt(Math.round(x * nsPerPx)), nsPerPx, this.width);
  }

  /** Pan by dx pixels (positive moves the view right, to later times). @param {number} dx */
  pan(dx) {
    return new Viewport(this.start + BigInt(Math.round(dx * this.nsPerPx)), this.nsPerPx, this.width, this.spanNs);
  }

  /** Same range at a new width. @param {number} width */
  resize(width) {
    return Viewport.fromRange(this.start, this.end, width);
  }

  /**
   * Keeps the view within [lo - margin, hi + margin] where margin is 1/8 of
   * the trace, zooming out no further than the whole of it (g2's 9/8 rule).
   * @param {bigint} lo @param {bigint} hi
   */
  clamp(lo, hi) {
    const total = Number(hi - lo) || 1;
    const margin = BigInt(Math.ceil(total / 8));
    const maxSpan = total + 2 * Number(margin);
    let v = /** @type {Viewport} */ (this);
    if (v.span > maxSpan) v = new Viewport(v.start, maxSpan / v.width, v.width);
    const min = lo - margin;
    const max = hi + margin - v.spanNs;
    let s = v.start;
    if (s > max) s = max;
    if (s < min) s = min;
    return s === v.start ? v : new Viewport(s, v.nsPerPx, v.width, v.spanNs);
  }

  /**
   * Axis ticks: at least minPx apart, on multiples of 1, 2 or 5 × 10^k ns
   * counted from origin (the time the axis labels count from).
   * @param {number} minPx @param {bigint} [origin]
   * @returns {{step: bigint, ticks: bigint[]}}
   */
  ticks(minPx, origin = 0n) {
    const want = this.nsPerPx * minPx;
    let step = 1n;
    outer: for (let p = 1n; ; p *= 10n) {
      for (const m of NICE) {
        const s = BigInt(m) * p;
        if (Number(s) >= want) {
          step = s;
          break outer;
        }
      }
    }
    const rel = this.start - origin;
    const first = origin + floorDiv(rel, step) * step + (mod(rel, step) === 0n ? 0n : step);
    const ticks = [];
    for (let t = first; t <= this.end; t += step) ticks.push(t);
    return { step, ticks };
  }
}

/** @param {bigint} a @param {bigint} b */
function mod(a, b) {
  const r = a % b;
  return r < 0n ? r + b : r;
}

/** @param {bigint} a @param {bigint} b */
function floorDiv(a, b) {
  return (a - mod(a, b)) / b;
}

/**
 * Unit used to label absolute times: the largest unit not above the
 * magnitude of the largest time shown (g2's rule), so labels read as "1.25 s".
 * @param {bigint} maxAbs
 */
export function unitFor(maxAbs) {
  for (const u of UNITS) if (maxAbs >= u[1]) return u;
  return UNITS[UNITS.length - 1];
}

/**
 * Formats absolute time t in the given unit with exactly enough decimals to
 * resolve step, so neighbouring ticks never print the same text.
 * @param {bigint} t @param {readonly [string, bigint]} unit @param {bigint} step
 */
export function formatTime(t, unit, step) {
  const [name, size] = unit;
  let decimals = 0;
  for (let s = size; s > 1n && step % s !== 0n; s /= 10n) decimals++;
  const neg = t < 0n;
  const a = neg ? -t : t;
  const int = a / size;
  let text = int.toString();
  if (decimals > 0) {
    const frac = (a % size).toString().padStart(size.toString().length - 1, '0');
    text += '.' + frac.slice(0, decimals);
  }
  return (neg ? '-' : '') + text + ' ' + name;
}

/**
 * Formats a duration in ns (a Number) in automatic units with about four
 * significant digits, for the ruler and details.
 * @param {number} ns
 */
export function formatDuration(ns) {
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e11 ? 1 : 4) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' µs';
  return ns.toFixed(a < 10 && ns !== Math.round(ns) ? 2 : 0) + ' ns';
}

/**
 * Parses a decimal ns string from a URL; undefined when malformed.
 * @param {string | null} s
 */
export function parseNs(s) {
  if (s == null || !/^-?\d{1,20}$/.test(s)) return undefined;
  return BigInt(s);
}
