package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/web"
)

// The page items of issue 18: the details panel, name tooltips and the
// name column, the `?` overlay, drawn progress, one time base in details
// and overview marks beyond the hit cap.

// TestServerHelpOpensAtTop opens the `?` overlay in a window too short
// for it: the box must open scrolled to its top (focusing its Close
// button, the last thing in it, scrolled it to the bottom).
func TestServerHelpOpensAtTop(t *testing.T) {
	vs := newViewerServer(t)
	ctx := tab(t)
	var st struct{ Top, Client, Scroll float64 }
	var focused bool
	err := chromedp.Run(ctx,
		emulation.SetDeviceMetricsOverride(1280, 420, 1, false),
		chromedp.Navigate(vs.URL+"/t/"+vs.demo(t)),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("?"),
		waitJS(`!document.getElementById('help').hidden`),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`(() => { const b = document.querySelector('#help .help-box'); return {Top: b.scrollTop, Client: b.clientHeight, Scroll: b.scrollHeight}; })()`, &st),
		eval(`document.activeElement === window.__viewer.ui.helpClose`, &focused),
	)
	shot(t, ctx, "help-top")
	if err != nil {
		t.Fatal(err)
	}
	if st.Scroll <= st.Client+50 {
		t.Fatalf("the overlay fits its box (%v of %v px): the test needs one that scrolls", st.Scroll, st.Client)
	}
	if st.Top != 0 {
		t.Errorf("the overlay opened scrolled to %v px, want its top (0)", st.Top)
	}
	if !focused {
		t.Error("the overlay's Close button lost the focus (Esc and Enter close it)")
	}
}

// canvasH is the timeline's height in CSS px.
const canvasH = `window.__viewer.ui.canvas.getBoundingClientRect().height`

// TestServerDetailsCollapse collapses the details panel with its toggle:
// the timeline grows by the panel's height and shows more rows, the state
// survives a reload (localStorage), V opens it again, and dragging its bar
// up makes it taller.
func TestServerDetailsCollapse(t *testing.T) {
	vs := newViewerServer(t)
	url := vs.URL + "/t/" + vs.demo(t)
	ctx := tab(t)
	var h0, h1, h2, h3, d0, d3 float64
	var rows0, rows1 int
	var collapsed bool
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		eval(canvasH, &h0),
		eval(`document.getElementById('details').getBoundingClientRect().height`, &d0),
		eval(`window.__viewer.rowsVisible()`, &rows0),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Run(ctx,
		chromedp.Click("#details-toggle", chromedp.ByID),
		waitJS(canvasH+` > `+jsNum(h0+d0/2)+` && window.__viewer.renderer.cssH > `+jsNum(h0+d0/2)),
		eval(canvasH, &h1),
		eval(`window.__viewer.rowsVisible()`, &rows1),
	)
	shot(t, ctx, "details-collapsed")
	if err != nil {
		t.Fatalf("collapsing the details panel (canvas %v px, panel %v px): %v", h0, d0, err)
	}
	if d0 < 60 {
		t.Fatalf("the details panel is %v px high before collapsing", d0)
	}
	if h1 < h0+d0-2 || rows1 <= rows0 {
		t.Errorf("collapsed: canvas %v → %v px (panel was %v), rows %d → %d; want the panel's height and more rows", h0, h1, d0, rows0, rows1)
	}
	// A reload keeps it collapsed; V opens it.
	err = chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		eval(`document.getElementById('viewer').classList.contains('details-collapsed') && document.getElementById('details').hidden`, &collapsed),
		eval(canvasH, &h2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !collapsed || h2 < h1-2 {
		t.Errorf("after a reload: collapsed %v, canvas %v px (was %v)", collapsed, h2, h1)
	}
	var bar struct{ X, Y float64 }
	err = chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("v"),
		waitJS(`!document.getElementById('details').hidden && `+canvasH+` < `+jsNum(h2-d0/2)),
		eval(`(() => { const r = document.getElementById('details-bar').getBoundingClientRect(); return {X: r.right - 40, Y: r.top + r.height / 2}; })()`, &bar),
	)
	if err != nil {
		t.Fatalf("V did not open the panel again: %v", err)
	}
	// Drag the bar 120 px up.
	err = chromedp.Run(ctx,
		chromedp.MouseEvent(input.MousePressed, bar.X, bar.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, bar.X, bar.Y-60, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, bar.X, bar.Y-120, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, bar.X, bar.Y-120, chromedp.ButtonLeft),
		waitJS(`window.__viewer.renderer.cssH < `+jsNum(h0-100)),
		eval(`document.getElementById('details').getBoundingClientRect().height`, &d3),
		eval(canvasH, &h3),
	)
	shot(t, ctx, "details-dragged")
	if err != nil {
		t.Fatalf("dragging the details bar: %v", err)
	}
	if d3 < d0+110 || d3 > d0+130 || h3 > h0-110 {
		t.Errorf("dragged 120 px up: panel %v → %v px, canvas %v → %v px", d0, d3, h0, h3)
	}
}

