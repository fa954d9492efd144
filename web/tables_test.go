package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"viewer/render"
	"viewer/render/query"
	"viewer/trace"
	"viewer/trace/synth"
)

// synthTracks is how many tracks uploadSynth's trace has.
const synthTracks = 5

// uploadSynth uploads a small synthetic trace to ts and waits for its
// index: it returns the trace's id, a reader of the same trace read to
// its end (for render.NewMatcher) and its events, the reference the
// endpoint tests compare with.
func uploadSynth(ts *testServer) (id string, ref trace.Reader, evs []trace.Event) {
	const events, seed = 6000, 7
	_, id, _ = ts.upload("t.synth", synth.File(events, seed, synthTracks))
	ts.waitReady(id)
	ref = synth.New(synth.Config{Events: events, Seed: seed, Tracks: synthTracks})
	for {
		e, err := ref.ReadEvent()
		if err != nil {
			break
		}
		evs = append(evs, e)
	}
	return id, ref, evs
}

// TestCountsAndTable checks the counts and table endpoints against a
// streaming render.Matcher run over the same synthetic trace's events:
// the counts per type and per track of a selection, and the rows of a
// table read page by page.
func TestCountsAndTable(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	id, ref, evs := uploadSynth(ts)
	lo, hi := evs[len(evs)/5].Time, evs[len(evs)*4/5].Time
	for _, c := range []struct {
		q      string
		tracks []trace.TrackID
	}{
		{"", nil},
		{"Event3 or value > 900", []trace.TrackID{1, 3}},
		{`"item-7" and not Synthetic-2`, []trace.TrackID{0, 2, 4}},
	} {
		var m *render.Matcher
		f := render.Filter{Tracks: c.tracks}
		if c.q != "" {
			e, err := query.ParseExpr(c.q)
			if err != nil {
				t.Fatal(err)
			}
			f.Expr = e
		}
		m, err := render.NewMatcher(f, ref)
		if err != nil {
			t.Fatal(err)
		}
		wantTypes, wantTracks := map[trace.TypeID]int64{}, map[trace.TrackID]int64{}
		var want []trace.Event
		for _, e := range evs {
			if e.Time >= lo && e.Time <= hi && m.Match(&e) && (c.tracks == nil || containsTrack(c.tracks, e.Track)) {
				wantTypes[e.Type]++
				wantTracks[e.Track]++
				want = append(want, e)
			}
		}
		// The order of positions: time, then track, then reading order.
		slices.SortStableFunc(want, func(a, b trace.Event) int {
			return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Track, b.Track))
		})
		params := url.Values{"q": {c.q}, "from": {fmt.Sprint(lo)}, "to": {fmt.Sprint(hi)}}
		if c.tracks != nil {
			var s []string
			for _, tr := range c.tracks {
				s = append(s, fmt.Sprint(tr))
			}
			params.Set("tracks", strings.Join(s, ","))
		}
		resp, b := ts.do("GET", "/api/traces/"+id+"/counts?"+params.Encode(), nil)
		var counts countsReply
		if resp.StatusCode != 200 || json.Unmarshal(b, &counts) != nil {
			t.Fatalf("%q: counts %d %s", c.q, resp.StatusCode, b)
		}
		if counts.Total != int64(len(want)) || !counts.Complete || len(counts.Types) != len(wantTypes) || len(counts.Tracks) != len(wantTracks) {
			t.Errorf("%q: %d events in %d types on %d tracks, want %d in %d on %d", c.q, counts.Total, len(counts.Types), len(counts.Tracks), len(want), len(wantTypes), len(wantTracks))
		}
		for _, tc := range counts.Types {
			if wantTypes[tc.Type] != tc.Count {
				t.Errorf("%q: type %d: %d, want %d", c.q, tc.Type, tc.Count, wantTypes[tc.Type])
			}
		}
		for _, tc := range counts.Tracks {
			if wantTracks[tc.Track] != tc.Count {
				t.Errorf("%q: track %d: %d, want %d", c.q, tc.Track, tc.Count, wantTracks[tc.Track])
			}
		}
		// The histogram of the value field: its count and extremes.
		params.Set("field", "value")
		params.Set("bins", "7")
		resp, b = ts.do("GET", "/api/traces/"+id+"/counts?"+params.Encode(), nil)
		var hc countsReply
		if resp.StatusCode != 200 || json.Unmarshal(b, &hc) != nil || hc.Histogram == nil {
			t.Fatalf("%q: counts with a histogram: %d %s", c.q, resp.StatusCode, b)
		}
		minV, maxV := int64(1000), int64(-1)
		for _, e := range want {
			minV, maxV = min(minV, synth.Value(e)), max(maxV, synth.Value(e))
		}
		if h := hc.Histogram; h.Count != int64(len(want)) || len(h.Bins) != 7 || !h.Complete || len(want) > 0 && (h.Min != float64(minV) || h.Max != float64(maxV)) {
			t.Errorf("%q: histogram %+v; want %d values from %d to %d", c.q, h, len(want), minV, maxV)
		}
		params.Del("field")
		params.Del("bins")
		// The table, page by page, is every event in order with its fields.
		var rows []tableRow
		params.Set("limit", "333")
		for page := 0; ; page++ {
			resp, b := ts.do("GET", "/api/traces/"+id+"/table?"+params.Encode(), nil)
			var tab tableReply
			if resp.StatusCode != 200 || json.Unmarshal(b, &tab) != nil {
				t.Fatalf("%q: table %d %.300s", c.q, resp.StatusCode, b)
			}
			for _, r := range tab.Rows {
				if len(r.Values) != len(tab.Columns) {
					t.Fatalf("%q: a row of %d values under %d columns", c.q, len(r.Values), len(tab.Columns))
				}
				for k, col := range tab.Columns {
					if col == "value" {
						var v int64
						json.Unmarshal(r.Values[k], &v)
						if i := len(rows); i < len(want) && v != synth.Value(want[i]) {
							t.Fatalf("%q: row %d value %d, want %d", c.q, i, v, synth.Value(want[i]))
						}
					}
				}
				rows = append(rows, r)
			}
			if !tab.More {
				break
			}
			params.Set("after", rows[len(rows)-1].Ev.String())
		}
		if len(rows) != len(want) {
			t.Fatalf("%q: %d rows, want %d", c.q, len(rows), len(want))
		}
		for i, r := range rows {
			if r.Time != want[i].Time || r.Track != want[i].Track || r.Type != want[i].Type {
				t.Fatalf("%q: row %d is %+v, want %+v", c.q, i, r, want[i])
			}
		}
		// Random access: a page from row k is the rows from k.
		params.Del("after")
		params.Set("limit", "3")
		for _, k := range []int{0, 1, len(rows) / 3, len(rows) / 2, len(rows) - 1, len(rows)} {
			params.Set("row", fmt.Sprint(k))
			resp, b := ts.do("GET", "/api/traces/"+id+"/table?"+params.Encode(), nil)
			var tab tableReply
			if resp.StatusCode != 200 || json.Unmarshal(b, &tab) != nil || tab.Total == nil {
				t.Fatalf("%q: table row %d: %d %.300s", c.q, k, resp.StatusCode, b)
			}
			if *tab.Total != int64(len(rows)) {
				t.Errorf("%q: total %d, want %d", c.q, *tab.Total, len(rows))
			}
			want := rows[min(k, len(rows)):min(k+3, len(rows))]
			if len(tab.Rows) != len(want) {
				t.Fatalf("%q: row %d: %d rows, want %d", c.q, k, len(tab.Rows), len(want))
			}
			for i, r := range tab.Rows {
				if r.Ev != want[i].Ev {
					t.Errorf("%q: row %d+%d: %v, want %v", c.q, k, i, r.Ev, want[i].Ev)
				}
			}
		}
		params.Del("row")
	}
	for _, bad := range []string{"q=(a", "from=x", "tracks=1,x", "limit=0", "after=zz", "row=-1", "row=x", "row=1&after=0:1"} {
		if resp, _ := ts.do("GET", "/api/traces/"+id+"/table?"+bad, nil); resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", bad, resp.StatusCode)
		}
	}
}

func containsTrack(ts []trace.TrackID, t trace.TrackID) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
