package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"viewer/trace"
	"viewer/trace/align/aligntest"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/synth"
)

// sameWallTraces returns aligntest.SameWall's NetTrace and perf.data,
// whose events happen at the same wall times, and those times.
func sameWallTraces(t *testing.T) (nt, pd []byte, walls []time.Time) {
	t.Helper()
	var nb bytes.Buffer
	name := filepath.Join(t.TempDir(), "perf.data")
	pf, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := aligntest.SameWall(&nb, pf); err != nil {
		t.Fatal(err)
	}
	pd, err = os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return nb.Bytes(), pd, aligntest.Walls
}

// togetherServer serves the two traces of sameWallTraces and returns
// their ids (NetTrace first).
func togetherServer(t *testing.T) (*testServer, []string, []time.Time) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Formats = []trace.Format{nettrace.Format{}, perf.Format{}, synth.Format{}}
		c.MaxUpload = 16 << 20
	})
	nt, pd, walls := sameWallTraces(t)
	var ids []string
	for _, f := range []struct {
		name string
		data []byte
	}{{"app.nettrace", nt}, {"sched.perf.data", pd}} {
		status, id, msg := ts.upload(f.name, f.data)
		if status != 201 {
			t.Fatalf("upload %s: %d %s", f.name, status, msg)
		}
		ts.waitReady(id)
		ids = append(ids, id)
	}
	return ts, ids, walls
}

func (ts *testServer) getJSON(path string, v any) int {
	ts.t.Helper()
	resp, b := ts.do("GET", path, nil)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, v); err != nil {
			ts.t.Fatalf("%s: %v in %s", path, err, b)
		}
	}
	return resp.StatusCode
}

type togetherMeta struct {
	First  trace.Time `json:"first,string"`
	Last   trace.Time `json:"last,string"`
	Tracks []struct {
		ID     int32  `json:"id"`
		Trace  int    `json:"trace"`
		Name   string `json:"name"`
		Events int64  `json:"events"`
	} `json:"tracks"`
	Types  []typeJSON          `json:"types"`
	Traces []togetherTraceJSON `json:"traces"`
}

