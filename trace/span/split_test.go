package span

import (
	"math/rand/v2"
	"strings"
	"testing"

	"viewer/trace"
)

// splitAdder is adder as a Split deriver of the events of types 0 and 1:
// Note keeps the events, the function Take returns adds their slices.
type splitAdder struct {
	adder
	notes []trace.Event
	panic int // a note of this time panics when derived from
}

func (a *splitAdder) Wants(_ trace.Reader, t trace.TypeID) bool { return t == 0 || t == 1 }
func (a *splitAdder) Note(_ trace.Reader, e trace.Event)        { a.notes = append(a.notes, e) }
func (a *splitAdder) Take() func(*Builder) {
	notes := a.notes
	a.notes = nil
	return func(b *Builder) {
		for _, e := range notes {
			if a.panic > 0 && e.Time == trace.Time(a.panic) {
				panic("derive failed")
			}
			a.adder.Observe(nil, e, b)
		}
	}
}

func (a *splitAdder) Observe(r trace.Reader, e trace.Event, b *Builder) {
	a.Note(r, e)
	a.Take()(b)
}

// batchAdder is splitAdder noting runs of events (BatchSplit).
type batchAdder struct{ *splitAdder }

func (a batchAdder) NoteEvents(r trace.Reader, evs []trace.Event) {
	for _, e := range evs {
		if a.Wants(r, e.Type) {
			a.Note(r, e)
		}
	}
}

// splitEvents returns n events of types 0 to 2, one in plainEvery of
// type 2 on average (none for 0), on the reader's track 0 or none; with
// damaged, some are out of time order or on a track the reader does not
// have, which a Driver shows changed.
func splitEvents(n, plainEvery int, damaged bool) []trace.Event {
	rng := rand.New(rand.NewPCG(5, 6))
	evs := make([]trace.Event, n)
	for i := range evs {
		typ := trace.TypeID(rng.IntN(2))
		if plainEvery > 0 && rng.IntN(plainEvery) == 0 {
			typ = 2
		}
		e := trace.Event{Time: trace.Time(10 * i), Type: typ, Track: trace.TrackID(rng.IntN(2)) - 1}
		if damaged && rng.IntN(50) == 0 {
			e.Time -= trace.Time(rng.IntN(100))
		}
		if damaged && rng.IntN(70) == 0 {
			e.Track = 5
		}
		evs[i] = e
	}
	return evs
}

// TestDriverSplit: whether a Driver is shown events one by one (a Split
// deriver derives at once) or in batches (it derives on another
// goroutine, and on this one before an event a plain deriver wants), it
// finishes with the same Set, in the same order of tracks and names. The
// plain deriver (adder, through Only) shares the Split one's tracks, so
// any reordering of their Builder calls shows.
//
// A BatchSplit deriver, shown runs of events, derives the same again,
// also from events the Driver shows changed (out of time order, on a
// track the reader does not have).
func TestDriverSplit(t *testing.T) {
	r := &noReader{meta: trace.Meta{Types: make([]trace.EventType, 3), Tracks: make([]trace.Track, 1)}}
	// Type 2 (the plain deriver's) absent, rare (a few per batch) or
	// common (so that runs the Driver checks at a time often begin with
	// one).
	for _, c := range []struct {
		plainEvery int
		damaged    bool
	}{{0, false}, {300, false}, {0, true}, {300, true}, {3, false}} {
		evs := splitEvents(20000, c.plainEvery, c.damaged)
		derive := func(batched, runs bool) string {
			var sd Deriver = &splitAdder{adder: adder{rand.New(rand.NewPCG(1, 2))}}
			if runs {
				sd = batchAdder{sd.(*splitAdder)}
			}
			d := Join(sd, Only(func(t trace.TypeID) bool { return t == 2 }, &adder{rand.New(rand.NewPCG(3, 4))}))
			v := NewDriver(r, d)
			if (v.batch != nil) != runs {
				t.Fatalf("a Driver of BatchSplit derivers %v notes runs: %v", runs, v.batch != nil)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			for rest := evs; len(rest) > 0; {
				k := 1
				if batched {
					k = min(len(rest), 1+rng.IntN(5000))
				}
				v.ObserveEvents(rest[:k])
				rest = rest[k:]
				if batched && rng.IntN(10) == 0 {
					v.Snapshot()
				}
			}
			return dump(v.Finish())
		}
		one := derive(false, false)
		if batched := derive(true, false); one != batched {
			t.Errorf("%+v: batches derive another Set than single events", c)
		}
		if runs := derive(true, true); one != runs {
			t.Errorf("%+v: runs noted by a BatchSplit derive another Set than single events", c)
		}
		if runs := derive(false, true); one != runs {
			t.Errorf("%+v: single events noted by a BatchSplit derive another Set", c)
		}
	}
}

// TestDriverSplitPanic: a Split deriver's panic on the other goroutine
// is raised by the Driver's next call, on the caller's.
func TestDriverSplitPanic(t *testing.T) {
	r := &noReader{meta: trace.Meta{Types: make([]trace.EventType, 3)}}
	evs := splitEvents(100, 0, false)
	for _, next := range []string{"observe", "finish", "batches"} {
		v := NewDriver(r, &splitAdder{adder: adder{rand.New(rand.NewPCG(1, 2))}, panic: 500})
		v.ObserveEvents(evs[:60]) // returns: the panic is on the other goroutine
		got := func() (p any) {
			defer func() { p = recover() }()
			if next == "batches" {
				// Derivations queued behind the failed one do not run;
				// a later call raises its panic.
				v.ObserveEvents(evs[60:70])
				v.ObserveEvents(evs[70:80])
				v.Finish()
				return nil
			}
			v.Snapshot() // waits, keeps the panic for later
			if next == "observe" {
				v.ObserveEvents(evs[60:])
			} else {
				v.Finish()
			}
			return nil
		}()
		if s, _ := got.(string); !strings.Contains(s, "derive failed") {
			t.Errorf("%s after the panic: recovered %v", next, got)
		}
	}
}

// TestOnly: a deriver behind Only sees the events of its types alone,
// joined or driven alone.
func TestOnly(t *testing.T) {
	r := &noReader{meta: trace.Meta{Types: make([]trace.EventType, 3)}}
	evs := splitEvents(3000, 300, false)
	want := 0
	for _, e := range evs {
		if e.Type == 1 {
			want++
		}
	}
	for _, join := range []bool{false, true} {
		c, all := &counting{}, &counting{}
		var d Deriver = Only(func(t trace.TypeID) bool { return t == 1 }, c)
		if join {
			d = Join(d, all)
		}
		v := NewDriver(r, d)
		v.ObserveEvents(evs)
		v.Finish()
		if c.seen != want || c.finished != 1 {
			t.Errorf("joined %v: saw %d events and %d Finish, want %d and 1", join, c.seen, c.finished, want)
		}
		if join && all.seen != len(evs) {
			t.Errorf("the other deriver saw %d events of %d", all.seen, len(evs))
		}
	}
}
