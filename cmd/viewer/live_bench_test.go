package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render/wire"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/ui"
	"viewer/web"
)

// BenchmarkLiveLatency streams a generated pipe-mode perf.data recording
// into the server at a sustained rate (VIEWER_LIVE_RATE events/s, default
// 1M) and measures, for every 10 ms piece written, the time until a
// session in chase mode receives a frame that reaches the piece's newest
// event: p50/p99 latency, the ingest rate reached (events over the time
// until the server had read the last piece; the pipe blocks the writer
// while the server falls behind) and the end-to-end rate (until the
// recording is stored and indexed again from its file).
//
//	go test ./cmd/viewer -run '^$' -bench LiveLatency -benchtime 1x
func BenchmarkLiveLatency(b *testing.B) {
	const events = 4_000_000
	rate := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("VIEWER_LIVE_RATE")); err == nil && v >= 100 && v <= events {
		rate = v
	}
	var buf bytes.Buffer
	if err := perftest.Generate(&buf, events, perftest.GenerateOptions{Pipe: true, RoundSize: 2000, SchedEvery: 8}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	// The time of the newest event whose payload ends by each offset.
	type mark struct {
		end  int64
		time int64
	}
	var marks []mark
	rd, err := perf.NewReader(bytes.NewReader(data), int64(len(data)), perf.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for e, err := rd.ReadEvent(); err == nil; e, err = rd.ReadEvent() {
		marks = append(marks, mark{e.Payload.Off + int64(e.Payload.Len), int64(e.Time)})
	}
	slices.SortFunc(marks, func(a, b mark) int { return int(a.end - b.end) })
	for i := 1; i < len(marks); i++ {
		marks[i].time = max(marks[i].time, marks[i-1].time)
	}
	newestBy := func(off int64) int64 {
		i := sort.Search(len(marks), func(i int) bool { return marks[i].end > off })
		if i == 0 {
			return -1
		}
		return marks[i-1].time
	}

	for b.Loop() {
		srv, err := web.New(web.Config{DataDir: b.TempDir(), Formats: formats(), Derive: deriver, Static: ui.Static(),
			MaxUpload: 1 << 34, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		pr, pw := io.Pipe()
		e, stored, err := srv.Ingest(web.LiveSource{Name: "bench.data", R: pr})
		if err != nil {
			b.Fatal(err)
		}
		type piece struct {
			at     time.Time
			newest int64
		}
		pieces := make(chan piece, 1<<16)
		start := time.Now()
		ingested := make(chan time.Duration, 1)
		go func() {
			per := int(int64(len(data)) * int64(rate) / events / 100) // bytes per 10 ms
			for off := 0; off < len(data); off += per {
				due := start.Add(time.Duration(off/per) * 10 * time.Millisecond)
				time.Sleep(time.Until(due))
				end := min(off+per, len(data))
				pw.Write(data[off:end])
				pieces <- piece{time.Now(), newestBy(int64(end))}
			}
			ingested <- time.Since(start)
			pw.Close()
			close(pieces)
		}()
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/api/traces/"+e.ID.String()+"/ws", nil)
		if err != nil {
			b.Fatal(err)
		}
		const window = 100_000_000 // ns shown
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"viewport","seq":1,"start":"0","end":"100000000","width":2000,"tracks":[0,1,2,3,4,5,6,7,8,9],"types":[],"chase":true}`))
		var pending []piece
		var lat []time.Duration
		open := true
		for open {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			typ, msg, err := c.ReadMessage()
			if err != nil {
				break
			}
			for more := true; more; {
				select {
				case p, ok := <-pieces:
					if !ok {
						open, more = false, false
						break
					}
					pending = append(pending, p)
				default:
					more = false
				}
			}
			if typ != websocket.BinaryMessage {
				if bytes.Contains(msg, []byte(`"ended":true`)) {
					break
				}
				continue
			}
			f, err := wire.Decode(msg)
			if err != nil || f.Kind != wire.KindReply {
				continue
			}
			now := time.Now()
			reach := f.Reply.Start + window
			k := 0
			for k < len(pending) && pending[k].newest >= 0 && pending[k].newest < reach {
				lat = append(lat, now.Sub(pending[k].at))
				k++
			}
			pending = pending[k:]
		}
		<-stored
		elapsed := time.Since(start)
		c.Close()
		hs.Close()
		srv.Close()
		if len(lat) == 0 {
			b.Fatal("no latency measured")
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		b.ReportMetric(float64(events)/(<-ingested).Seconds(), "ingest-events/s")
		b.ReportMetric(float64(events)/elapsed.Seconds(), "stored-events/s")
		b.ReportMetric(float64(len(lat)), "pieces")
	}
}
