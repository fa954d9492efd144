// Package render turns a trace into what a timeline draws: per-track time
// indexes built in one streaming pass, level-of-detail viewport slices,
// hit testing, lazily decoded details and search. Package render/wire
// encodes slices for the browser.
//
// # Design
//
// Memory is the budget that decides everything: an index must hold 100
// million events in a few GiB, so it keeps resident only what a viewport
// query touches, about 12 bytes per event:
//
//   - per track, the event times (8 bytes) and event types (2 bytes) in
//     time order, in fixed-size chunks so that growing never copies more
//     than a chunk;
//   - per track, a power-of-two pyramid over the event indexes: a node per
//     aligned block of 2^k events (k ≥ 3) holding a majority-vote summary
//     of the block's types (8 bytes per node, n/4 nodes: 2 bytes per event).
//
// Everything else an event carries (sequence number, CPU, stack, labels,
// payload location) is written once to a temporary spill file, grouped per
// track in runs, and read back with ReadAt when a hit test, details or a
// field search needs it; the payload itself stays in the trace file and
// the trace.Reader decodes it (trace.Reader.Details).
//
// A viewport query snaps its bucket width to a power of two nanoseconds
// (at least the ns per pixel, so there are at most Width+1 buckets) and
// walks each track's events bucket by bucket: a galloping search finds
// where the bucket ends, the difference of indexes is the exact count, and
// the pyramid gives the dominant type by merging O(log n) majority-vote
// summaries. Empty buckets cost nothing, so the work per track is
// O(min(buckets, events in range) · log n) whatever the number of events
// in range.
//
// An Index is immutable once Build returns; all its methods are safe for
// concurrent use. Queries cannot run while Build is still reading.
package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"viewer/trace"
)

// Options configure Build.
type Options struct {
	// SpillDir is the directory of the temporary spill file that holds
	// event records; "" means os.TempDir(). The file is unlinked at once
	// where the system allows, and closed by Index.Close.
	SpillDir string
	// Progress, when not nil, is called from Build's goroutine every
	// ProgressEvery events and once at the end.
	Progress func(Progress)
}

// ProgressEvery is how many events Build reads between Progress calls.
const ProgressEvery = 1 << 16

// Progress says how far Build has read.
type Progress struct {
	Events int64 // events indexed
	Bytes  int64 // furthest byte of the trace file reached (end of the furthest payload seen)
	Done   bool  // the last call: reading has finished
}

// MaxTrackEvents is the most events one track can hold; Build fails past it.
const MaxTrackEvents = 1<<31 - 1

// EventID names one event of an Index: its track and its position in the
// track's time order. It is stable for the life of the Index.
type EventID struct {
	Track trace.TrackID
	Index int32
}

// OtherType is the type reported in slices for events whose TypeID does
// not fit the index's 16-bit type column (TypeID ≥ 65535); their details
// carry the real type.
const OtherType trace.TypeID = -1

const typeEscape = 0xffff

// track is the resident index of one track.
type track struct {
	times column[trace.Time]
	types column[uint16]
	nodes []column[node] // nodes[k-minLevel] summarizes aligned blocks of 2^k events
	// cells[k] are the time cells of level cellBase+k (see cells.go).
	cells    []cellLevel
	cellBase uint8
	spill    spillTrack
}

// Index is the searchable, queryable index of one trace. It is built by
// [Build] and must be closed with [Index.Close].
type Index struct {
	r       trace.Reader
	meta    *trace.Meta
	tracks  []*track // by TrackID; nil for a track without events
	none    *track   // events with trace.NoTrack
	spill   *spill
	markers [nMarkerKinds][]Marker // per kind, in time order
	events  int64
	bytes   int64
	first   trace.Time
	last    trace.Time
	readErr error
	clamped int64
}

// Build reads r to its end and indexes every event. A damaged trace is not
// an error: Build keeps the events before the damage and records the
// reader's error (see [Index.ReadErr]) and a [MarkerTruncated] at the time
// of the last event read with the error's byte offset. Build fails on
// context cancellation, on spill-file I/O errors, and when a reader error
// is not a *trace.FormatError.
func Build(ctx context.Context, r trace.Reader, opts Options) (*Index, error) {
	sp, err := newSpill(opts.SpillDir)
	if err != nil {
		return nil, err
	}
	x := &Index{r: r, meta: r.Meta(), spill: sp, none: &track{}}
	if err := x.read(ctx, opts.Progress); err != nil {
		sp.close()
		return nil, err
	}
	return x, nil
}

