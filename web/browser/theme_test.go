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