// longTrack is a track name wider than any name column.
const longTrack = "vpp worker thread for ip4-input, ip4-lookup, ip6-rewrite and the interface-output graph nodes on numa node 0"

// newCPELServer serves a CPEL trace (written by cpeltest) whose first
// track has a long name.
func newCPELServer(t testing.TB) *viewerServer {
	t.Helper()
	w := &cpeltest.Writer{Date: 1700000000}
	st := w.StringTable("FileStrtab")
	w.EventDefs(st, []cpeltest.EventDef{{Code: 1, Name: "packet", Format: "len %u"}, {Code: 2, Name: "drop", Format: "%d"}})
	w.TrackDefs(st, []cpeltest.TrackDef{
		{ID: 0, Format: strings.TrimSuffix(longTrack, "0") + "%d"},
		{ID: 1, Format: "main %d"},
	})
	w.Events(st, 1_000_000, 20_000, func(i int) cpeltest.Record {
		return cpeltest.Record{Ticks: uint64(i) * 50, Track: uint32(i % 2), Code: uint32(1 + i%2), Datum: uint32(i)}
	})
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	return startViewerServer(t, web.Config{
		Formats:   []trace.Format{cpel.Format{}},
		MaxUpload: int64(len(file)),
		Demo:      func() (string, []byte) { return "long.cpel", file },
	})
}

// labelOf returns the page coordinates of a track's name on the canvas.
func labelOf(track int) string {
	return `(() => {
  const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect(), row = v.rows.indexOf(` + jsNum(float64(track)) + `) - v.top;
  return row < 0 ? null : {X: r.left + 20, Y: r.top + 38 + row * v.rowH + v.rowH / 2};
})()`
}

