package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"viewer/render/stacks"
	"viewer/trace/tracetest"
	"viewer/web"
)

// dumpSample is a Thread/Sample line of `viewer dump`.
type dumpSample struct {
	Time  int64    `json:"time_ns"`
	TID   int64    `json:"tid"`
	Event string   `json:"event"`
	Stack []string `json:"stack"`
}

// TestStacksAPIHeartRate builds the flame graph of HeartRateMonitor through
// the API, for the whole trace and for a sub-range of one thread, by count
// and by time, and compares every node's total and self with a brute-force
// aggregation of `viewer dump`'s symbolized sample stacks.
func TestStacksAPIHeartRate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(tracetest.RealData(t, "nettrace/perfview"), "HeartRateMonitor.10068.nettrace")
	var out bytes.Buffer
	if err := runDump(context.Background(), []string{path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var samples []dumpSample
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s dumpSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Event == stacks.DefaultEvent && len(s.Stack) > 0 {
			samples = append(samples, s)
		}
	}
	perTID := map[int64][]dumpSample{}
	for _, s := range samples {
		perTID[s.TID] = append(perTID[s.TID], s)
	}
	var busiest int64
	for tid, ss := range perTID {
		if len(ss) > len(perTID[busiest]) {
			busiest = tid
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hs, stop := startServerWith(t, t.TempDir(), 64<<20)
	defer stop()
	resp, err := http.Post(hs.URL+"/api/traces?name=hrm.nettrace", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var up struct{ ID, Error string }
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if up.ID == "" {
		t.Fatalf("upload: %d %s", resp.StatusCode, up.Error)
	}
	waitIndexed(t, hs.URL, up.ID)
	var meta struct {
		Tracks []struct {
			ID  int   `json:"id"`
			TID int64 `json:"tid"`
		} `json:"tracks"`
	}
	getJSON(t, hs.URL+"/api/traces/"+up.ID+"/meta", &meta)
	track := -1
	for _, tr := range meta.Tracks {
		if tr.TID == busiest {
			track = tr.ID
		}
	}
	var evs struct {
		Events []web.StackEventType `json:"events"`
	}
	getJSON(t, hs.URL+"/api/traces/"+up.ID+"/stacks/events", &evs)
	var n int64
	for _, e := range evs.Events {
		if e.Event == stacks.DefaultEvent {
			n += e.Count
		}
	}
	if n != int64(len(samples)) {
		t.Errorf("stacks/events: %d %s events with stacks, want %d (%+v)", n, stacks.DefaultEvent, len(samples), evs.Events)
	}
	for _, bad := range []string{"tf=x", "view=sideways", "weight=mass", "event=No/Such", "tracks=99999", "width=0"} {
		resp, err := http.Get(hs.URL + "/api/traces/" + up.ID + "/stacks?" + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", bad, resp.StatusCode)
		}
	}
	ts := perTID[busiest]
	from, to := ts[len(ts)/3].Time, ts[2*len(ts)/3].Time
	t.Logf("%d samples; thread %d (track %d) has %d, %d in [%d, %d)", len(samples), busiest, track, len(ts), 2*len(ts)/3-len(ts)/3, from, to)

	for _, c := range []struct {
		name   string
		params string
		keep   func(dumpSample) bool
	}{
		{"whole", "", func(dumpSample) bool { return true }},
		{"thread-range", fmt.Sprintf("from=%d&to=%d&tracks=%d", from, to, track), func(s dumpSample) bool { return s.TID == busiest && s.Time >= from && s.Time < to }},
	} {
		for _, weight := range []string{"count", "time"} {
			t.Run(c.name+"-"+weight, func(t *testing.T) {
				want := map[string][2]int64{"all": {}}
				prev := map[int64]int64{}
				for _, s := range samples { // in time order
					w := int64(1)
					if weight == "time" {
						p, ok := prev[s.TID]
						prev[s.TID] = s.Time
						if !ok {
							continue
						}
						w = s.Time - p
					}
					if !c.keep(s) {
						continue
					}
					key := "all"
					for i := len(s.Stack) - 1; i >= 0; i-- {
						x := want[key]
						want[key] = [2]int64{x[0] + w, x[1]}
						key += ";" + s.Stack[i]
					}
					x := want[key]
					want[key] = [2]int64{x[0] + w, x[1] + w}
				}
				u := hs.URL + "/api/traces/" + up.ID + "/stacks?width=100000&weight=" + weight + "&" + c.params
				var r stacks.Reply
				getJSON(t, u, &r)
				got := map[string][2]int64{}
				keys := make([]string, len(r.Nodes))
				for i, n := range r.Nodes {
					k := r.Names[n[1]]
					if n[0] >= 0 {
						k = keys[n[0]] + ";" + k
					}
					keys[i] = k
					got[k] = [2]int64{n[2], n[3]}
				}
				root := want["all"][0]
				if r.Partial || r.Nodes[0][2] != root {
					t.Fatalf("root %d (partial %v), want %d", r.Nodes[0][2], r.Partial, root)
				}
				kept := 0
				for k, w := range want {
					if w[0]*100000 < root {
						if _, ok := got[k]; ok {
							t.Errorf("%s (%v) should be pruned", k, w)
						}
						continue
					}
					kept++
					if got[k] != w {
						t.Errorf("%s = %v, want %v", k, got[k], w)
					}
				}
				if len(got) != kept || r.Pruned != len(want)-kept {
					t.Errorf("%d nodes, %d pruned; want %d, %d", len(got), r.Pruned, kept, len(want)-kept)
				}
				t.Logf("%d nodes, %d pruned, total %d %s", len(got), r.Pruned, r.Nodes[0][2], r.Unit)
				if weight != "count" || len(r.Nodes) < 2 {
					return
				}
				// The samples under the heaviest child of the root.
				node := 1
				for i, n := range r.Nodes {
					if n[0] == 0 && n[2] > r.Nodes[node][2] {
						node = i
					}
				}
				var hits struct {
					Hits []struct {
						Ev    string `json:"ev"`
						Time  string `json:"time"`
						Track int    `json:"track"`
					} `json:"hits"`
					More bool `json:"more"`
				}
				getJSON(t, strings.Replace(u, "/stacks?", "/stacks/samples?", 1)+"&node="+strconv.Itoa(node)+"&limit=10000", &hits)
				n := min(r.Nodes[node][2], 10000)
				if int64(len(hits.Hits)) != n || hits.More != (r.Nodes[node][2] > 10000) {
					t.Errorf("node %d: %d hits (more %v), want %d", node, len(hits.Hits), hits.More, r.Nodes[node][2])
				}
				times := make([]int64, len(hits.Hits))
				for i, h := range hits.Hits {
					times[i], _ = strconv.ParseInt(h.Time, 10, 64)
				}
				if !slices.IsSorted(times) {
					t.Error("hits are not in time order")
				}
			})
		}
	}
}
