package nettrace

import (
	"bytes"
	"io"
	"testing"
)

func benchRead(b *testing.B, data []byte, details bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		n = 0
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
			n++
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkHeartRateMonitor streams the largest real file (29.6 MB).
func BenchmarkHeartRateMonitor(b *testing.B) {
	r, data := openReal(b, "perfview/HeartRateMonitor.10068.nettrace")
	_ = r
	b.Run("located", func(b *testing.B) { benchRead(b, data, false) })
	b.Run("decoded", func(b *testing.B) { benchRead(b, data, true) })
}
