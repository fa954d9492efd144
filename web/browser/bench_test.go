package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

type benchResult struct {
	Median, P90 float64
	Rects       int
}

// BenchmarkFrame times the renderer drawing a dense 2000 px × 50 track
// viewport in headless Chromium (issue 8's target: median ≤ 8 ms). The
// reported ms/frame is the median of 60 draws, each including the
// rasterization that a getImageData forces.
func BenchmarkFrame(b *testing.B) {
	for _, c := range []struct{ name, glyphs, mode string }{
		{"empty", "none", "summary"},
		{"dense-aggregates", "dense", "summary"},
		{"events-summary", "events", "summary"},
		{"events-boxes", "events", "event"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := tab(b)
			srv := staticServer(b)
			if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dev.html"), waitJS(ready)); err != nil {
				b.Fatal(err)
			}
			var r benchResult
			for b.Loop() {
				js := fmt.Sprintf(`import('/js/bench.js').then(m => m.benchDraw({width: 2000, tracks: 50, frames: 60, glyphs: %q, mode: %q}))`, c.glyphs, c.mode)
				if err := chromedp.Run(ctx, eval(js, &r)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.Median, "ms/frame")
			b.ReportMetric(r.P90, "p90-ms/frame")
			b.ReportMetric(float64(r.Rects), "glyphs")
		})
	}
}
