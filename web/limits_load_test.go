package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/trace/synth"
)

// rssBytes returns the process's resident set size from /proc/self/status.
func rssBytes(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestLoadLimits is issue 17's bounded load test, on a 10M-event trace
// (VIEWER_LOADTEST_EVENTS overrides): 20 sessions each asking for the
// largest viewport the limits allow must grow the RSS by at most 300 MB
// and give it back within 50 MB 10 s after they close; a `label ~ zzzz`
// search answers within 2 s, cut off; and 20 such searches at once leave
// a viewport request's p99 at most 50 ms. It runs only when
// VIEWER_LOADTEST is set:
//
//	VIEWER_LOADTEST=1 go test ./web -run TestLoadLimits -v
func TestLoadLimits(t *testing.T) {
	if os.Getenv("VIEWER_LOADTEST") == "" {
		t.Skip("set VIEWER_LOADTEST=1 to run the load test")
	}
	events := 10_000_000
	if v := os.Getenv("VIEWER_LOADTEST_EVENTS"); v != "" {
		events, _ = strconv.Atoi(v)
	}
	const tracks, width, sessions = 500, 3840, 20
	if tracks*(width+1) > render.MaxCells {
		t.Fatalf("the largest viewport is smaller than %d × %d", tracks, width)
	}
	ts := newTestServer(t, t.TempDir(), nil)
	data := fmt.Appendf(nil, "%sevents=%d seed=17 tracks=%d\n", synth.Magic, events, tracks)
	status, id, msg := ts.upload("limits.synth", data)
	if status != 201 {
		t.Fatalf("upload: %d %s", status, msg)
	}
	buildStart := time.Now()
	ti := ts.waitReady(id)
	t.Logf("indexed %d events in %v", ti.Stats.Events, time.Since(buildStart).Round(time.Millisecond))
	first, last := ti.Stats.FirstNS, ti.Stats.LastNS+1

	// 1. Twenty sessions, each the largest viewport.
	runtime.GC()
	debug.FreeOSMemory()
	rss0 := rssBytes(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := rssBytes(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	conns := make([]*websocket.Conn, sessions)
	var wg sync.WaitGroup
	var replyBytes atomic.Int64
	start := time.Now()
	for i := range conns {
		c, _, err := ts.dial(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		wg.Go(func() {
			// The clients share the process whose RSS is measured: they
			// stream the frames to nowhere instead of holding them.
			c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, first, last, width, tracks)))
			c.SetReadDeadline(time.Now().Add(time.Minute))
			for binary := 0; binary < 2; { // the tables, then the reply
				typ, r, err := c.NextReader()
				if err != nil {
					t.Error(err)
					return
				}
				if typ == websocket.TextMessage {
					b, _ := io.ReadAll(r)
					if bytes.Contains(b, []byte(`"cut_off":true`)) {
						t.Logf("a session's query was cut off: %s", b) // an answer within the budget
						return
					}
					if bytes.Contains(b, []byte(`"type":"error"`)) {
						t.Errorf("session: %s", b)
						return
					}
					continue
				}
				n, _ := io.Copy(io.Discard, r)
				if typ == websocket.BinaryMessage {
					binary++
					replyBytes.Store(n)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d sessions answered in %v, %d-byte replies", sessions, time.Since(start).Round(time.Millisecond), replyBytes.Load())
	for _, c := range conns {
		c.Close()
	}
	waitSessions(t, ts, 0)
	time.Sleep(10 * time.Second)
	close(stop)
	<-sampled
	rss10 := rssBytes(t)
	runtime.GC()
	debug.FreeOSMemory()
	rssFree := rssBytes(t)
	mb := func(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }
	t.Logf("RSS: start %s, peak %s (+%s), 10 s after close %s (+%s), after FreeOSMemory %s (+%s)",
		mb(rss0), mb(peak.Load()), mb(peak.Load()-rss0), mb(rss10), mb(rss10-rss0), mb(rssFree), mb(rssFree-rss0))
	if peak.Load()-rss0 > 300e6 {
		t.Errorf("RSS grew by %s with %d sessions, want ≤ 300 MB", mb(peak.Load()-rss0), sessions)
	}
	if rssFree-rss0 > 50e6 {
		t.Errorf("RSS 10 s after the sessions closed is %s above the start, want ≤ 50 MB", mb(rssFree-rss0))
	}

	// 2. One label search over the whole trace: cut off within 2 s.
	search := func() (int, searchReply, time.Duration) {
		start := time.Now()
		resp, b := ts.do("GET", "/api/traces/"+id+"/search?q=label+~+zzzz&limit=10000", nil)
		var out searchReply
		json.Unmarshal(b, &out)
		return resp.StatusCode, out, time.Since(start)
	}
	status, out, took := search()
	t.Logf("label ~ zzzz: %d in %v, cut_off %v, %d hits", status, took.Round(time.Millisecond), out.CutOff, len(out.Hits))
	if status != 200 || !out.CutOff || took > 2*time.Second {
		t.Errorf("label search: %d %+v in %v, want cut off within 2 s", status, out, took)
	}

	// 3. Twenty such searches at once, repeatedly, while a session pans.
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(1, first, last, 1600, 40)))
	readUntilReply(t, c) // the tables
	span := last - first
	pan := func(until time.Time) []time.Duration {
		var lat []time.Duration
		for seq := uint32(2); time.Now().Before(until); seq++ {
			w := span / int64(1+seq%50)
			s := first + (int64(seq)*7919*w/13)%(span-w+1)
			start := time.Now()
			c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(seq, s, s+w, 1600, 40)))
			readUntilReply(t, c)
			lat = append(lat, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
		slices.Sort(lat)
		return lat
	}
	p := func(lat []time.Duration, q float64) time.Duration {
		return lat[int(q*float64(len(lat)-1))].Round(10 * time.Microsecond)
	}
	base := pan(time.Now().Add(4 * time.Second))
	t.Logf("viewports alone: %d requests, p50 %v, p99 %v, max %v", len(base), p(base, 0.5), p(base, 0.99), base[len(base)-1])
	searchEnd := time.Now().Add(8 * time.Second)
	var statuses sync.Map
	var sw sync.WaitGroup
	for range 20 {
		sw.Go(func() {
			for time.Now().Before(searchEnd) {
				st, _, took := search()
				if took > 2*time.Second+500*time.Millisecond {
					t.Errorf("a search took %v", took)
				}
				n, _ := statuses.LoadOrStore(st, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // the searches are running
	lat := pan(searchEnd.Add(-500 * time.Millisecond))
	sw.Wait()
	counts := map[int]int64{}
	statuses.Range(func(k, v any) bool { counts[k.(int)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("viewports during 20 concurrent searches: %d requests, p50 %v, p99 %v, max %v; search statuses %v",
		len(lat), p(lat, 0.5), p(lat, 0.99), lat[len(lat)-1], counts)
	if p(lat, 0.99) > 50*time.Millisecond {
		t.Errorf("viewport p99 %v during searches, want ≤ 50 ms", p(lat, 0.99))
	}
	if counts[http.StatusOK] == 0 {
		t.Errorf("no search answered: %v", counts)
	}
}
