package nettrace

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/tracetest"
)

// readAll opens b and reads it to the end with the reader invariants
// checked on every event.
func readAll(t testing.TB, b []byte) (*Reader, tracetest.Result) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return r, tracetest.Check(t, r, true)
}

// compare checks the reader's events against a scenario's expectations.
func compare(t *testing.T, s *scenario, r *Reader, got []trace.Event) {
	t.Helper()
	m := r.Meta()
	if len(got) != len(s.want) {
		t.Fatalf("%d events, want %d", len(got), len(s.want))
	}
	for i, e := range got {
		w := s.want[i]
		tr := m.Tracks[e.Track]
		var d []string
		if e.Time != w.time {
			d = append(d, fmt.Sprintf("time %d, want %d", e.Time, w.time))
		}
		if tr.TID != w.thread.TID || tr.PID != w.thread.PID {
			d = append(d, fmt.Sprintf("track %+v, want thread %+v", tr, w.thread))
		}
		capTID := int64(-2)
		if e.Capture != trace.NoTrack {
			capTID = m.Tracks[e.Capture].TID
		}
		if capTID != w.capture {
			d = append(d, fmt.Sprintf("capture tid %d, want %d", capTID, w.capture))
		}
		if et := m.Types[e.Type]; !reflect.DeepEqual(et, w.typ) {
			d = append(d, fmt.Sprintf("type %+v, want %+v", et, w.typ))
		}
		if e.Seq != w.seq || e.CPU != w.cpu {
			d = append(d, fmt.Sprintf("seq %d cpu %d, want %d %d", e.Seq, e.CPU, w.seq, w.cpu))
		}
		if st := r.Stack(e.Stack); !reflect.DeepEqual(st, w.stack) && len(st)+len(w.stack) > 0 {
			d = append(d, fmt.Sprintf("stack %x, want %x", st, w.stack))
		}
		if l := r.Labels(e.Labels); !reflect.DeepEqual(l, w.labels) && len(l)+len(w.labels) > 0 {
			d = append(d, fmt.Sprintf("labels %v, want %v", l, w.labels))
		}
		det, err := r.Details(e)
		if err != nil {
			d = append(d, err.Error())
		}
		if !bytes.Equal(det.Raw, w.payload) {
			d = append(d, fmt.Sprintf("payload %x, want %x", det.Raw, w.payload))
		}
		if w.fields != nil && !reflect.DeepEqual(det.Fields, w.fields) {
			d = append(d, fmt.Sprintf("fields\n %s\nwant\n %s", export.AppendFields(nil, det.Fields), export.AppendFields(nil, w.fields)))
		}
		if len(d) > 0 {
			t.Errorf("event %d: %v", i, d)
		}
	}
}

// TestRoundTrip writes a v6 file covering every feature of the writer and
// reads back the same events, types, stacks, labels, payloads and fields.
func TestRoundTrip(t *testing.T) {
	s, b := allFeatures(t)
	r, res := readAll(t, b)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	compare(t, s, r, res.Events)
	m := r.Meta()
	var lost int64
	for _, g := range m.Lost {
		lost += g.Count
	}
	if lost != s.lost {
		t.Errorf("lost %d (%v), want %d", lost, m.Lost, s.lost)
	}
	if m.Format != "nettrace" || m.Version != 6 || m.PointerSize != 8 || m.Clock != s.clock {
		t.Errorf("meta %s v%d ptr %d clock %+v, want clock %+v", m.Format, m.Version, m.PointerSize, m.Clock, s.clock)
	}
	if len(m.Markers) != 2 || m.Markers[0].Time != s.clock.Time(9000) {
		t.Errorf("markers %+v", m.Markers)
	}
	if len(m.Notices) != 1 {
		t.Errorf("notices %q, want one for the unknown block", m.Notices)
	}
	var names []string
	for _, tr := range m.Tracks {
		names = append(names, tr.Name)
	}
	if want := []string{"main again", "Thread 1001", "sampler", "reborn"}; !reflect.DeepEqual(names, want) {
		t.Errorf("track names %q, want %q", names, want)
	}
	if got := len(r.stacks) - 1; got != 3 {
		t.Errorf("%d distinct stacks, want 3 (one repeated in the file)", got)
	}
}

// TestDetailsConcurrent calls Details from several goroutines once reading
// has finished (run with -race) and expects the same results as serially.
func TestDetailsConcurrent(t *testing.T) {
	_, b := allFeatures(t)
	r, res := readAll(t, b)
	tracetest.CheckDetailsConcurrent(t, r, res.Events)
}
