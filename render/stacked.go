package render

import (
	"iter"
	"sort"

	"viewer/trace"
)

// The stacked-event lists: while indexing, every event that carries a
// stack is recorded in its track's stacked and stackedID columns (its
// index in the track and its stack id, 8 bytes, no pointers), so that
// aggregating stacks over a time range, tracks and event type (package
// render/stacks) reads neither the spill file nor the trace: the time and
// type come from the track's columns. A trace without stacks pays
// nothing, and a track whose events all carry stacks (a profile's
// samples, perf -g) only the 4-byte ids: while the stacked events are
// exactly the track's first ones, stacked stays empty and the k-th stacked
// event is the k-th event (stackedAt).

// addStacked records which of evs, the track's events from its event
// at on, carry a stack.
func (t *track) addStacked(at int32, evs []trace.Event) {
	// In runs of up to len(idx) events: their stacked events' indexes
	// and stacks gathered (without a branch per event: whether an event
	// has a stack is often in no pattern), then appended to the columns
	// a chunk's worth at a time.
	var idx [256]int32
	var ids [256]trace.StackID
	for len(evs) > 0 {
		m := min(len(evs), len(idx))
		n := 0
		for i := range evs[:m] {
			s := evs[i].Stack
			idx[n&255], ids[n&255] = at+int32(i), s
			n += int(uint32(s|-s) >> 31) // 1 when s != NoStack
		}
		t.appendStacked(idx[:n], ids[:n])
		at += int32(m)
		evs = evs[m:]
	}
}

// appendStacked records that the track's events idx (ascending, after
// those recorded) carry the stacks ids.
func (t *track) appendStacked(idx []int32, ids []trace.StackID) {
	if k := t.stackedID.len(); t.stacked.len() == 0 {
		// While the stacked events are the track's first ones, only
		// their stacks are listed (see above).
		q := 0
		for q < len(idx) && int(idx[q]) == k+q {
			q++
		}
		if q < len(idx) { // the dense run ends: list it
			for j := range k + q {
				t.stacked.push(int32(j))
			}
			t.stacked.appendAll(idx[q:])
		}
	} else {
		t.stacked.appendAll(idx)
	}
	t.stackedID.appendAll(ids)
}

// countStacked counts an event of type typ that carries a stack.
func (x *Index) countStacked(typ trace.TypeID) {
	k := 0
	if typ >= 0 && typ < typeEscape {
		k = int(typ) + 1
	}
	for k >= len(x.stackTypes) {
		x.stackTypes = append(x.stackTypes, 0)
	}
	x.stackTypes[k]++
}

// stackedAt returns the track index of t's k-th stacked event.
func (t *track) stackedAt(k int) int32 {
	if t.stacked.len() == 0 {
		return int32(k)
	}
	return t.stacked.at(k)
}

// StackedEvent is one event that carries a stack.
type StackedEvent struct {
	ID    EventID
	Time  trace.Time
	Type  trace.TypeID // OtherType when the id does not fit the index (see OtherType)
	Stack trace.StackID
}

// StackedType is an event type and how many of its events carry a stack.
type StackedType struct {
	Type   trace.TypeID // OtherType for types the index does not tell apart
	Events int64
}

// StackedTypes returns the event types whose events carry stacks, with
// their counts, in type order (OtherType first).
func (x *Index) StackedTypes() []StackedType {
	var out []StackedType
	for k, n := range x.stackTypes {
		if n > 0 {
			out = append(out, StackedType{Type: trace.TypeID(k - 1), Events: n})
		}
	}
	return out
}

// StackedEvents returns the events of a track that carry a stack, with
// times in [from, to), in track order.
func (x *Index) StackedEvents(id trace.TrackID, from, to trace.Time) iter.Seq[StackedEvent] {
	return func(yield func(StackedEvent) bool) {
		t := x.track(id)
		if t == nil || t.stackedID.len() == 0 || from >= to {
			return
		}
		first := int32(t.lowerBound(from, 0))
		n := t.stackedID.len()
		k := sort.Search(n, func(k int) bool { return t.stackedAt(k) >= first })
		for ; k < n; k++ {
			i := int(t.stackedAt(k))
			tm := t.times.at(i)
			if tm >= to {
				return
			}
			ty := trace.TypeID(t.types.at(i))
			if ty == typeEscape {
				ty = OtherType
			}
			if !yield(StackedEvent{ID: EventID{Track: id, Index: int32(i)}, Time: tm, Type: ty, Stack: t.stackedID.at(k)}) {
				return
			}
		}
	}
}

// PrevStacked returns the time of the last event of type typ carrying a
// stack on a track before the event with index before (in the track's
// order); ok is false when there is none.
func (x *Index) PrevStacked(id trace.TrackID, before int32, typ trace.TypeID) (tm trace.Time, ok bool) {
	t := x.track(id)
	if t == nil {
		return 0, false
	}
	k := sort.Search(t.stackedID.len(), func(k int) bool { return t.stackedAt(k) >= before })
	for k--; k >= 0; k-- {
		i := int(t.stackedAt(k))
		ty := trace.TypeID(t.types.at(i))
		if ty == typeEscape {
			ty = OtherType
		}
		if ty == typ {
			return t.times.at(i), true
		}
	}
	return 0, false
}

// Stack returns the addresses of a stack, leaf first (the reader's); nil
// for an Index opened from a file before Attach.
func (x *Index) Stack(id trace.StackID) []uint64 {
	r, err := x.reader()
	if err != nil {
		return nil
	}
	return r.Stack(id)
}

// Symbols returns the symbol source the index was built with (nil
// without one; for an Index opened from a file, Attach's).
func (x *Index) Symbols() SymbolSource { return x.symbolSource() }

// SpanSymbolizer is a SymbolSource that can also say over which times
// [from, to) around t its answer for an address stays the same, so that
// stack names can be cached per stack and reused exactly in time.
type SpanSymbolizer interface {
	SymbolizeSpan(pid int64, t trace.Time, addr uint64) (f trace.Frame, ok bool, from, to trace.Time)
}

// Payload decodes an event's payload (Details without the stack and
// labels), as the reader returns it.
func (x *Index) Payload(id EventID) (trace.Details, error) {
	e, err := x.Event(id)
	if err != nil {
		return trace.Details{}, err
	}
	return x.DetailsOf(e)
}

// DetailsOf decodes the payload of an event whose header is in hand (read
// with an EventReader), as Payload does by id.
func (x *Index) DetailsOf(e trace.Event) (trace.Details, error) {
	r, err := x.reader()
	if err != nil {
		return trace.Details{}, err
	}
	return r.Details(e)
}
