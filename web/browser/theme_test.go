package browser

import (
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestFakeDarkTheme follows the system's dark preference: the canvas
// background turns dark and glyphs still draw.
func TestFakeDarkTheme(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var bg []int
	var painted int
	err := chromedp.Run(ctx,
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`[...window.__viewer.ui.canvas.getContext('2d').getImageData(window.__viewer.labelW() + 2, 40, 1, 1).data]`, &bg),
		eval(paintedPixels, &painted),
	)
	shot(t, ctx, "fake-dark")
	if err != nil {
		t.Fatal(err)
	}
	if len(bg) < 3 || bg[0]+bg[1]+bg[2] > 200 {
		t.Errorf("plot background %v is not dark", bg)
	}
	if painted < 2000 {
		t.Errorf("%d glyph pixels in the dark theme", painted)
	}
}

// TestFakeHighDPI draws at the device's pixel ratio: the backing store is
// twice the CSS size at devicePixelRatio 2, and glyphs still land.
func TestFakeHighDPI(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var ratio float64
	var painted int
	err := chromedp.Run(ctx,
		emulation.SetDeviceMetricsOverride(1280, 800, 2, false),
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`window.__viewer.ui.canvas.width / window.__viewer.ui.canvas.getBoundingClientRect().width`, &ratio),
		eval(paintedPixels, &painted),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ratio < 1.99 || ratio > 2.01 {
		t.Errorf("backing store is %.3f× the CSS width, want 2", ratio)
	}
	if painted < 8000 {
		t.Errorf("%d glyph pixels at 2× (want four times the 1× minimum)", painted)
	}
}