func (x *Index) read(ctx context.Context, progress func(Progress)) error {
	var all []*track
	last := trace.Time(-1 << 63)
	for {
		if x.events&(ProgressEvery-1) == 0 && x.events > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil {
				progress(Progress{Events: x.events, Bytes: x.bytes})
			}
		}
		e, err := x.r.ReadEvent()
		if err != nil {
			if err != io.EOF {
				fe, ok := errors.AsType[*trace.FormatError](err)
				if !ok {
					return fmt.Errorf("render: reading event %d: %w", x.events, err)
				}
				x.readErr = err
				x.addMarker(Marker{Kind: MarkerTruncated, Time: last, Track: trace.NoTrack, Off: fe.Off})
			}
			break
		}
		if e.Time < last {
			// Readers promise time order; keep the index sorted if one
			// breaks it, and say so.
			e.Time = last
			x.clamped++
		}
		last = e.Time
		if x.events == 0 {
			x.first = e.Time
		}
		x.last = e.Time
		if end := e.Payload.Off + int64(e.Payload.Len); end > x.bytes {
			x.bytes = end
		}
		t := x.none
		if e.Track >= 0 && int(e.Track) < len(x.meta.Tracks) {
			for int(e.Track) >= len(x.tracks) {
				x.tracks = append(x.tracks, nil)
			}
			t = x.tracks[e.Track]
			if t == nil {
				t = &track{}
				x.tracks[e.Track] = t
				all = append(all, t)
			}
		} else {
			e.Track = trace.NoTrack
			if t.times.len() == 0 {
				all = append(all, t)
			}
		}
		if t.times.len() >= MaxTrackEvents {
			return fmt.Errorf("render: track %d has more than %d events", e.Track, MaxTrackEvents)
		}
		t.push(e.Time, e.Type)
		if x.spill.add(&t.spill, &e) {
			for _, t := range all {
				x.spill.flush(&t.spill)
			}
		}
		x.events++
	}
	if err := x.spill.finish(all); err != nil {
		return err
	}
	var sc cellScratch
	for _, t := range all {
		t.clip()
		t.buildCells(&sc)
	}
	x.collectMarkers()
	if progress != nil {
		progress(Progress{Events: x.events, Bytes: x.bytes, Done: true})
	}
	return nil
}

func (t *track) push(tm trace.Time, typ trace.TypeID) {
	ty := uint16(typeEscape)
	if typ >= 0 && typ < typeEscape {
		ty = uint16(typ)
	}
	t.times.push(tm)
	t.types.push(ty)
	n := t.types.len()
	if n&(1<<minLevel-1) == 0 {
		t.grow(n)
	}
}

func (t *track) clip() {
	t.times.clip()
	t.types.clip()
	for i := range t.nodes {
		t.nodes[i].clip()
	}
}

// Close releases the spill file. The Index must not be used afterwards.
func (x *Index) Close() error { return x.spill.close() }

// Meta returns the trace's tables (complete: Build read to the end).
func (x *Index) Meta() *trace.Meta { return x.meta }

// Events returns the number of events indexed.
func (x *Index) Events() int64 { return x.events }

// Span returns the times of the first and last events.
func (x *Index) Span() (first, last trace.Time) { return x.first, x.last }

// ReadErr returns the error that ended reading early, or nil when the
// trace was read to its end.
func (x *Index) ReadErr() error { return x.readErr }

// Clamped returns how many events came out of time order from the reader
// and were indexed at the previous event's time.
func (x *Index) Clamped() int64 { return x.clamped }

// Tracks returns the ids of the tracks that have events, in id order,
// with trace.NoTrack first when events without a track exist.
func (x *Index) Tracks() []trace.TrackID {
	var ids []trace.TrackID
	if x.none.times.len() > 0 {
		ids = append(ids, trace.NoTrack)
	}
	for i, t := range x.tracks {
		if t != nil {
			ids = append(ids, trace.TrackID(i))
		}
	}
	return ids
}

// TrackEvents returns the number of events on a track.
func (x *Index) TrackEvents(id trace.TrackID) int {
	if t := x.track(id); t != nil {
		return t.times.len()
	}
	return 0
}

func (x *Index) track(id trace.TrackID) *track {
	if id == trace.NoTrack {
		return x.none
	}
	if id < 0 || int(id) >= len(x.tracks) {
		return nil
	}
	return x.tracks[id]
}

// Bytes returns the memory the index holds resident: its columns,
// pyramids and run tables (not the spill file, not the reader's tables).
func (x *Index) Bytes() int64 {
	n := int64(cap(x.tracks)) * 8
	for _, t := range append(slices.Clip(x.tracks), x.none) {
		if t == nil {
			continue
		}
		n += 200 + t.times.bytes(8) + t.types.bytes(2) + int64(cap(t.spill.runs))*24 + int64(cap(t.nodes))*32
		for i := range t.nodes {
			n += t.nodes[i].bytes(8)
		}
		for _, c := range t.cells {
			n += int64(cap(c.firsts))*4 + int64(cap(c.types))*2 + 56
		}
	}
	for _, m := range x.markers {
		n += int64(cap(m)) * 40
	}
	return n
}