// TestServerTrackNameTooltip hovers a track name the column cuts short:
// the tooltip holds the full name. On the synthetic trace, hovering the
// renamed track shows its names over time, and selecting it shows its
// earlier names in the details panel.
func TestServerTrackNameTooltip(t *testing.T) {
	vs := newCPELServer(t)
	ctx := tab(t)
	var name, drawn, tip string
	var at *struct{ X, Y float64 }
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+vs.demo(t)),
		waitJS(ready),
		eval(`window.__viewer.meta.tracks[0].name`, &name),
		eval(`window.__viewer.renderer.fit(window.__viewer.meta.tracks[0].name, window.__viewer.labelW() - 10)`, &drawn),
		eval(labelOf(0), &at),
	)
	if err != nil {
		t.Fatal(err)
	}
	if name != longTrack || len(drawn) >= len(name) || at == nil {
		t.Fatalf("track 0 is named %q and drawn as %q at %v: the test needs a name the column cuts", name, drawn, at)
	}
	err = chromedp.Run(ctx,
		chromedp.MouseEvent(input.MouseMoved, at.X, at.Y),
		waitJS(`!document.getElementById('tip').hidden`),
		eval(`document.getElementById('tip').textContent`, &tip),
	)
	shot(t, ctx, "tooltip")
	if err != nil {
		t.Fatal(err)
	}
	// Off the names, the tooltip goes.
	err = chromedp.Run(ctx,
		chromedp.MouseEvent(input.MouseMoved, at.X+600, at.Y+5),
		waitJS(`document.getElementById('tip').hidden`),
	)
	if err != nil {
		t.Errorf("the tooltip stayed when the pointer left the names: %v", err)
	}
	if !strings.HasPrefix(tip, longTrack+"\n") && tip != longTrack {
		t.Errorf("tooltip %q, want the full name %q first", tip, longTrack)
	}

	// The synthetic trace's thread 1 was called "launcher", then "sh <init>".
	vs2 := newViewerServer(t)
	ctx2 := tab(t)
	var details string
	err = chromedp.Run(ctx2,
		chromedp.Navigate(vs2.URL+"/t/"+vs2.demo(t)),
		waitJS(ready),
		eval(labelOf(1), &at),
	)
	if err != nil || at == nil {
		t.Fatalf("track 1 not on screen (%v)", err)
	}
	err = chromedp.Run(ctx2,
		chromedp.MouseEvent(input.MouseMoved, at.X, at.Y),
		waitJS(`!document.getElementById('tip').hidden`),
		eval(`document.getElementById('tip').textContent`, &tip),
		chromedp.MouseClickXY(at.X, at.Y),
		waitJS(`window.__viewer.selTrack === 1`),
		eval(`document.getElementById('details').textContent`, &details),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tip, "launcher → sh <init> → thread 1") {
		t.Errorf("tooltip of the renamed track: %q, want its names oldest first", tip)
	}
	if !strings.Contains(details, "launcher → sh <init>") {
		t.Errorf("the selected track's details lack its earlier names:\n%s", details)
	}
}

// TestServerNameColumnResize drags the name column's edge 150 px right:
// the column widens, the plot narrows by as much, and the width stays
// after a reload.
func TestServerNameColumnResize(t *testing.T) {
	vs := newViewerServer(t)
	url := vs.URL + "/t/" + vs.demo(t)
	ctx := tab(t)
	var l0, l1, l2, w0, w1 float64
	var edge struct{ X, Y float64 }
	err := chromedp.Run(ctx,
		chromedp.Navigate(url),
		waitJS(ready),
		eval(`window.__viewer.labelW()`, &l0),
		eval(`window.__viewer.vp.width`, &w0),
		eval(`(() => { const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect(); return {X: r.left + v.labelW(), Y: r.top + 38 + v.rowH * 1.5}; })()`, &edge),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Run(ctx,
		chromedp.MouseEvent(input.MouseMoved, edge.X, edge.Y),
		chromedp.MouseEvent(input.MousePressed, edge.X, edge.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, edge.X+75, edge.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseMoved, edge.X+150, edge.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.MouseReleased, edge.X+150, edge.Y, chromedp.ButtonLeft),
		eval(`window.__viewer.labelW()`, &l1),
		eval(`window.__viewer.vp.width`, &w1),
		chromedp.Navigate(url),
		waitJS(ready),
		eval(`window.__viewer.labelW()`, &l2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if l1 < l0+148 || l1 > l0+152 || w1 > w0-148 {
		t.Errorf("dragged the edge 150 px: column %v → %v px, plot %v → %v px", l0, l1, w0, w1)
	}
	if l2 != l1 {
		t.Errorf("after a reload the column is %v px, was %v", l2, l1)
	}
	// A double click on the edge fits the names again.
	var l3 float64
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(edge.X+150, edge.Y, chromedp.ClickCount(2)),
		eval(`window.__viewer.labelW()`, &l3),
	)
	if err != nil {
		t.Fatal(err)
	}
	if l3 != l0 {
		t.Errorf("after a double click on the edge the column is %v px, want the names' %v", l3, l0)
	}
}

// TestServerDetailsTimeBase selects an event: its time in the details
// panel counts from the first event like the axis, with the absolute ns
// only in the title.
func TestServerDetailsTimeBase(t *testing.T) {
	vs := newViewerServer(t)
	ctx := tab(t)
	var st struct {
		Text, Title, Rel, Abs string
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+vs.demo(t)),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("www"),
		chromedp.KeyEvent(kb.ArrowDown),                              // the first track
		chromedp.KeyEvent(kb.ArrowRight+kb.ArrowRight+kb.ArrowRight), // its third event
		waitJS(`window.__viewer.details !== null`),
		eval(`(() => {
  const v = window.__viewer, dd = [...document.querySelectorAll('#details dt')].find(e => e.textContent === 'time').nextElementSibling;
  return {Text: dd.textContent, Title: dd.title, Rel: String(v.details.time - v.meta.first), Abs: String(v.details.time)};
})()`, &st),
	)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.Text, st.Abs) && st.Abs != st.Rel || strings.Contains(st.Text, "after") || strings.Contains(st.Text, "(") {
		t.Errorf("time shows %q: two time bases (absolute %s)", st.Text, st.Abs)
	}
	if !strings.HasPrefix(st.Title, st.Abs+" ns") {
		t.Errorf("time's title %q, want the absolute %s ns", st.Title, st.Abs)
	}
	if rel := relDigits(st.Text); rel != st.Rel {
		t.Errorf("time %q reads as %s ns after the first event, want %s", st.Text, rel, st.Rel)
	}
}

