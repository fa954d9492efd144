// @ts-check
// The data-source contract the timeline draws from. Two implementations:
// fake.js (an in-browser generated trace, for development and tests of the
// renderer and navigation) and conn.js (the server over a websocket). Every
// time is a BigInt in ns for absolute values, or a Number ns offset from a
// slice's base for bulk data, as in the wire format.

'use strict';

/**
 * @typedef {object} Track
 * @property {number} id    TrackID on the server
 * @property {string} name  display name
 * @property {string} kind  "thread", "cpu", "process", "track"
 * @property {number} [events] events on the track, when the source knows
 * @property {string[]} [names] earlier names, oldest first (a renamed track)
 * @property {number} [pid]   -1 or absent when not known
 * @property {number} [tid]
 * @property {number} [parent] the track it belongs under (a thread's process track), -1 for none
 * @property {number} [trace]  in a combined view, the trace it belongs to (its position in Meta.traces)
 *
 * @typedef {object} EventType
 * @property {number} id       TypeID
 * @property {string} provider empty when the format has none
 * @property {string} name     may be empty
 * @property {number} code     the format's numeric id or code
 *
 * @typedef {object} Gap
 * @property {bigint} time
 * @property {number} track   -1 when the loss is trace-wide
 * @property {number} count
 *
 * @typedef {object} Meta
 * @property {string} name         file name
 * @property {string} format
 * @property {bigint} first        first event time
 * @property {bigint} last         last event time
 * @property {number} events
 * @property {Track[]} tracks
 * @property {EventType[]} types
 * @property {Gap[]} lost
 * @property {bigint | null} truncatedAt time of the last event before damage, or null
 * @property {string} error       why reading stopped early, or ""
 * @property {string} [wall]      RFC 3339 wall-clock time at time 0, when the trace knows it
 * @property {string[]} [traces]  in a combined view, its traces' names (the group of each; together.js)
 *
 * @typedef {object} TrackSlice
 * Individual events (drawn as glyphs):
 * @property {number} n
 * @property {Float64Array} off   ns from the frame's base
 * @property {Int32Array} type
 * @property {Uint32Array} first  index of the event in its track (with the track id, its event id)
 * Aggregated pixel buckets (drawn as density):
 * @property {number} an
 * @property {Float64Array} aoff  bucket start, ns from the frame's base
 * @property {Float64Array} adur  bucket length in ns
 * @property {Uint32Array} count
 * @property {Int32Array} atype   dominant type
 * @property {Uint32Array} afirst index in the track of the bucket's first event
 *
 * @typedef {object} Frame
 * @property {number} seq
 * @property {bigint} base        the request's start
 * @property {bigint} end         the request's end
 * @property {number} nsPerPx     the request's resolution
 * @property {Map<number, TrackSlice>} tracks
 *
 * @typedef {object} ViewRequest
 * @property {bigint} start
 * @property {bigint} end
 * @property {number} width       pixel buckets
 * @property {number[]} tracks    TrackIDs to answer for
 * @property {number[]} hidden    TypeIDs to leave out
 * @property {'event' | 'summary'} [mode]
 * @property {boolean} [chase]    a live trace: the server pushes this view again, moved to the newest event, as the trace grows (PROTOCOL.md §live)
 *
 * @typedef {object} Field
 * @property {string} name
 * @property {unknown} value   string, number, boolean, Field[] (struct) or unknown[] (array)
 *
 * @typedef {object} Details
 * @property {string} ref    event id "TRACK:INDEX"
 * @property {bigint} time
 * @property {number} track
 * @property {number} type
 * @property {string} label
 * @property {Field[]} fields
 * @property {string[]} stack
 * @property {{key: string, value: string}[]} labels
 * @property {Uint8Array} raw
 *
 * @typedef {object} Hit
 * @property {string} ref    event id "TRACK:INDEX"
 * @property {bigint} time
 * @property {number} track
 *
 * @typedef {object} SearchResult
 * @property {Hit[]} hits     in time order, capped by the source
 * @property {number} total   matches found
 * @property {boolean} [more] the source stopped before the last match
 * @property {string} [notice] why the list may be incomplete (the server cut the search off at its time budget)
 * @property {import('./overview.js').HitBins} [bins] hit counts per time bin of the whole trace, when asked for
 *
 * @typedef {object} StackEvent  an event type that carries stacks (GET /stacks/events)
 * @property {string} event     what the stacks endpoint's `event` takes
 * @property {string} provider
 * @property {number} type      its type id (-1: the types past 65534, no name)
 * @property {number} count     events of it that carry stacks
 *
 * @typedef {object} StackEvents
 * @property {StackEvent[]} events  in type-id order
 * @property {string} default       the event the stacks endpoint takes without `event`
 *
 * @typedef {object} StackQuery  the stacks endpoint's parameters (PROTOCOL.md)
 * @property {bigint | null} from   null with to: the whole trace
 * @property {bigint | null} to
 * @property {number[] | null} tracks  null: all tracks
 * @property {string} event
 * @property {string} weight   "count", "time" or "field:NAME"
 * @property {string} view     "top", "bottom", "callers:NAME" or "callees:NAME"
 * @property {string} tf       transforms (stacktf.js)
 * @property {number} width    px of the flame graph (the server prunes narrower nodes)
 *
 * @typedef {object} SpanQuery  the spans endpoint's parameters
 * @property {bigint} from
 * @property {bigint} to
 * @property {number} width
 * @property {number[] | null} tracks  derived track ids; null: all
 *
 * @typedef {object} SliceDetails  one derived slice (GET /spans/{track}/{slice})
 * @property {number} track
 * @property {number} slice
 * @property {string} name
 * @property {bigint} start
 * @property {bigint} end
 * @property {number} duration  ns
 * @property {number} depth
 * @property {string} open      "", "start", "end" or "both"
 * @property {number} thread    trace track, -1 for none
 * @property {{name: string, value: string}[]} args  both ends' fields, the stop's prefixed "end."
 *
 * @typedef {object} Source
 * @property {(onProgress: (p: import('./progress.js').Progress) => void) => Promise<Meta>} open
 *           resolves once the trace is indexed
 * @property {(req: ViewRequest) => Promise<Frame>} view
 * @property {(ref: string) => Promise<Details>} details
 * @property {(query: string) => Promise<SearchResult>} search
 * @property {(query: string, bins: number) => Promise<import('./overview.js').HitBins>} [searchBins]
 *           the query's hits over the whole trace, counted in `bins` equal time bins
 * @property {(query: string, after: string, dir: number) => Promise<Hit | null>} [searchFrom]
 *           the hit after (dir 1) or before (dir -1) an event, for lists the source cut short
 * @property {() => Promise<StackEvents>} [stackEvents]  event types carrying stacks
 * @property {(q: StackQuery) => Promise<import('./stacktree.js').StackJSON>} [stacks]  the aggregated tree
 * @property {(q: StackQuery, node: number) => Promise<SearchResult>} [stackSamples]
 *           the events under a node of the tree the same query gave
 * @property {(q: StackQuery) => string} [stacksExportURL]
 *           where the query's stacks download as a speedscope file
 * @property {(q: SpanQuery) => Promise<import('./spans.js').SpanFrame>} [spans]  derived tracks over a range
 * @property {(track: number, slice: number) => Promise<SliceDetails>} [slice]  one derived slice
 * @property {(ref: string) => Promise<Hit[]>} [flows]  the events related to one by activity ids, in time order
 * @property {(from: bigint, to: bigint) => Promise<Hit[][]>} [flowsIn]  chains of related events in a range
 * @property {() => Promise<Meta>} [loadMeta]  the metadata again (a live trace's grows)
 * @property {() => Promise<boolean>} [stop]  asks a live trace's source to end; false when it is not live
 * @property {(m: import('./livestate.js').LiveMsg) => void} [onLive]  set by the page: called with each `live` message
 * @property {(f: Frame) => void} [onChase]  set by the page: called with each frame pushed for a chase request
 * @property {import('./livestate.js').LiveMsg | null} [lastLive]  the newest `live` message
 */

