package browser

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The checks below run against any page of the viewer: the frontend's test
// page with its generated trace, or the real server with its demo trace.

// ready is true once the viewer has drawn a frame of data.
const ready = `window.__viewer && window.__viewer.meta && window.__viewer.frame && window.__viewer.draws > 0`

// paintedPixels counts pixels of the plot area whose colour is far from the
// row background and is not a shade of grey (grid lines, text).
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

func checkDraws(t *testing.T, ctx context.Context, url, name string) {
	var painted int
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(paintedPixels, &painted),
	)
	shot(t, ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if painted < 2000 {
		t.Errorf("plot has %d glyph pixels, want at least 2000", painted)
	}
}

func checkKeysMoveView(t *testing.T, ctx context.Context, url string) {
	var url0, url1, url2 string
	var span0, span1 float64
	var start1, start2 string
	var earlier bool
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
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
	if err := chromedp.Run(ctx, eval(`window.__viewer.vp.start < BigInt(`+jsString(start1)+`)`, &earlier)); err != nil {
		t.Fatal(err)
	}
	if !(span1 < span0*0.7) {
		t.Errorf("W: span %v → %v, want it to shrink by 1/3", span0, span1)
	}
	if url1 == url0 || !strings.Contains(url1, "s=") {
		t.Errorf("W: URL %q → %q, want a new range", url0, url1)
	}
	if !earlier || url2 == url1 || !strings.Contains(url2, "s="+start2) {
		t.Errorf("A: start %s → %s, URL %q → %q: want an earlier start in the URL", start1, start2, url1, url2)
	}
	// Back returns to the previous view (g2's snapshots are the history).
	var back string
	err = chromedp.Run(ctx,
		chromedp.KeyEvent("["),
		waitJS(`location.search === `+jsString(url1)),
		waitJS(`String(window.__viewer.vp.start) === `+jsString(start1)),
		eval(`location.search`, &back),
	)
	if err != nil {
		t.Errorf("[ (back): %v", err)
	}
}

// glyphXY finds an isolated event glyph in the visible rows and returns its
// page coordinates and event id, or null.
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

// checkClickDetails zooms in with W until single events show, clicks one
// and expects the details panel to hold the wanted texts.
func checkClickDetails(t *testing.T, ctx context.Context, url string, want []string) {
	var g *glyph
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
	)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30 && g == nil; i++ {
		err := chromedp.Run(ctx,
			chromedp.KeyEvent("w"),
			waitJS(`window.__viewer.frame.nsPerPx < window.__viewer.vp.nsPerPx * 1.01`),
			eval(glyphXY, &g),
		)
		if err != nil {
			t.Fatal(err)
		}
	}
	if g == nil {
		t.Fatal("no isolated event glyph on screen after zooming in")
	}
	var text, sel, url2 string
	var bold int
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(g.X, g.Y),
		waitJS(`window.__viewer.selEvent !== null && window.__viewer.details !== null`),
		eval(`document.getElementById('details').textContent`, &text),
		eval(`document.querySelectorAll('#details b, #details script, #details img').length`, &bold),
		eval(`window.__viewer.selEvent.ref`, &sel),
		eval(`location.search`, &url2),
	)
	shot(t, ctx, "details")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("details panel lacks %q:\n%s", w, text)
		}
	}
	if bold != 0 {
		t.Error("a trace string was inserted as HTML")
	}
	if sel != g.Ref || !strings.Contains(url2, "sel="+sel) {
		t.Errorf("selected %s (URL %s), clicked %v", sel, url2, g.Ref)
	}
}

type viewSnap struct {
	Start, End, Sel, Order, Mode string
	Track                        int
}

const snapJS = `(() => {
  const v = window.__viewer;
  return {Start: String(v.vp.start), End: String(v.vp.end), Sel: v.selEvent ? v.selEvent.ref : '',
    Order: v.order.join(','), Mode: v.mode, Track: v.selTrack};
})()`

