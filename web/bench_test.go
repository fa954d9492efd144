package web

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/trace"
	"viewer/trace/synth"
)

// BenchmarkViewportRoundTrip measures one client's viewport request to
// reply over a loopback websocket, sequentially: query, wire encoding,
// websocket framing and the client's read, on a 2-million-event trace,
// 40 visible tracks 1600 pixels wide, windows of random zoom.
func BenchmarkViewportRoundTrip(b *testing.B) {
	s, err := New(Config{
		DataDir: b.TempDir(), Formats: []trace.Format{synth.Format{}}, Static: testStatic,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	e, err := s.AddFile("bench.synth", strings.NewReader(fmt.Sprintf("%sevents=2000000 seed=3 tracks=64\n", synth.Magic)))
	if err != nil {
		b.Fatal(err)
	}
	j := s.ix.get(e)
	<-j.done
	_, idx := j.snapshot()
	first, last := int64(idx.stats.FirstNS), int64(idx.stats.LastNS)
	span := last - first
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/api/traces/"+e.ID.String()+"/ws", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var bytes int64
	seq := uint32(0)
	var server time.Duration
	for b.Loop() {
		seq++
		win := max(span>>uint(rng.IntN(16)), 1000)
		pos := first + rng.Int64N(max(span-win, 1))
		c.WriteMessage(websocket.TextMessage, []byte(viewportRequest(seq, pos, pos+win, 1600, 40)))
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			if typ == websocket.BinaryMessage && msg[3] == 2 {
				bytes += int64(len(msg))
				server += time.Duration(uint32(msg[36])|uint32(msg[37])<<8|uint32(msg[38])<<16|uint32(msg[39])<<24) * time.Microsecond
				break
			}
		}
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "frame-bytes")
	b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-µs")
}
