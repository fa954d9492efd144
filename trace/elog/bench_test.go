package elog

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"viewer/trace/elog/elogtest"
	"viewer/trace/tracetest"
)

// BenchmarkRead reads a generated 1M-event log: events only, then events
// with their details (arguments and text).
func BenchmarkRead(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "bench.elog")
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := richWriter()
	bw := bufio.NewWriterSize(fh, 1<<20)
	err = w.WriteFunc(bw, n, func(i int) elogtest.Event {
		x := uint64(uint32(i) * 2654435761)
		switch i % 4 {
		case 0:
			return elogtest.Event{Type: 0, Track: uint16(x % 3), Time: float64(i) * 1e-7, Args: []elogtest.Value{{N: x % 8}, {N: x}}}
		case 1:
			return elogtest.Event{Type: 2, Track: 1, Time: float64(i) * 1e-7, Args: []elogtest.Value{{N: 0}, {N: x % 256}}}
		case 2:
			return elogtest.Event{Type: 5, Track: 2, Time: float64(i) * 1e-7, Args: []elogtest.Value{{F: float64(x%1000) / 7}, {F: 0.25}}}
		}
		return elogtest.Event{Type: 6, Track: 0, Time: float64(i) * 1e-7, Args: []elogtest.Value{{S: "pkt from wk0"}}}
	})
	if err == nil {
		err = bw.Flush()
	}
	fh.Close()
	if err != nil {
		b.Fatal(err)
	}
	fh, _ = os.Open(path)
	defer fh.Close()
	st, _ := fh.Stat()
	for _, details := range []bool{false, true} {
		name := "events"
		if details {
			name = "details"
		}
		b.Run(name, func(b *testing.B) {
			start, cpu0 := time.Now(), tracetest.CPUTime()
			for range b.N {
				r, err := Format{}.Open(fh, st.Size())
				if err != nil {
					b.Fatal(err)
				}
				for {
					e, err := r.ReadEvent()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if details {
						if _, err := r.Details(e); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds()/1e6, "Mevents/s")
			b.ReportMetric(float64(n*b.N)/(tracetest.CPUTime()-cpu0).Seconds()/1e6, "Mevents/cpu-s")
		})
	}
}
