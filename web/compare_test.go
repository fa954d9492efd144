package web

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
	"viewer/trace/synth"
)

// getCompare GETs a compare endpoint and decodes its reply; status is
// the HTTP status.
func (ts *testServer) getCompare(path string, out any) (status int, body string) {
	ts.t.Helper()
	resp, b := ts.do("GET", path, nil)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			ts.t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// TestCompareSelf: a trace compared with itself, whole, has every delta,
// relative delta and score zero, for rows of every kind the trace has;
// limit cuts the rows, not the total.
func TestCompareSelf(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Derive = func(trace.Reader) span.Deriver { return &gapDeriver{} }
	})
	_, id, msg := ts.upload("s.synth", synth.File(3000, 7, 4))
	if id == "" {
		t.Fatal(msg)
	}
	ti := ts.waitReady(id)
	var rep compareReply
	if st, b := ts.getCompare("/api/compare?a="+id+"&b="+id+"&limit=5000", &rep); st != 200 {
		t.Fatalf("compare: %d %s", st, b)
	}
	if rep.Total != len(rep.Rows) || rep.Total < 20 || !rep.Fields || rep.Notice != "" {
		t.Fatalf("%d rows of %d, fields %v, notice %q", len(rep.Rows), rep.Total, rep.Fields, rep.Notice)
	}
	kinds := map[string]bool{}
	for _, r := range rep.Rows {
		kinds[r.Kind] = true
		if r.Delta != 0 || r.Rel == nil || *r.Rel != 0 || r.Score != 0 || r.A != r.B {
			t.Errorf("self: %+v", r)
		}
	}
	for _, k := range []string{"type", "track", "slices", "slice", "field"} {
		if !kinds[k] {
			t.Errorf("no %s rows", k)
		}
	}
	if rep.A.ID != id || rep.A.From != trace.Time(ti.Stats.FirstNS) || rep.A.To != trace.Time(ti.Stats.LastNS)+1 || rep.B != rep.A {
		t.Errorf("sides %+v %+v", rep.A, rep.B)
	}
	var short compareReply
	if st, b := ts.getCompare("/api/compare?a="+id+"&b="+id+"&limit=3&fields=0", &short); st != 200 {
		t.Fatalf("compare: %d %s", st, b)
	}
	if len(short.Rows) != 3 || short.Fields || short.Total >= rep.Total {
		t.Errorf("limit 3 without fields: %d rows of %d (fields %v); with fields %d", len(short.Rows), short.Total, short.Fields, rep.Total)
	}
}

