package clr

import (
	"io"
	"testing"

	"viewer/trace"
)

// script is a trace.Reader over a list of events whose details are given.
type script struct {
	meta    trace.Meta
	events  []trace.Event
	details map[int64]trace.Details // by Payload.Off
	n       int
}

func (s *script) Meta() *trace.Meta { return &s.meta }
func (s *script) ReadEvent() (trace.Event, error) {
	if s.n == len(s.events) {
		return trace.Event{}, io.EOF
	}
	s.n++
	return s.events[s.n-1], nil
}
func (s *script) Stack(trace.StackID) []uint64        { return nil }
func (s *script) Labels(trace.LabelsID) []trace.Label { return nil }
func (s *script) Details(e trace.Event) (trace.Details, error) {
	return s.details[e.Payload.Off], nil
}

// add appends an event of the named runtime event on thread track at t.
func (s *script) add(name string, track trace.TrackID, t trace.Time, fields ...trace.Field) {
	ty := -1
	for i, et := range s.meta.Types {
		if et.Name == name {
			ty = i
		}
	}
	if ty < 0 {
		ty = len(s.meta.Types)
		s.meta.Types = append(s.meta.Types, trace.EventType{Provider: Runtime, Name: name})
	}
	off := int64(len(s.events) + 1)
	s.events = append(s.events, trace.Event{Time: t, Track: track, Type: trace.TypeID(ty), Payload: trace.Loc{Off: off}})
	s.details[off] = trace.Details{Fields: fields}
}

func u(name string, v uint64) trace.Field { return trace.Field{Name: name, Value: trace.UintValue(v)} }
func str(name, v string) trace.Field      { return trace.Field{Name: name, Value: trace.StringValue(v)} }

// TestGCs follows two GCs of one process through suspensions of two
// threads, a GC/Stop, heap stats and allocation ticks, and a GC of
// another process that never resumes.
func TestGCs(t *testing.T) {
	s := &script{details: map[int64]trace.Details{}}
	s.meta.Tracks = []trace.Track{{Name: "a", PID: 1, TID: 10}, {Name: "b", PID: 1, TID: 11}, {Name: "c", PID: 2, TID: 20}}
	s.add("GC/SuspendEEStart", 0, 100, str("Reason", "SuspendOther"))
	s.add("GC/SuspendEEStart", 1, 110, str("Reason", "SuspendForGC"))
	s.add("GC/RestartEEStop", 0, 120) // ends thread a's suspension, not b's
	s.add("GC/Start", 1, 130, u("Count", 7), u("Depth", 1), str("Reason", "AllocSmall"), str("Type", "NonConcurrentGC"))
	s.add("GC/Stop", 1, 180, u("Count", 7), u("Depth", 1))
	s.add("GC/HeapStats", 1, 181, u("GenerationSize0", 10), u("GenerationSize1", 20), u("GenerationSize4", 5), u("TotalPromotedSize0", 3), u("TotalPromotedSize1", 4))
	s.add("GC/RestartEEStop", 1, 190)
	s.add("GC/AllocationTick", 0, 200, u("AllocationAmount", 100))
	s.add("GC/AllocationTick", 0, 210, u("AllocationAmount", 100), u("AllocationAmount64", 1000))
	s.add("GC/SuspendEEStart", 0, 300, str("Reason", "SuspendForGC"))
	s.add("GC/Start", 0, 310, u("Count", 8), u("Depth", 0), str("Reason", "Induced"))
	s.add("GC/Start", 2, 320, u("Count", 1), u("Depth", 2), str("Reason", "Induced")) // process 2: never suspended
	s.add("GC/HeapStats", 0, 330, u("GenerationSize0", 50))
	s.add("GC/RestartEEStop", 0, 340)
	g := NewGCs()
	for {
		e, err := s.ReadEvent()
		if err != nil {
			break
		}
		g.Observe(s, e)
	}
	rows := g.Rows()
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	want := []GC{
		{PID: 1, Track: 1, Number: 7, Generation: 1, Reason: "AllocSmall", Type: "NonConcurrentGC", Start: 130, End: 180, HasEnd: true,
			PauseStart: 110, PauseEnd: 190, HasPause: true, HeapBefore: 0, HeapAfter: 35, Promoted: 7, HasHeap: true},
		{PID: 1, Track: 0, Number: 8, Generation: 0, Reason: "Induced", Start: 310,
			PauseStart: 300, PauseEnd: 340, HasPause: true, HeapBefore: 35 + 100 + 1000, HeapAfter: 50, HasHeap: true},
		{PID: 2, Track: 2, Number: 1, Generation: 2, Reason: "Induced", Start: 320},
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("GC %d:\n got %+v\nwant %+v", i, rows[i], want[i])
		}
	}
	if p := rows[0].Pause(); p != 80 {
		t.Errorf("pause %v", p)
	}
	if d := rows[0].Duration(); d != 50 {
		t.Errorf("duration %v", d)
	}
}

// TestExceptions lists exceptions and counts them by type.
func TestExceptions(t *testing.T) {
	s := &script{details: map[int64]trace.Details{}}
	s.meta.Tracks = []trace.Track{{Name: "a", PID: 1, TID: 10}}
	for i, ty := range []string{"System.IO.IOException", "System.Exception", "System.IO.IOException"} {
		s.add("Exception/Start", 0, trace.Time(100*i), str("ExceptionType", ty), str("ExceptionMessage", "m"+ty))
	}
	s.add("Exception/Stop", 0, 500)
	x := NewExceptions()
	for {
		e, err := s.ReadEvent()
		if err != nil {
			break
		}
		x.Observe(s, e)
	}
	rows := x.Rows()
	if len(rows) != 3 || rows[1].Type != "System.Exception" || rows[1].Message != "mSystem.Exception" || rows[2].Time != 200 || rows[0].TID != 10 {
		t.Errorf("rows %+v", rows)
	}
	g := x.ByType()
	if len(g) != 2 || g[0] != (ExceptionGroup{"System.IO.IOException", 2}) || g[1] != (ExceptionGroup{"System.Exception", 1}) {
		t.Errorf("by type %+v", g)
	}
}
