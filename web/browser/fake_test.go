package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// ready is true once the viewer has drawn a frame of data.
const ready = `window.__viewer && window.__viewer.meta && window.__viewer.frame && window.__viewer.draws > 0`

// TestFakeDraws opens the frontend's test page and checks that the canvas
// holds drawn glyphs: many pixels of the plot differ from the background.
func TestFakeDraws(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var painted int
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(paintedPixels, &painted),
	)
	if err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "fake-draws")
	if painted < 2000 {
		t.Errorf("plot has %d glyph pixels, want at least 2000", painted)
	}
}

// paintedPixels counts pixels of the plot area whose colour is far from the
// canvas background and from the row stripes and grid lines.
const paintedPixels = `(() => {
  const v = window.__viewer, c = v.ui.canvas, ctx = c.getContext('2d');
  const dpr = v.renderer.dpr, L = Math.ceil(v.labelW() * dpr), top = Math.ceil(38 * dpr);
  const img = ctx.getImageData(L, top, c.width - L, c.height - top).data;
  const bg = ctx.getImageData(L + 1, top + 1, 1, 1).data; // row 0 background
  let n = 0;
  for (let i = 0; i < img.length; i += 4) {
    const d = Math.abs(img[i] - bg[0]) + Math.abs(img[i+1] - bg[1]) + Math.abs(img[i+2] - bg[2]);
    const grey = Math.abs(img[i] - img[i+1]) < 12 && Math.abs(img[i+1] - img[i+2]) < 12;
    if (d > 60 && !grey) n++;
  }
  return n;
})()`

func TestFakeKeysMoveView(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var url0, url1, url2 string
	var span0, span1 float64
	var start1, start2 string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		eval(`location.search`, &url0),
		eval(`window.__viewer.vp.span`, &span0),
		chromedp.KeyEvent("w"),
		eval(`location.search`, &url1),
		eval(`window.__viewer.vp.span`, &span1),
		eval(`String(window.__viewer.vp.start)`, &start1),
		chromedp.KeyEvent("a"),
		eval(`location.search`, &url2),
		eval(`String(window.__viewer.vp.start)`, &start2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !(span1 < span0*0.7) {
		t.Errorf("W: span %v → %v, want it to shrink by 1/3", span0, span1)
	}
	if url1 == url0 || !strings.Contains(url1, "s=") {
		t.Errorf("W: URL %q → %q, want a new range", url0, url1)
	}
	if url2 == url1 || start2 >= start1 && len(start2) == len(start1) {
		t.Errorf("A: start %s → %s, URL %q → %q: want an earlier start in the URL", start1, start2, url1, url2)
	}
}