// TestCompareErrors: requests the endpoints refuse, and why.
func TestCompareErrors(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, msg := ts.upload("s.synth", synth.File(500, 1, 2))
	if id == "" {
		t.Fatal(msg)
	}
	ts.waitReady(id)
	other := "00000000-0000-4000-8000-000000000000"
	for _, c := range []struct {
		query  string
		status int
		says   string
	}{
		{"a=" + id, 400, "side b"},
		{"b=" + id, 400, "side a"},
		{"a=" + id + "&b=nope", 404, "b: not a trace id"},
		{"a=" + other + "&b=" + id, 404, "a: no such trace"},
		{"a=" + id + "&b=" + id + "&bfrom=10&bto=10", 400, "empty"},
		{"a=" + id + "&b=" + id + "&afrom=x", 400, "afrom"},
		{"a=" + id + "&b=" + id + "&limit=100000", 400, "limit"},
		{"a=" + id + "&b=" + id + "&fields=2", 400, "fields"},
	} {
		for _, path := range []string{"/api/compare?", "/api/compare/stacks?"} {
			if strings.Contains(c.query, "limit") || strings.Contains(c.query, "fields") {
				if strings.Contains(path, "stacks") {
					continue
				}
			}
			var out any
			st, b := ts.getCompare(path+c.query, &out)
			if st != c.status || !strings.Contains(b, c.says) {
				t.Errorf("%s%s: %d %s, want %d saying %q", path, c.query, st, b, c.status, c.says)
			}
		}
	}
	var out any
	if st, b := ts.getCompare("/api/compare/stacks?a="+id+"&b="+id+"&tracks=0", &out); st != 400 {
		t.Errorf("stacks with tracks: %d %s", st, b)
	}
	// The synthetic trace has no sample events: the stacks say which side.
	if st, b := ts.getCompare("/api/compare/stacks?a="+id+"&b="+id, &out); st != 400 || !strings.Contains(b, "a: no event type") {
		t.Errorf("stacks of a trace without samples: %d %s", st, b)
	}
	// The page: unknown traces and unreadable links are error pages.
	if resp, b := ts.do("GET", "/compare?a="+other+"&b="+id, nil); resp.StatusCode != 404 || !strings.Contains(string(b), "no trace") {
		t.Errorf("page of an unknown trace: %d", resp.StatusCode)
	}
	if resp, _ := ts.do("GET", "/compare?a="+id, nil); resp.StatusCode != 400 {
		t.Errorf("page without b: %d", resp.StatusCode)
	}
	if resp, b := ts.do("GET", "/compare?a="+id+"&b="+id+"&bfrom=5", nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"from":"5"`) {
		t.Errorf("page: %d %s", resp.StatusCode, b)
	}
}

// recording returns perftest.GenerateSyscalls's recording of n syscalls,
// the one numbered longer 2 µs longer, the ticks numbered in skip left
// out.
func recording(t *testing.T, n, longer int, skip ...int) []byte {
	t.Helper()
	p := t.TempDir() + "/r.data"
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := perftest.SyscallsOptions{N: n, Longer: longer, Skip: map[int]bool{}}
	for _, k := range skip {
		o.Skip[k] = true
	}
	if err := perftest.GenerateSyscalls(f, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompareKnownChanges compares two writer-made recordings, the second
// missing three ticks and with one syscall 2 µs longer: the rows of
// exactly those changes come first, with exactly those deltas, and every
// other row is unchanged.
func TestCompareKnownChanges(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Formats = []trace.Format{perf.Format{}}
		c.Derive = func(r trace.Reader) span.Deriver {
			if p, ok := r.(*perf.Reader); ok {
				return perf.NewSched(p)
			}
			return nil
		}
	})
	const n = 50
	ids := [2]string{}
	for i, data := range [][]byte{recording(t, n, -1), recording(t, n, 17, 3, 20, 41)} {
		_, id, msg := ts.upload(fmt.Sprintf("r%d.data", i), data)
		if id == "" {
			t.Fatal(msg)
		}
		ts.waitReady(id)
		ids[i] = id
	}
	var rep compareReply
	if st, b := ts.getCompare("/api/compare?a="+ids[0]+"&b="+ids[1], &rep); st != 200 {
		t.Fatalf("compare: %d %s", st, b)
	}
	secs := rep.SecondsA
	if rep.SecondsB != secs || rep.Total != len(rep.Rows) {
		t.Fatalf("ranges of %g and %g s, %d rows of %d", secs, rep.SecondsB, len(rep.Rows), rep.Total)
	}
	want := map[string]float64{ // "kind key measure" → delta
		"type test/tick count": -3, "type test/tick rate": -3 / secs,
		"track app 7 count": -3, "track app 7 rate": -3 / secs,
		"slices app 7/syscalls mean": 2000.0 / n, "slices app 7/syscalls p99": 2000, "slices app 7/syscalls max": 2000,
		"slice read mean": 2000.0 / n, "slice read p99": 2000, "slice read max": 2000,
	}
	for i, r := range rep.Rows {
		k := r.Kind + " " + r.Key + " " + r.Measure
		d, ok := want[k]
		if i < len(want) != ok {
			t.Errorf("row %d: %s (delta %g): ranked wrong for a row that is %s", i, k, r.Delta, map[bool]string{true: "expected to change", false: "not expected to change"}[ok])
		}
		if !ok {
			if r.Delta != 0 {
				t.Errorf("unexpected change: %+v", r)
			}
			continue
		}
		if math.Abs(r.Delta-d) > 1e-9*math.Abs(d) || r.Score <= 0 || r.Rel == nil || math.Abs(*r.Rel-r.Delta/math.Abs(r.A)) > 1e-12 {
			t.Errorf("%s: %+v, want delta %g", k, r, d)
		}
	}
	if len(rep.Rows) <= len(want) {
		t.Errorf("%d rows: no unchanged rows after the changed ones", len(rep.Rows))
	}
	// One trace against itself by ranges: the first and the second half
	// of a periodic recording are equal.
	first := int64(1e9)
	var halves compareReply
	q := fmt.Sprintf("/api/compare?a=%s&afrom=%d&ato=%d&b=%s&bfrom=%d&bto=%d", ids[0], first, first+250_000, ids[0], first+250_000, first+500_000)
	if st, b := ts.getCompare(q, &halves); st != 200 {
		t.Fatalf("halves: %d %s", st, b)
	}
	for _, r := range halves.Rows {
		if r.Delta != 0 {
			t.Errorf("halves: %+v", r)
		}
	}
	if halves.A.To != halves.B.From || halves.SecondsA != 250e-6 {
		t.Errorf("halves: sides %+v %+v, %g s", halves.A, halves.B, halves.SecondsA)
	}
}

// TestCompareStacks: the demo trace's stacks against themselves weigh the
// same on both sides, every node; its two halves differ, and each side's
// fractions are of its own total.
func TestCompareStacks(t *testing.T) {
	demo, err := os.ReadFile("../cmd/viewer/demo.nettrace")
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, t.TempDir(), func(c *Config) {
		c.Formats = []trace.Format{nettrace.Format{}}
		c.Symbols = func(trace.Reader) render.SymbolSource { return clr.NewSymbols() }
		c.MaxUpload = int64(len(demo))
	})
	_, id, msg := ts.upload("demo.nettrace", demo)
	if id == "" {
		t.Fatal(msg)
	}
	ti := ts.waitReady(id)
	type diffReply struct {
		TotalA   float64 `json:"total_a"`
		TotalB   float64 `json:"total_b"`
		SamplesA float64 `json:"samples_a"`
		SamplesB float64 `json:"samples_b"`
		Names    []string
		Nodes    [][6]float64
	}
	var self diffReply
	if st, b := ts.getCompare("/api/compare/stacks?width=100000&a="+id+"&b="+id, &self); st != 200 {
		t.Fatalf("stacks: %d %s", st, b)
	}
	if len(self.Nodes) < 10 || self.TotalA == 0 || self.TotalA != self.TotalB {
		t.Fatalf("self: %d nodes, totals %g %g", len(self.Nodes), self.TotalA, self.TotalB)
	}
	for i, nd := range self.Nodes {
		if nd[2] != nd[4] || nd[3] != nd[5] {
			t.Errorf("self: node %d (%s): %v", i, self.Names[int(nd[1])], nd)
		}
	}
	// Against the stacks endpoint: side A's fractions are its weights
	// over its total.
	var plain struct {
		Total float64
		Nodes [][4]float64
	}
	if st, b := ts.getCompare("/api/traces/"+id+"/stacks?width=100000", &plain); st != 200 {
		t.Fatalf("stacks: %d %s", st, b)
	}
	if len(plain.Nodes) != len(self.Nodes) || self.TotalA != plain.Total {
		t.Fatalf("stacks endpoint: %d nodes, total %g; compare: %d, %g", len(plain.Nodes), plain.Total, len(self.Nodes), self.TotalA)
	}
	for i, nd := range plain.Nodes {
		if math.Abs(self.Nodes[i][2]-nd[2]/plain.Total) > 1e-12 || math.Abs(self.Nodes[i][3]-nd[3]/plain.Total) > 1e-12 {
			t.Errorf("node %d: %v, stacks endpoint %v of %g", i, self.Nodes[i], nd, plain.Total)
		}
	}
	mid := (ti.Stats.FirstNS + ti.Stats.LastNS) / 2
	var halves diffReply
	q := fmt.Sprintf("/api/compare/stacks?a=%s&ato=%d&b=%s&bfrom=%d", id, mid, id, mid)
	if st, b := ts.getCompare(q, &halves); st != 200 {
		t.Fatalf("halves: %d %s", st, b)
	}
	if halves.SamplesA+halves.SamplesB != self.SamplesA {
		t.Errorf("halves hold %g + %g samples, the whole %g", halves.SamplesA, halves.SamplesB, self.SamplesA)
	}
	changed := 0
	for _, nd := range halves.Nodes {
		if nd[3] != nd[5] {
			changed++
		}
	}
	if changed == 0 {
		t.Error("the two halves' stacks do not differ anywhere")
	}
}