// TestTogetherViewport checks that a NetTrace and a perf.data recorded at
// the same wall-clock times land at the same pixels of one combined
// viewport frame, at every zoom that separates them; that an offset moves
// one trace's events by exactly that much; that event details and the
// search say which trace an event came from, on the aligned clock.
func TestTogetherViewport(t *testing.T) {
	ts, ids, walls := togetherServer(t)
	q := "t=" + strings.Join(ids, ",")
	var meta togetherMeta
	if st := ts.getJSON("/api/together/meta?"+q, &meta); st != 200 {
		t.Fatalf("meta: %d", st)
	}
	if len(meta.Traces) != 2 || meta.Traces[0].How != "wall" || meta.Traces[1].How != "wall" {
		t.Fatalf("traces %+v, want two placed by wall", meta.Traces)
	}
	if want := trace.Time(walls[len(walls)-1].Sub(walls[0])); meta.First != 0 || meta.Last != want {
		t.Errorf("combined span %d..%d, want 0..%d", meta.First, meta.Last, want)
	}
	var tracks []int32 // the tracks with events, and their trace
	traceOf := map[int32]int{}
	for _, tr := range meta.Tracks {
		traceOf[tr.ID] = tr.Trace
		if tr.Events > 0 {
			tracks = append(tracks, tr.ID)
		}
	}
	if len(tracks) != 2 || traceOf[tracks[0]] == traceOf[tracks[1]] {
		t.Fatalf("tracks with events %v (traces %v), want one per trace", tracks, traceOf)
	}

	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.hs.URL, "http")+"/api/together/ws?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	trackList := fmt.Sprint(tracks[0]) + "," + fmt.Sprint(tracks[1])
	// view asks for [start, end) at width px with offsets off and returns
	// where each trace's items are drawn: an event's pixel, or an
	// aggregate's bucket (negative, minus one), and each event's aligned
	// time.
	seq := uint32(0)
	view := func(start, end int64, width int, off string) (px, at [2][]int64) {
		t.Helper()
		seq++
		req := fmt.Sprintf(`{"type":"viewport","seq":%d,"start":"%d","end":"%d","width":%d,"tracks":[%s],"off":%q}`, seq, start, end, width, trackList, off)
		if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
		f, _, _, _ := readUntilReply(t, c)
		if f.Seq != seq {
			t.Fatalf("reply %d to request %d", f.Seq, seq)
		}
		nsPerPx := float64(end-start) / float64(width)
		for _, tr := range f.Reply.Tracks {
			k := traceOf[tr.Track]
			for i, x := range tr.X {
				if tr.Count[i] != 1 {
					px[k] = append(px[k], -1-int64(x))
					continue
				}
				tm := f.Reply.Start + int64(math.Round(float64(x)*float64(f.Reply.Res)))
				at[k] = append(at[k], tm)
				px[k] = append(px[k], int64(math.Floor(float64(tm-start)/nsPerPx)))
			}
		}
		return px, at
	}
	// The two events 300 ns apart, alone and in one bucket, then the
	// later ones.
	for _, v := range []struct {
		start, end int64
		width      int
	}{{-1000, 2000, 1500}, {-100, 3_000_000_000, 1200}, {1_000_000_000, 3_000_000_001, 1000}, {-500_000_000, 3_500_000_000, 3000}, {-7, 1e10, 333}} {
		px, at := view(v.start, v.end, v.width, "")
		if len(px[0]) == 0 || !slices.Equal(px[0], px[1]) {
			t.Errorf("view %d..%d at %d px: NetTrace items at %v, perf.data's at %v", v.start, v.end, v.width, px[0], px[1])
		}
		for i := range at[0] {
			if i < len(at[1]) && abs(at[0][i]-at[1][i]) > int64(v.end-v.start)/int64(v.width)/100+1 {
				t.Errorf("view %d..%d: event %d at %d and %d", v.start, v.end, i, at[0][i], at[1][i])
			}
		}
	}
	// An offset of 1 ms on the perf.data moves its events by 1 ms, the
	// NetTrace's not at all.
	_, before := view(1_000_000, 3_000_000_001, 1200, "")
	_, after := view(1_000_000, 3_000_000_001, 1200, "1:1000000")
	if !slices.Equal(before[0], after[0]) || len(before[1]) != len(after[1]) {
		t.Fatalf("offset: NetTrace %v → %v, perf %v → %v", before[0], after[0], before[1], after[1])
	}
	for i := range before[1] {
		if d := after[1][i] - before[1][i]; abs(d-1_000_000) > 4096 {
			t.Errorf("offset: perf event %d moved by %d ns, want 1 ms", i, d)
		}
	}

	// Event details: the first event of each trace, at aligned time 0,
	// each naming its trace.
	for k, tr := range tracks {
		var ev map[string]any
		path := fmt.Sprintf("/api/together/events/%d:0?%s&off=1:5", tr, q)
		if st := ts.getJSON(path, &ev); st != 200 {
			t.Fatalf("%s: %d", path, st)
		}
		want := 0.0
		if traceOf[tr] == 1 {
			want = 5
		}
		tj, _ := ev["trace"].(map[string]any)
		if ev["time_ns"] != want || ev["ev"] != fmt.Sprintf("%d:0", tr) || tj == nil || tj["id"] != ids[traceOf[tr]] {
			t.Errorf("event %d of trace %d: %v", k, traceOf[tr], ev)
		}
	}

	// Search: the hits of both traces merged in aligned time order, ties
	// by trace; stepping from a hit finds the next one.
	var sr struct {
		Hits []togetherHit `json:"hits"`
	}
	if st := ts.getJSON("/api/together/search?"+q+"&q="+url.QueryEscape("time >= 0"), &sr); st != 200 {
		t.Fatalf("search: %d", st)
	}
	if len(sr.Hits) != 2*len(walls) {
		t.Fatalf("search found %d hits, want %d", len(sr.Hits), 2*len(walls))
	}
	for i, h := range sr.Hits {
		if h.Trace != i%2 || traceOf[int32(h.Track)] != h.Trace {
			t.Errorf("hit %d: %+v, want trace %d", i, h, i%2)
		}
		if i > 0 && h.Time < sr.Hits[i-1].Time {
			t.Errorf("hit %d at %d before hit %d at %d", i, h.Time, i-1, sr.Hits[i-1].Time)
		}
		var next struct {
			Hits []togetherHit `json:"hits"`
		}
		ts.getJSON("/api/together/search?"+q+"&q="+url.QueryEscape("time >= 0")+"&limit=1&after="+h.Ev.String(), &next)
		if i+1 < len(sr.Hits) && (len(next.Hits) != 1 || next.Hits[0].Ev != sr.Hits[i+1].Ev) {
			t.Errorf("next after hit %d: %+v, want %+v", i, next.Hits, sr.Hits[i+1])
		}
		ts.getJSON("/api/together/search?"+q+"&q="+url.QueryEscape("time >= 0")+"&limit=1&dir=prev&after="+h.Ev.String(), &next)
		if i > 0 && (len(next.Hits) != 1 || next.Hits[0].Ev != sr.Hits[i-1].Ev) {
			t.Errorf("previous of hit %d: %+v, want %+v", i, next.Hits, sr.Hits[i-1])
		}
	}
	// A name only one trace has searches that one.
	if st := ts.getJSON("/api/together/search?"+q+"&q=Tick", &sr); st != 200 || len(sr.Hits) != len(walls) {
		t.Errorf("search Tick: %d, %d hits", st, len(sr.Hits))
	}
	// What a combined view does not have yet says so.
	if resp, b := ts.do("GET", "/api/together/spans?"+q, nil); resp.StatusCode != 501 || !bytes.Contains(b, []byte("combined view")) {
		t.Errorf("spans: %d %s", resp.StatusCode, b)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestTogetherURL checks the `t` and `off` grammar: canonical ids, no
// repeats, offsets by increasing trace within the view, and refusals.
func TestTogetherURL(t *testing.T) {
	a, b := uuid.New().String(), uuid.New().String()
	for _, c := range []struct {
		q  string
		ok bool
	}{
		{"t=" + a, true},
		{"t=" + a + "," + b + "&off=1:1500000", true},
		{"t=" + a + "," + b + "&off=0:-3,1:7", true},
		{"t=" + a + "," + b + "&off=1:0", false},
		{"t=" + a + "," + b + "&off=2:5", false},
		{"t=" + a + "," + b + "&off=1:5,0:4", false},
		{"t=" + a + "," + b + "&off=1:+5", false},
		{"t=" + a + "," + b + "&off=1:05", false},
		{"t=" + a + "," + b + "&off=1:1125899906842625", false},
		{"t=" + a + "," + a, false},
		{"t=" + strings.ToUpper(a), false},
		{"t=", false},
		{"off=0:5", false},
		{"t=" + strings.Repeat(a+",", MaxTogether) + b, false},
	} {
		q, _ := url.ParseQuery(c.q)
		_, _, err := parseTogether(q)
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.q, err, c.ok)
		}
		if v, err := ParseView(q); err == nil && c.ok && v.Encode() != "v=1&"+c.q {
			t.Errorf("%s: encodes as %s", c.q, v.Encode())
		}
	}
}

// TestTogetherRefuses checks the combined view's errors: a trace not in
// the library, and a bad event id.
func TestTogetherRefuses(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("a.synth", synthFile(100, 1))
	ts.waitReady(id)
	if resp, _ := ts.do("GET", "/api/together/meta?t="+id+","+uuid.New().String(), nil); resp.StatusCode != 404 {
		t.Errorf("meta of a missing trace: %d", resp.StatusCode)
	}
	if resp, _ := ts.do("GET", "/api/together/events/99999:0?t="+id, nil); resp.StatusCode != 404 {
		t.Errorf("event on no track: %d", resp.StatusCode)
	}
	if resp, _ := ts.do("GET", "/v?t="+id+"&off=3:5", nil); resp.StatusCode != 400 {
		t.Errorf("page with an offset of no trace: %d", resp.StatusCode)
	}
	if resp, b := ts.do("GET", "/v?t="+id, nil); resp.StatusCode != 200 || !bytes.Contains(b, []byte("/api/together/ws?t="+id)) {
		t.Errorf("page: %d", resp.StatusCode)
	}
}
