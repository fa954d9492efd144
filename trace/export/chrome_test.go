package export

import (
	"bytes"
	"encoding/json"
	"testing"

	"viewer/trace"
)

// chromeReader holds tables only; ChromeWriter asks it for labels.
type chromeReader struct {
	meta   trace.Meta
	labels [][]trace.Label
}

func (r *chromeReader) Meta() *trace.Meta                          { return &r.meta }
func (r *chromeReader) ReadEvent() (trace.Event, error)            { return trace.Event{}, nil }
func (r *chromeReader) Stack(trace.StackID) []uint64               { return nil }
func (r *chromeReader) Details(trace.Event) (trace.Details, error) { return trace.Details{}, nil }
func (r *chromeReader) Labels(id trace.LabelsID) []trace.Label {
	if id <= 0 || int(id) > len(r.labels) {
		return nil
	}
	return r.labels[id-1]
}

// TestChromeWriter writes hostile names and values, crossing and
// unclosed Start/Stop pairs and shared activity ids, and checks that the
// document is JSON, that slices nest and that flows pair up.
func TestChromeWriter(t *testing.T) {
	var act, zero [16]byte
	act[0] = 7
	r := &chromeReader{labels: [][]trace.Label{
		{{Key: "ActivityId", Value: trace.GUIDValue(act)}},
		{{Key: "ActivityId", Value: trace.GUIDValue(zero)}},
	}}
	r.meta.Tracks = []trace.Track{{Name: "t\"1\x00</script>", PID: -1, TID: -1}, {Name: "t2", PID: 5, TID: 6}}
	r.meta.Types = []trace.EventType{
		{Provider: "P\"", Name: "AStart"}, {Provider: "P\"", Name: "AStop"},
		{Provider: "P\"", Name: "BStart"}, {Provider: "P\"", Name: "BStop"}, {Name: ""},
	}
	var out bytes.Buffer
	w := NewChromeWriter(&out, r)
	ev := func(tm trace.Time, track trace.TrackID, ty trace.TypeID, labels trace.LabelsID, label string) {
		if err := w.Write(trace.Event{Time: tm, Track: track, Type: ty, Labels: labels}, trace.Details{Label: label,
			Fields: []trace.Field{{Name: "x\"", Value: trace.FloatValue(1.5)}, {Name: "s", Value: trace.StringValue("\xff\x01")}}}); err != nil {
			t.Fatal(err)
		}
	}
	ev(10, 0, 0, 1, "a start")   // A opens
	ev(20, 0, 2, 0, "b start")   // B opens inside A
	ev(30, 0, 1, 1, "a stop")    // A closes: B, never closed, becomes an instant
	ev(40, 1, 2, 2, "b start 2") // on another thread, never closed
	ev(50, 1, 3, 1, "b stop")    // closes it
	ev(60, 1, 1, 0, "a stop")    // closes nothing: an instant
	ev(70, -1, 4, 0, "no type name, no track")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.Bytes())
	}
	count := map[string]int{}
	for _, e := range doc.TraceEvents {
		count[e["ph"].(string)]++
		if e["ph"] == "X" && e["name"] == "A" && (e["ts"].(float64) != 0.010 || e["dur"].(float64) != 0.020) {
			t.Errorf("slice A: %v", e)
		}
	}
	// X: A (10–30) and B (40–50); instants: B's first start, the stray
	// stop, the untyped event; one flow between the two events of act
	// (the zero id links nothing): A's start at 10 → A's stop at 30 → B's
	// stop at 50 is two links.
	if count["X"] != 2 || count["i"] != 3 || count["s"] != 2 || count["f"] != 2 {
		t.Errorf("phases %v\n%s", count, out.Bytes())
	}
}
