package browser

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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

// glyphXY finds an individual event drawn in the visible rows and returns
// its page coordinates and id: {x, y, ref}, or null.
const glyphXY = `(() => {
  const v = window.__viewer, f = v.frame, r = v.ui.canvas.getBoundingClientRect();
  const n = v.rowsVisible(), L = v.labelW(), dx0 = Number(f.base - v.vp.start);
  for (let row = 0; row < n && v.top + row < v.rows.length; row++) {
    const sl = f.tracks.get(v.rows[v.top + row]);
    if (!sl) continue;
    let prev = -Infinity;
    for (let i = 0; i < sl.n; i++) {
      const x = (dx0 + sl.off[i]) / v.vp.nsPerPx;
      const next = i + 1 < sl.n ? (dx0 + sl.off[i+1]) / v.vp.nsPerPx : Infinity;
      // an isolated glyph: nothing within 20 px on either side
      if (x > 20 && x < v.vp.width - 40 && x - prev > 20 && next - x > 20) {
        let agg = false;
        for (let k = 0; k < sl.an; k++) {
          const a = (dx0 + sl.aoff[k]) / v.vp.nsPerPx;
          if (Math.abs(a - x) < 20) agg = true;
        }
        if (!agg) return {x: r.left + L + x + 1, y: r.top + 38 + row * v.rowH + v.rowH / 2, ref: v.rows[v.top + row] + ':' + sl.first[i]};
      }
      prev = x;
    }
  }
  return null;
})()`

type glyph struct {
	X, Y float64
	Ref  string
}

// TestFakeClickShowsDetails clicks an event and expects its decoded fields
// in the details panel, with trace text shown as text (not HTML).
func TestFakeClickShowsDetails(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var g *glyph
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		// Zoom in until isolated events are drawn.
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("wwwwwwww"),
		waitJS(`window.__viewer.frame.nsPerPx < window.__viewer.vp.nsPerPx * 1.01`),
		eval(glyphXY, &g),
	)
	if err != nil {
		t.Fatal(err)
	}
	if g == nil {
		t.Fatal("no isolated event glyph on screen")
	}
	var text, sel, url string
	var bold int
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(g.X, g.Y),
		waitJS(`window.__viewer.selEvent !== null`),
		eval(`document.getElementById('details').textContent`, &text),
		eval(`document.querySelectorAll('#details b').length`, &bold),
		eval(`String(window.__viewer.selEvent.ref)`, &sel),
		eval(`location.search`, &url),
	)
	if err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "fake-details")
	for _, want := range []string{"datum", "<b>not html</b>", "Stack", "coreclr!GCHeap::Alloc", "ActivityId", "Raw bytes"} {
		if !strings.Contains(text, want) {
			t.Errorf("details panel lacks %q:\n%s", want, text)
		}
	}
	if bold != 0 {
		t.Error("a trace string was inserted as HTML")
	}
	if sel != g.Ref || !strings.Contains(url, "sel="+sel) {
		t.Errorf("selected %s (URL %s), clicked %v", sel, url, g.Ref)
	}
}

// TestFakeReloadRestores selects an event, reloads the copied URL in a new
// tab and expects the same range, selection, filter and track order.
func TestFakeReloadRestores(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var href string
	var before, after viewSnap
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("www"),
		chromedp.KeyEvent("d"),
		chromedp.KeyEvent(kb.ArrowDown+kb.ArrowDown+kb.ArrowDown), // select the third track
		chromedp.KeyEvent("u"),                                    // raise it
		chromedp.KeyEvent(kb.ArrowRight),                          // select its first event
		waitJS(`window.__viewer.selEvent !== null`),
		chromedp.KeyEvent("e"), // summary mode
		eval(snapJS, &before),
		eval(`location.href`, &href),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx2 := tab(t)
	err = chromedp.Run(ctx2,
		chromedp.Navigate(href),
		waitJS(ready+` && window.__viewer.selEvent !== null`),
		eval(snapJS, &after),
	)
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("after reload\n got %+v\nwant %+v", after, before)
	}
	if before.Order == "" || before.Sel == "" || before.Mode != "summary" {
		t.Errorf("test did not set up the view: %+v", before)
	}
}

type viewSnap struct {
	Start, End, Sel, Order, Mode string
	Track                        int
}

const snapJS = `(() => {
  const v = window.__viewer;
  return {Start: String(v.vp.start), End: String(v.vp.end), Sel: v.selEvent ? String(v.selEvent.ref) : '',
    Order: v.order.join(','), Mode: v.mode, Track: v.selTrack};
})()`

// TestFakeSearchNext searches from the keyboard and steps through hits with
// N, wrapping around at the end.
func TestFakeSearchNext(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var hits int
	var first, second, last, wrapped string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("/"),
		// CDP sends the "/" character after the keydown that moved the
		// focus (a real keyboard's preventDefault suppresses it): clear it.
		waitJS(`document.activeElement.id === 'search' && document.getElementById('search').value === '/'`),
		eval(`document.getElementById('search').value = ''`, nil),
		chromedp.KeyEvent("#80 && index<40\r"), // ExceptionThrown among each track's first 40 events
		waitJS(`window.__viewer.selEvent !== null`),
		eval(`window.__viewer.hits.length`, &hits),
		eval(`String(window.__viewer.selEvent.ref)`, &first),
		chromedp.KeyEvent(kb.Escape), // leave the search box
		chromedp.KeyEvent("n"),
		waitJS(`String(window.__viewer.selEvent.ref) !== `+strconv.Quote(first)),
		eval(`String(window.__viewer.selEvent.ref)`, &second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if hits < 3 {
		t.Fatalf("%d hits, want several", hits)
	}
	var want string
	if err := chromedp.Run(ctx, eval(`String(window.__viewer.hits[1].ref)`, &want)); err != nil {
		t.Fatal(err)
	}
	if second != want {
		t.Errorf("N selected %s, want the second hit %s", second, want)
	}
	// Step to the last hit with Shift+N from the first, then N wraps to the first.
	err = chromedp.Run(ctx,
		chromedp.KeyEvent("N", chromedp.KeyModifiers(input.ModifierShift)),
		chromedp.KeyEvent("N", chromedp.KeyModifiers(input.ModifierShift)),
		waitJS(`window.__viewer.selEvent.ref === window.__viewer.hits.at(-1).ref`),
		eval(`String(window.__viewer.selEvent.ref)`, &last),
		chromedp.KeyEvent("n"),
		waitJS(`window.__viewer.selEvent.ref === window.__viewer.hits[0].ref`),
		eval(`String(window.__viewer.selEvent.ref)`, &wrapped),
	)
	if err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "fake-search")
	if wrapped != first {
		t.Errorf("N from the last hit %s went to %s, want the first %s", last, wrapped, first)
	}
}

// TestFakeHelpOverlay opens the key list with ? and closes it with Escape.
func TestFakeHelpOverlay(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	var open, closed bool
	var text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("?"),
		eval(`!document.getElementById('help').hidden`, &open),
		chromedp.Text("#help", &text, chromedp.ByID),
		chromedp.KeyEvent(kb.Escape),
		eval(`document.getElementById('help').hidden`, &closed),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !open || !closed {
		t.Errorf("help overlay open=%v closed after Esc=%v", open, closed)
	}
	for _, want := range []string{"zoom in", "chase", "Shift+drag"} {
		if !strings.Contains(text, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
