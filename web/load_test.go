package web

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render/wire"
	"viewer/trace/synth"
)

// TestLoad is the bounded loopback load test of issue 7: many websocket
// clients, each sending viewport requests at a steady rate against a large
// trace. It runs only when VIEWER_LOADTEST is set (it takes about a
// minute and both cores):
//
//	VIEWER_LOADTEST=1 go test ./web -run TestLoad -v
//
// VIEWER_LOADTEST_EVENTS, _CLIENTS, _RATE (requests per second per
// client) and _SECONDS override the defaults of 10,000,000 events, 50
// clients, 20 requests per second and 30 seconds.
func TestLoad(t *testing.T) {
	if os.Getenv("VIEWER_LOADTEST") == "" {
		t.Skip("set VIEWER_LOADTEST=1 to run the load test")
	}
	env := func(key string, def int) int {
		if v := os.Getenv("VIEWER_LOADTEST_" + key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("VIEWER_LOADTEST_%s: %v", key, err)
			}
			return n
		}
		return def
	}
	events := env("EVENTS", 10_000_000)
	clients := env("CLIENTS", 50)
	rate := env("RATE", 20)
	seconds := env("SECONDS", 30)
	const tracks, visible, width = 64, 40, 1600

	ts := newTestServer(t, t.TempDir(), nil)
	data := fmt.Appendf(nil, "%sevents=%d seed=11 tracks=%d\n", synth.Magic, events, tracks)
	status, id, msg := ts.upload("load.synth", data)
	if status != 201 {
		t.Fatalf("upload: %d %s", status, msg)
	}
	buildStart := time.Now()
	ti := ts.waitReady(id)
	t.Logf("indexed %d events in %v", ti.Stats.Events, time.Since(buildStart).Round(time.Millisecond))
	first, last := ti.Stats.FirstNS, ti.Stats.LastNS
	span := last - first

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapInuse
	var heapMax, heapEnd uint64
	stopMem := make(chan struct{})
	memDone := make(chan struct{})
	go func() {
		defer close(memDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopMem:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				heapMax = max(heapMax, ms.HeapInuse)
			}
		}
	}()

	type result struct {
		lat, query       []time.Duration
		sent, got, fails int
	}
	results := make([]result, clients)
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for c := range clients {
		wg.Go(func() {
			r := &results[c]
			conn, _, err := ts.dial(id, nil)
			if err != nil {
				r.fails++
				return
			}
			defer conn.Close()
			rng := rand.New(rand.NewPCG(uint64(c), 99))
			var mu sync.Mutex
			sentAt := map[uint32]time.Time{}
			readDone := make(chan struct{})
			go func() {
				defer close(readDone)
				var hdr [wire.HeaderSize + 24]byte // the header and the reply's fields up to micros
				for {
					typ, rd, err := conn.NextReader()
					if err != nil {
						return
					}
					if typ != websocket.BinaryMessage {
						b, _ := io.ReadAll(rd)
						var m struct{ Type string }
						json.Unmarshal(b, &m)
						if m.Type == "error" || m.Type == "failed" {
							mu.Lock()
							r.fails++
							mu.Unlock()
						}
						continue
					}
					n, _ := io.ReadFull(rd, hdr[:])
					io.Copy(io.Discard, rd)
					b := hdr[:n]
					// Only the header: the clients share the server's two cores,
					// and tests elsewhere decode whole frames.
					now := time.Now()
					mu.Lock()
					if len(b) < wire.HeaderSize || b[0] != 'V' || b[1] != 'W' {
						r.fails++
					} else if seq := binary.LittleEndian.Uint32(b[4:]); wire.Kind(b[3]) == wire.KindReply {
						if at, ok := sentAt[seq]; ok {
							r.lat = append(r.lat, now.Sub(at))
							r.got++
						}
						if len(b) >= wire.HeaderSize+24 {
							r.query = append(r.query, time.Duration(binary.LittleEndian.Uint32(b[wire.HeaderSize+20:]))*time.Microsecond)
						}
						// older requests were superseded ("latest wins")
						for s := range sentAt {
							if s <= seq {
								delete(sentAt, s)
							}
						}
					}
					mu.Unlock()
				}
			}()
			// A user panning and zooming: a window of a random width
			// somewhere in the trace, sliding a little each request.
			win := max(span>>uint(rng.IntN(16)), 1000)
			pos := first + rng.Int64N(max(span-win, 1))
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for seq := uint32(1); time.Now().Before(deadline); seq++ {
				<-tick.C
				pos += win / 50
				if pos+win > last {
					pos = first
				}
				if rng.IntN(20) == 0 {
					win = max(span>>uint(rng.IntN(16)), 1000)
				}
				firstTrack := rng.IntN(tracks - visible + 1)
				ids := make([]int, visible)
				for i := range ids {
					ids[i] = firstTrack + i
				}
				tr, _ := json.Marshal(ids)
				req := fmt.Sprintf(`{"type":"viewport","seq":%d,"start":"%d","end":"%d","width":%d,"tracks":%s}`, seq, pos, pos+win, width, tr)
				mu.Lock()
				sentAt[seq] = time.Now()
				r.sent++
				mu.Unlock()
				if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
					mu.Lock()
					r.fails++
					mu.Unlock()
					return
				}
			}
			time.Sleep(500 * time.Millisecond) // let the last replies arrive
			conn.Close()
			<-readDone
		})
	}
	wg.Wait()
	close(stopMem)
	<-memDone
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapEnd = ms.HeapInuse

	var all, query []time.Duration
	sent, got, fails := 0, 0, 0
	for _, r := range results {
		all = append(all, r.lat...)
		query = append(query, r.query...)
		sent += r.sent
		got += r.got
		fails += r.fails
	}
	slices.Sort(all)
	slices.Sort(query)
	at := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	pct := func(p float64) time.Duration { return at(all, p) }
	t.Logf("%d clients x %d req/s x %ds: sent %d, answered %d (%.1f%%; the rest superseded by newer requests), errors %d",
		clients, rate, seconds, sent, got, 100*float64(got)/float64(max(sent, 1)), fails)
	t.Logf("reply latency: p50 %v, p90 %v, p99 %v, max %v", pct(0.5), pct(0.9), pct(0.99), pct(1))
	t.Logf("server query time: p50 %v, p90 %v, p99 %v", at(query, 0.5), at(query, 0.9), at(query, 0.99))
	t.Logf("heap in use: %.1f MiB after indexing, %.1f MiB peak, %.1f MiB after the run", mib(heap0), mib(heapMax), mib(heapEnd))
	if fails > 0 {
		t.Errorf("%d errors", fails)
	}
	if p99 := pct(0.99); p99 > 50*time.Millisecond {
		t.Errorf("p99 reply latency %v exceeds 50ms", p99)
	}
	if heapEnd > heap0+heap0/2+64<<20 {
		t.Errorf("heap grew from %.1f to %.1f MiB", mib(heap0), mib(heapEnd))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