/**
 * The stacks endpoints' query string (without "?") for a query, and a
 * node and limit for the samples endpoint.
 * @param {StackQuery} q @param {number} [node] @param {number} [limit]
 */
export function stackParams(q, node, limit) {
  const p = new URLSearchParams();
  if (q.from !== null && q.to !== null) {
    p.set('from', String(q.from));
    p.set('to', String(q.to));
  }
  if (q.tracks) p.set('tracks', q.tracks.join(','));
  if (q.event) p.set('event', q.event);
  p.set('weight', q.weight || 'count');
  p.set('view', q.view);
  if (q.tf) p.set('tf', q.tf);
  p.set('width', String(Math.max(1, Math.round(q.width))));
  if (node !== undefined) p.set('node', String(node));
  if (limit !== undefined) p.set('limit', String(limit));
  return p.toString();
}

/** The event id of a track's i-th event (PROTOCOL.md: "TRACK:INDEX"). @param {number} track @param {number} i */
export function eventID(track, i) {
  return `${track}:${i}`;
}

/** An empty slice. @returns {TrackSlice} */
export function emptySlice() {
  return {
    n: 0, off: new Float64Array(0), type: new Int32Array(0), first: new Uint32Array(0),
    an: 0, aoff: new Float64Array(0), adur: new Float64Array(0), count: new Uint32Array(0),
    atype: new Int32Array(0), afirst: new Uint32Array(0),
  };
}

/**
 * LatestWins serializes requests: one in flight, only the newest pending kept
 * (viewers.md §4: cancelling the running one starves the view).
 * @template Q, R
 */
export class LatestWins {
  /**
   * @param {(q: Q) => Promise<R>} run
   * @param {(r: R, q: Q) => void} done
   * @param {(e: unknown) => void} fail
   */
  constructor(run, done, fail) {
    this.run = run;
    this.done = done;
    this.fail = fail;
    this.busy = false;
    /** @type {Q | undefined} */
    this.pending = undefined;
  }

  /** @param {Q} q */
  push(q) {
    this.pending = q;
    if (!this.busy) this.next();
  }

  async next() {
    while (this.pending !== undefined) {
      const q = this.pending;
      this.pending = undefined;
      this.busy = true;
      try {
        this.done(await this.run(q), q);
      } catch (e) {
        this.fail(e);
      }
      this.busy = false;
    }
  }
}
