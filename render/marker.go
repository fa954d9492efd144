package render

import (
	"cmp"
	"slices"
	"sort"

	"viewer/trace"
)

// MarkerKind says what a [Marker] stands for. The set may grow.
type MarkerKind uint8

const (
	MarkerBad           MarkerKind = iota
	MarkerLost                     // events the trace says were lost (trace.Gap)
	MarkerSequencePoint            // NetTrace sequence point
	MarkerRound                    // perf.data finished round
	MarkerSection                  // start of a CPEL event section
	MarkerTruncated                // where reading stopped on a damaged trace
	nMarkerKinds
)

var markerKindNames = [...]string{"bad", "lost", "sequence point", "round", "section", "truncated"}

func (k MarkerKind) String() string {
	if int(k) < len(markerKindNames) {
		return markerKindNames[k]
	}
	return "MarkerKind(?)"
}

// Marker is a point of interest on the timeline that is not an event.
type Marker struct {
	Kind  MarkerKind
	Time  trace.Time
	Track trace.TrackID // the track a lost-event gap belongs to, else trace.NoTrack
	Off   int64         // file offset where reading can resume (structure markers) or where reading stopped (MarkerTruncated); 0 when unknown
	Count int64         // events lost (MarkerLost); else 0
}

var structureKinds = [...]MarkerKind{
	trace.MarkerSequencePoint: MarkerSequencePoint,
	trace.MarkerRound:         MarkerRound,
	trace.MarkerSection:       MarkerSection,
}

func (x *Index) addMarker(m Marker) { x.markers[m.Kind] = append(x.markers[m.Kind], m) }

// collectMarkers copies the reader's gaps and structure markers, sorted by
// time (readers append them in file order, which is nearly time order).
func (x *Index) collectMarkers() {
	for _, g := range x.meta.Lost {
		x.addMarker(Marker{Kind: MarkerLost, Time: g.Time, Track: g.Track, Count: g.Count})
	}
	for _, m := range x.meta.Markers {
		k := MarkerBad
		if int(m.Kind) < len(structureKinds) {
			k = structureKinds[m.Kind]
		}
		if k == MarkerBad {
			continue
		}
		x.addMarker(Marker{Kind: k, Time: m.Time, Track: trace.NoTrack, Off: m.Off})
	}
	for k := range x.markers {
		slices.SortStableFunc(x.markers[k], func(a, b Marker) int { return cmp.Compare(a.Time, b.Time) })
		x.markers[k] = slices.Clip(x.markers[k])
	}
}

// Markers returns the markers of one kind in time order. The slice is
// shared: do not modify it.
func (x *Index) Markers(k MarkerKind) []Marker {
	if int(k) >= len(x.markers) {
		return nil
	}
	return x.markers[k]
}

// Resume returns the last structure marker (sequence point, round or
// section) at or before t: the file offset from which a reader could
// decode the events around t. ok is false when the trace has none before t.
func (x *Index) Resume(t trace.Time) (m Marker, ok bool) {
	for _, k := range []MarkerKind{MarkerSequencePoint, MarkerRound, MarkerSection} {
		ms := x.markers[k]
		i := sort.Search(len(ms), func(i int) bool { return ms[i].Time > t }) - 1
		if i >= 0 && (!ok || ms[i].Time > m.Time) {
			m, ok = ms[i], true
		}
	}
	return m, ok
}