// relDigits reads "127.360123 ms" back as ns ("127360123").
func relDigits(s string) string {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return ""
	}
	digits := map[string]int{"s": 9, "ms": 6, "µs": 3, "ns": 0}[unit]
	whole, frac, _ := strings.Cut(num, ".")
	frac += strings.Repeat("0", max(0, digits-len(frac)))
	out := strings.TrimLeft(whole+frac, "0")
	if out == "" {
		return "0"
	}
	return out
}

// TestServerProgressDrawn uploads a large synthetic trace and opens it at
// once (issue #21, progressive first paint): while it indexes the page
// draws frames of the indexed prefix, the default view fitted to the
// prefix as it grows, and the toolbar shows the server's progress, its bar
// filled to the percentage shown (strictly between 0 and 100, rounded
// down) with the event count. Zooming works meanwhile and the zoomed view
// stays while the prefix grows; back to the whole view, the page shows
// the whole trace once indexing ends, the progress gone.
func TestServerProgressDrawn(t *testing.T) {
	const bigEvents = 20_000_000
	vs := newViewerServer(t)
	vs.demo(t)
	resp, err := http.Post(vs.URL+"/api/traces?name=big.synth", "application/octet-stream",
		strings.NewReader(fmt.Sprintf("SYNTH1 events=%d seed=5 tracks=16\n", bigEvents)))
	if err != nil {
		t.Fatal(err)
	}
	var up struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if up.ID == "" {
		t.Fatalf("upload: %s", resp.Status)
	}
	ctx := tab(t)
	var seen struct {
		Percent, Events, Bar float64
		BarHidden, Covers    bool
		Text                 string
		MetaEvents           float64
		Draws, Refits        int
	}
	// In the page: frames of the prefix drawn and refitted while indexing,
	// with the progress shown, read together.
	const watch = `new Promise((resolve, reject) => {
  const t0 = Date.now();
  const id = setInterval(() => {
    const v = window.__viewer;
    if (Date.now() - t0 > 30000) { clearInterval(id); reject(new Error('no frame of the prefix drawn with the progress the toolbar shows')); return; }
    if (!v || !v.meta || !v.frame || !v.draws || !v.live.indexing || v.live.refits < 2 || !v.progressDrawn) return;
    const p = v.progressDrawn;
    if (!(p.percent > 0 && p.percent < 100)) return;
    // The toolbar follows each progress message, the canvas shows the
    // report of its last draw: wait for a moment both show the same one
    // (a page whose two never agree times out).
    if (v.ui.progress.value !== p.percent) return;
    clearInterval(id);
    resolve({Percent: p.percent, Events: p.events, Bar: v.ui.progress.value, BarHidden: v.ui.progress.hidden,
      Covers: v.vp.start <= v.meta.first && v.vp.end >= v.meta.last, Text: v.ui.progressText.textContent,
      MetaEvents: v.meta.events, Draws: v.draws, Refits: v.live.refits});
  }, 10);
})`
	err = chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+up.ID),
		eval(watch, &seen),
	)
	shot(t, ctx, "progress")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drawn: %+v", seen)
	if !(seen.Percent > 0 && seen.Percent < 100) || seen.Events <= 0 {
		t.Errorf("progress shown %+v, want a percentage strictly between 0 and 100 with events, while indexing", seen)
	}
	// The server's share of the events (the synthetic reader knows their
	// number), rounded down.
	if want := math.Floor(100 * seen.Events / bigEvents); seen.Percent != want {
		t.Errorf("%v events of %d shown as %v %%, want %v %%", seen.Events, bigEvents, seen.Percent, want)
	}
	if seen.BarHidden || seen.Bar != seen.Percent {
		t.Errorf("the toolbar's bar is at %v (hidden %v), want %v", seen.Bar, seen.BarHidden, seen.Percent)
	}
	if !strings.Contains(seen.Text, " events") || !strings.Contains(seen.Text, fmt.Sprintf(" %v %%", seen.Percent)) || strings.Contains(seen.Text, "100 %") {
		t.Errorf("toolbar progress %q", seen.Text)
	}
	if seen.MetaEvents <= 0 || seen.MetaEvents >= bigEvents || !seen.Covers {
		t.Errorf("the prefix shown has %v events (covered by the view: %v), want a prefix fitted in the view", seen.MetaEvents, seen.Covers)
	}

	// Zooming in while indexing: a frame for the new view comes, and the
	// view stays as the prefix grows.
	var zoomed struct {
		Span  string
		Grown int
	}
	err = chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("w"),
		eval(`({Span: String(window.__viewer.vp.spanNs), Grown: window.__viewer.live.grown})`, &zoomed),
	)
	if err != nil {
		t.Fatal(err)
	}
	var still bool
	err = chromedp.Run(ctx, eval(`new Promise((resolve, reject) => {
  const t0 = Date.now();
  const id = setInterval(() => {
    const v = window.__viewer;
    if (!v.live.indexing) { clearInterval(id); resolve(false); return; }
    if (Date.now() - t0 > 20000) { clearInterval(id); reject(new Error('no frame of the zoomed view')); return; }
    if (v.live.grown > `+itoa(zoomed.Grown)+` && v.frame.seq === v.source.seq && String(v.vp.spanNs) === '`+zoomed.Span+`') { clearInterval(id); resolve(true); }
  }, 10);
})`, &still))
	if err != nil {
		t.Fatal(err)
	}
	if !still {
		t.Errorf("indexing ended before the zoomed view got a frame while the prefix grew")
	}

	// The whole view again: at the end, the whole trace, no progress.
	var end struct {
		Events   float64
		Last     string
		Covers   bool
		Text     string
		Hidden   bool
		Indexing bool
	}
	err = chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("0"),
		chromedp.Poll(`(() => { const v = window.__viewer; return !v.live.indexing && v.meta.events === `+itoa(bigEvents)+` && v.frame.seq === v.source.seq; })()`,
			nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(50*time.Second)),
		eval(`(() => { const v = window.__viewer; return {Events: v.meta.events, Last: String(v.meta.last),
  Covers: v.vp.start <= v.meta.first && v.vp.end >= v.meta.last, Text: v.ui.progressText.textContent,
  Hidden: v.ui.progress.hidden, Indexing: v.live.indexing}; })()`, &end),
	)
	shot(t, ctx, "progress-done")
	if err != nil {
		t.Fatalf("the whole trace was not shown after indexing: %v", err)
	}
	info := vs.info(t, up.ID)
	if info.State != "ready" || info.Stats == nil || info.Stats.Events != bigEvents {
		t.Errorf("after indexing the API says %+v", info)
	}
	if !end.Covers || end.Text != "" || !end.Hidden || end.Indexing {
		t.Errorf("after indexing the page shows %+v, want the whole trace in view and no progress", end)
	}
}

