package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"viewer/trace/synth"
)

// TestFlowsAPI: GET /flows?event= lists the events sharing the event's
// activity id in time order, as a brute force over every event's labels
// (GET /events) finds them; ?from&to groups the range's events by
// activity; the limit cuts with more; bad requests get 400.
func TestFlowsAPI(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, msg := ts.upload("f.synth", synth.File(1200, 11, 3))
	if id == "" {
		t.Fatal(msg)
	}
	ts.waitReady(id)
	get := func(path string, out any) int {
		t.Helper()
		resp, b := ts.do("GET", "/api/traces/"+id+path, nil)
		if resp.StatusCode == 200 && out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return resp.StatusCode
	}
	var meta struct {
		Tracks []struct {
			ID     int `json:"id"`
			Events int `json:"events"`
		} `json:"tracks"`
	}
	get("/meta", &meta)
	// Brute force: every event's activity id.
	type ev struct {
		ref      string
		time     int64
		track, i int
		activity string
	}
	var all []ev
	for _, tr := range meta.Tracks {
		for i := range tr.Events {
			var e struct {
				Time   int64          `json:"time_ns"`
				Labels map[string]any `json:"labels"`
			}
			ref := fmt.Sprintf("%d:%d", tr.ID, i)
			if get("/events/"+ref, &e) != 200 {
				t.Fatalf("event %s", ref)
			}
			all = append(all, ev{ref, e.Time, tr.ID, i, activityText(e.Labels["ActivityId"])})
		}
	}
	slices.SortFunc(all, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(a.track, b.track), cmp.Compare(a.i, b.i))
	})
	byID := map[string][]string{}
	for _, e := range all {
		if e.activity != "" {
			byID[e.activity] = append(byID[e.activity], e.ref)
		}
	}
	if len(byID) < 2 {
		t.Fatalf("the synthetic trace holds %d activity ids, want several", len(byID))
	}
	checked := 0
	for _, e := range all {
		if e.activity == "" || len(byID[e.activity]) < 2 || checked == 5 {
			continue
		}
		checked++
		var rep flowsReply
		if get("/flows?event="+e.ref, &rep) != 200 {
			t.Fatalf("flows of %s", e.ref)
		}
		var got []string
		for _, h := range rep.Events {
			got = append(got, h.Ev.String())
		}
		if !slices.Equal(got, byID[e.activity]) || rep.More || rep.CutOff {
			t.Errorf("flows of %s: %v (more %v, cut off %v), want %v", e.ref, got, rep.More, rep.CutOff, byID[e.activity])
		}
		var cut flowsReply
		get("/flows?event="+e.ref+"&limit=1", &cut)
		if len(cut.Events) != 1 || !cut.More {
			t.Errorf("limit=1: %d events, more %v", len(cut.Events), cut.More)
		}
	}
	// A range: chains are the brute force's ids restricted to it.
	from, to := all[len(all)/4].time, all[len(all)/2].time
	var rr flowsRangeReply
	if get(fmt.Sprintf("/flows?from=%d&to=%d", from, to), &rr) != 200 {
		t.Fatal("flows of a range")
	}
	want := map[string][]string{}
	for _, e := range all {
		if e.activity != "" && e.time >= from && e.time < to {
			want[e.activity] = append(want[e.activity], e.ref)
		}
	}
	n := 0
	for _, refs := range want {
		if len(refs) > 1 {
			n++
		}
	}
	if len(rr.Flows) != n {
		t.Errorf("%d chains in the range, want %d", len(rr.Flows), n)
	}
	for _, ch := range rr.Flows {
		var got []string
		for _, h := range ch.Events {
			got = append(got, h.Ev.String())
		}
		if !slices.Equal(got, want[ch.ID]) {
			t.Errorf("chain %s: %v, want %v", ch.ID, got, want[ch.ID])
		}
	}
	for _, bad := range []string{"/flows", "/flows?event=x", "/flows?from=5&to=5", "/flows?event=0:0&limit=0", "/flows?event=0:0&limit=10001"} {
		if st := get(bad, nil); st != 400 {
			t.Errorf("%s: %d, want 400", bad, st)
		}
	}
	if st := get("/flows?event=0:99999", nil); st != 404 {
		t.Errorf("an event that does not exist: %d, want 404", st)
	}
}

// activityText is a dumped label's activity id, "" for none or all zero.
func activityText(v any) string {
	s, _ := v.(string)
	return nonZeroID(s)
}
