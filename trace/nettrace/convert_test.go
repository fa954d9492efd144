package nettrace

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/tracetest"
)

// toV6 rewrites what a reader gives for a whole file as a v6 file with the
// writer: one metadata row per event type, one thread row per track, the
// events in blocks of up to 1000 with their stacks and label lists, ticks
// in nanoseconds.
func toV6(t *testing.T, r *Reader, evs []trace.Event) []byte {
	m := r.Meta()
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{Wall: m.Clock.Wall, TicksPerSecond: 1e9, PointerSize: m.PointerSize, Info: m.Info})
	var rows []nettracetest.Metadata
	for i, et := range m.Types {
		rows = append(rows, nettracetest.Metadata{ID: uint32(i + 1), Provider: et.Provider, EventID: uint32(et.ID), Name: et.Name,
			Fields: writerFields(r.Fields(trace.TypeID(i))), HasOpcode: et.Opcode != 0, Opcode: uint8(et.Opcode), Keywords: et.Keywords,
			Message: et.Message, Level: uint8(et.Level), Version: uint8(et.Version)})
	}
	w.Metadata(0, rows...)
	var threads []nettracetest.Thread
	for i, tr := range m.Tracks {
		threads = append(threads, nettracetest.Thread{Index: uint64(i + 1), Name: tr.Name, PID: tr.PID, TID: tr.TID})
	}
	w.Threads(threads...)
	for start := 0; start < len(evs); start += 1000 {
		chunk := evs[start:min(start+1000, len(evs))]
		var stacks [][]uint64
		var lists [][]trace.Label
		var out []nettracetest.Event
		for _, e := range chunk {
			p, err := r.Payload(e)
			if err != nil {
				t.Fatal(err)
			}
			o := nettracetest.Event{MetadataID: uint32(e.Type + 1), Seq: e.Seq, Thread: uint64(e.Track + 1), Capture: uint64(e.Track + 1),
				Proc: uint32(e.CPU), Ticks: int64(e.Time), Payload: p}
			if e.Capture != trace.NoTrack {
				o.Capture = uint64(e.Capture + 1)
			}
			if s := r.Stack(e.Stack); s != nil {
				stacks = append(stacks, s)
				o.Stack = uint32(len(stacks))
			}
			if l := r.Labels(e.Labels); l != nil {
				lists = append(lists, l)
				o.Labels = uint32(len(lists))
			}
			out = append(out, o)
		}
		if len(stacks) > 0 {
			w.Stacks(1, stacks...)
		}
		if len(lists) > 0 {
			w.LabelLists(1, lists...)
		}
		w.Events(start%2000 == 0, out...) // compressed and uncompressed headers by turns
		w.SequencePoint(int64(chunk[len(chunk)-1].Time), 0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestConvertToV6 converts each real NetTrace/NetPerf file to v6 with the
// writer and requires the same events back: times, threads, types, sequence
// numbers and processors of every event; stacks, labels and decoded fields
// of every event when tracetest.Exhaustive, else of the first event of
// each type and every 16th event (decoding and comparing the fields of
// every event was most of the test's 5 s).
func TestConvertToV6(t *testing.T) {
	all := tracetest.Exhaustive()
	for _, f := range realFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			r, _ := openReal(t, f.path)
			res := tracetest.Check(t, r, true)
			b := toV6(t, r, res.Events)
			r6, res6 := readAll(t, b)
			if res6.Err != nil {
				t.Fatal(res6.Err)
			}
			if len(res6.Events) != len(res.Events) {
				t.Fatalf("%d events, want %d", len(res6.Events), len(res.Events))
			}
			m, m6 := r.Meta(), r6.Meta()
			seen := map[trace.TypeID]bool{}
			for i, e := range res.Events {
				e6 := res6.Events[i]
				tr, tr6 := m.Tracks[e.Track], m6.Tracks[e6.Track]
				et, et6 := m.Types[e.Type], m6.Types[e6.Type]
				if e6.Time != e.Time || e6.Seq != e.Seq || e6.CPU != e.CPU || tr6.TID != tr.TID || tr6.PID != tr.PID ||
					!reflect.DeepEqual(et6, et) || (e6.Capture == trace.NoTrack) != (e.Capture == trace.NoTrack) {
					t.Fatalf("event %d: %+v %+v %+v, want %+v %+v %+v", i, e6, tr6, et6, e, tr, et)
				}
				if !all && seen[e.Type] && i%16 != 0 {
					continue
				}
				seen[e.Type] = true
				if !reflect.DeepEqual(r6.Stack(e6.Stack), r.Stack(e.Stack)) || !reflect.DeepEqual(r6.Labels(e6.Labels), r.Labels(e.Labels)) {
					t.Fatalf("event %d: stack or labels differ", i)
				}
				d, _ := r.Details(e)
				d6, _ := r6.Details(e6)
				if !reflect.DeepEqual(d6, d) {
					t.Fatalf("event %d: details %+v, want %+v", i, d6, d)
				}
			}
		})
	}
}