// TestServerOverviewBeyondHitCap searches for more than 10,000 events
// spread over the trace: the hit list stops at 10,000, but the overview
// strip marks hits in its last third too (counts per bin from the server).
func TestServerOverviewBeyondHitCap(t *testing.T) {
	vs := newViewerServer(t)
	ctx := tab(t)
	var st struct {
		Listed, Total int
		More          bool
		LastThird     int
		Text          string
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+vs.demo(t)),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("/"),
		waitJS(`document.activeElement.id === 'search'`),
		eval(`document.getElementById('search').value = ''`, nil),
		chromedp.KeyEvent("Synthetic-0\r"),
		// The whole trace's count, from the bins (the list's is 10,000).
		waitJS(`window.__viewer.m.hitTotal > window.__viewer.hits.length && window.__viewer.hits.length > 0`),
		eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))`, nil),
		eval(`(() => {
  const v = window.__viewer, c = v.ui.canvas, ctx = c.getContext('2d'), dpr = v.renderer.dpr, L = v.labelW();
  const probe = document.createElement('canvas').getContext('2d');
  probe.fillStyle = v.theme.hit; probe.fillRect(0, 0, 1, 1);
  const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
  const x0 = Math.ceil((L + (v.renderer.cssW - L) * 2 / 3) * dpr), x1 = Math.floor(v.renderer.cssW * dpr);
  const img = ctx.getImageData(x0, Math.round(2 * dpr), x1 - x0, Math.round(12 * dpr)).data;
  const cols = new Set();
  for (let i = 0; i < img.length; i += 4) if (Math.abs(img[i]-r) + Math.abs(img[i+1]-g) + Math.abs(img[i+2]-b) < 24) cols.add((i / 4) % (x1 - x0));
  return {Listed: v.hits.length, Total: v.m.hitTotal, More: v.m.hitsMore, LastThird: cols.size, Text: v.ui.hitCount.textContent};
})()`, &st),
	)
	shot(t, ctx, "overview-bins")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.Listed != 10000 || !st.More || st.Total <= 20000 {
		t.Fatalf("listed %d hits (more %v) of %d: the test needs a search past the 10,000 cap", st.Listed, st.More, st.Total)
	}
	if st.LastThird < 50 {
		t.Errorf("the overview marks %d pixel columns in its last third, want hits there", st.LastThird)
	}
	if !strings.Contains(st.Text, "hits") || strings.HasPrefix(st.Text, "10000") {
		t.Errorf("hit count %q, want the whole trace's", st.Text)
	}
	// Stepping counts among all the hits, not the 10,000 listed.
	var step string
	err = chromedp.Run(ctx,
		chromedp.KeyEvent("\r"),
		waitJS(`window.__viewer.ui.hitCount.textContent.startsWith('2 / ')`),
		eval(`window.__viewer.ui.hitCount.textContent`, &step),
	)
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 / " + commas(st.Total); step != want {
		t.Errorf("after Enter the hit count reads %q, want %q", step, want)
	}
}

// commas formats n with thousands separators, as toLocaleString('en-US').
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// jsNum is a number as JavaScript source.
func jsNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