// checkReload sets up a view from the keyboard, then opens its URL in a
// new tab and expects the same range, selection, track order and mode.
func checkReload(t *testing.T, ctx, ctx2 context.Context, url string) {
	var href string
	var before, after viewSnap
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("www"),
		chromedp.KeyEvent("d"),
		chromedp.KeyEvent(kb.ArrowDown+kb.ArrowDown+kb.ArrowDown), // select the third track
		chromedp.KeyEvent("u"), // raise it
		waitJS(`window.__viewer.frame.tracks.has(window.__viewer.selTrack)`),
		chromedp.KeyEvent(kb.ArrowRight), // select its first event
		waitJS(`window.__viewer.selEvent !== null`),
		chromedp.KeyEvent("e"), // summary mode
		eval(snapJS, &before),
		eval(`location.href`, &href),
	)
	if err != nil {
		t.Fatal(err)
	}
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

// checkSearchNext searches from the keyboard and steps through the hits
// with N and Shift+N, wrapping around at the ends.
func checkSearchNext(t *testing.T, ctx context.Context, url, query string) {
	var hits int
	var first, second, want string
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("/"),
		// CDP sends the "/" character after the keydown that moved the
		// focus (a real keyboard's preventDefault suppresses it): clear it.
		waitJS(`document.activeElement.id === 'search' && document.getElementById('search').value === '/'`),
		eval(`document.getElementById('search').value = ''`, nil),
		chromedp.KeyEvent(query+"\r"),
		waitJS(`window.__viewer.selEvent !== null`),
		eval(`window.__viewer.hits.length`, &hits),
		eval(`window.__viewer.selEvent.ref`, &first),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Run(ctx,
		chromedp.KeyEvent(kb.Escape), // leave the search box
		chromedp.KeyEvent("n"),
		waitJS(`window.__viewer.selEvent.ref !== `+jsString(first)),
		eval(`window.__viewer.selEvent.ref`, &second),
		eval(`window.__viewer.hits[1].ref`, &want),
	)
	if err != nil {
		t.Fatal(err)
	}
	if hits < 3 {
		t.Fatalf("%d hits, want several", hits)
	}
	if first != wantFirst(t, ctx) {
		t.Errorf("Enter selected %s, want the first hit", first)
	}
	if second != want {
		t.Errorf("N selected %s, want the second hit %s (the first was %s)", second, want, first)
	}
	var wrapped string
	err = chromedp.Run(ctx,
		chromedp.KeyEvent("N", chromedp.KeyModifiers(input.ModifierShift)),
		chromedp.KeyEvent("N", chromedp.KeyModifiers(input.ModifierShift)),
		waitJS(`window.__viewer.selEvent.ref === window.__viewer.hits.at(-1).ref`),
		chromedp.KeyEvent("n"),
		waitJS(`window.__viewer.selEvent.ref === window.__viewer.hits[0].ref`),
		eval(`window.__viewer.selEvent.ref`, &wrapped),
	)
	shot(t, ctx, "search")
	if err != nil {
		t.Fatalf("wrapping around: %v", err)
	}
}

func wantFirst(t *testing.T, ctx context.Context) string {
	var s string
	if err := chromedp.Run(ctx, eval(`window.__viewer.hits[0].ref`, &s)); err != nil {
		t.Fatal(err)
	}
	return s
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			b.WriteString(strings.ToUpper(string("0123456789abcdef"[r>>12&15]) + string("0123456789abcdef"[r>>8&15]) + string("0123456789abcdef"[r>>4&15]) + string("0123456789abcdef"[r&15])))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// waitNav polls cond across page navigations (an evaluation fails while a
// page unloads).
func waitNav(ctx context.Context, cond string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var ok bool
		if err = chromedp.Run(ctx, chromedp.Evaluate(cond, &ok)); err == nil && ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return err
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
func itoa(i int) string     { return strconv.Itoa(i) }

// absDiff is |a-b| for decimal integers, as a float.
func absDiff(a, b string) float64 {
	x, _ := strconv.ParseFloat(a, 64)
	y, _ := strconv.ParseFloat(b, 64)
	return math.Abs(x - y)
}
