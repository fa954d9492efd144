package browser

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/trace/perf"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
	"viewer/trace/synth"
	"viewer/trace/tracetest"
	"viewer/web"
)

// The page's derived tracks (issue #15): CPU and thread-state tracks of a
// perf sched recording, activity slices of the demo trace, a counter's
// peak zoomed out, flow arrows, grouping and slice details, all against
// the real server.

// newSchedServer serves a scheduler recording written by perftest's
// GenerateSched (2 CPUs, 3 threads each) with perf's sched deriver, as
// `viewer serve` derives perf.data files.
func newSchedServer(t testing.TB) *viewerServer {
	t.Helper()
	return newSchedServerN(t, 4000, 2, 3)
}

// newSchedServerN serves a GenerateSched recording of n samples on cpus
// processors running threads threads each.
func newSchedServerN(t testing.TB, n int64, cpus, threads int) *viewerServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sched.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := perftest.GenerateSched(f, n, cpus, threads); err != nil {
		t.Fatal(err)
	}
	f.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return startViewerServer(t, web.Config{
		Formats:   []trace.Format{perf.Format{}},
		MaxUpload: int64(len(file)),
		Demo:      func() (string, []byte) { return "sched.data", file },
		Derive: func(r trace.Reader) span.Deriver {
			if p, ok := r.(*perf.Reader); ok {
				return perf.NewSched(p)
			}
			return nil
		},
	})
}

// newActivityServer serves the viewer's demo trace with the .NET
// activity deriver, as `viewer serve` does.
func newActivityServer(t testing.TB) *viewerServer {
	t.Helper()
	demo, err := os.ReadFile("../../cmd/viewer/demo.nettrace")
	if err != nil {
		t.Fatal(err)
	}
	return startViewerServer(t, web.Config{
		Formats:   []trace.Format{nettrace.Format{}},
		Symbols:   func(trace.Reader) render.SymbolSource { return clr.NewSymbols() },
		MaxUpload: int64(len(demo)),
		Demo:      func() (string, []byte) { return "demo.nettrace", demo },
		Derive:    func(trace.Reader) span.Deriver { return clr.NewActivities() },
	})
}

// spansReady: the page knows the derived tracks and has drawn a frame of them.
const spansReady = ready + ` && window.__viewer.derived.length > 0 && window.__viewer.spans !== null && window.__viewer.spanDraws > 0`

// pixelJS defines px(x, y): the canvas colour at CSS (x, y) as [r, g, b],
// and css(c): a CSS colour as [r, g, b].
const pixelJS = `
const v = window.__viewer, cv = v.ui.canvas, dpr = v.renderer.dpr;
v.draw(); // the pixels of the state read below
const img = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height);
const px = (x, y) => { const i = (Math.round(y * dpr) * cv.width + Math.round(x * dpr)) * 4; return [img.data[i], img.data[i+1], img.data[i+2]]; };
const probe = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
const css = (c) => { probe.fillStyle = '#000'; probe.fillStyle = c; probe.fillRect(0, 0, 1, 1); return [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)]; };
const near = (a, b) => Math.abs(a[0]-b[0]) + Math.abs(a[1]-b[1]) + Math.abs(a[2]-b[2]) < 24;
const rowY = (row) => 38 + (row - v.top) * v.rowH;
`

// TestServerSchedTracks: a perf sched recording shows CPU tracks (in a
// group of their own, at the top) with the running threads as slices in
// each thread's colour, and thread-state tracks under their threads with
// the state colours; the state legend is drawn.
func TestServerSchedTracks(t *testing.T) {
	vs := newSchedServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	// 40 µs from the start: whole slices, several switches per CPU.
	var res struct {
		CPURows, StateRows, Groups int
		FirstGroup                 string
		CPUChecked, CPUOK          int
		States                     map[string]int
		StateOK                    map[string]int
		Legend                     bool
		Bad                        []string
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(spansReady),
		eval(`(() => { const v = window.__viewer; const a = v.meta.first + 2000n; v.setView(v.vp.constructor.fromRange(a, a + 40000n, v.vp.width), 'push'); })()`, nil),
		waitJS(`window.__viewer.spans.to - window.__viewer.spans.from < 200000n && window.__viewer.draws > 2`),
		eval(`new Promise(r => setTimeout(r, 300))`, nil),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`(async () => {`+pixelJS+`
  const { layoutItems, stateColor } = await import('/static/js/spans.js');
  const { sliceColor } = await import('/static/js/spandraw.js');
  const { rowKind } = await import('/static/js/groups.js');
  const out = {CPURows: 0, StateRows: 0, Groups: v.groups.length, FirstGroup: v.groups[0]?.name ?? '', CPUChecked: 0, CPUOK: 0, States: {}, StateOK: {}, Legend: false, Bad: []};
  const L = v.labelW(), dark = v.theme.dark;
  const n = Math.min(v.rows.length, v.top + v.rowsVisible());
  for (let row = v.top; row < n; row++) {
    const k = rowKind(v.rows[row]);
    if (k.kind !== 'derived') continue;
    const st = v.spans.tracks.get(k.id);
    if (!st) continue;
    const kind = st.track.kind;
    if (kind === 'cpu') out.CPURows++;
    if (kind === 'state') out.StateRows++;
    for (const b of layoutItems(st.items, st.depths, v.vp, v.rowH)) {
      if (b.item.summary || b.x1 - b.x0 < 6 || b.x0 < 2 || b.x1 > v.vp.width - 2) continue;
      const x = L + b.x0 + 2, y = rowY(row) + b.y + 2;
      const want = css(sliceColor(kind, b.item, dark)), got = px(x, y);
      if (kind === 'cpu') {
        out.CPUChecked++;
        if (near(got, want)) out.CPUOK++; else out.Bad.push('cpu ' + b.item.name + ' ' + got + ' want ' + want);
      } else if (kind === 'state') {
        out.States[b.item.name] = (out.States[b.item.name] ?? 0) + 1;
        if (near(got, css(stateColor(b.item.name, dark)))) out.StateOK[b.item.name] = (out.StateOK[b.item.name] ?? 0) + 1;
        else out.Bad.push('state ' + b.item.name + ' ' + got);
      }
    }
  }
  // The legend: the running colour in the plot's bottom right corner.
  const run = css(stateColor('running', dark));
  for (let y = v.renderer.cssH - 24; y < v.renderer.cssH && !out.Legend; y++)
    for (let x = v.labelW(); x < v.renderer.cssW; x++) if (near(px(x, y), run)) { out.Legend = true; break; }
  return out;
})()`, &res),
	)
	shot(t, ctx, "spans-sched")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.FirstGroup != "CPUs" || res.CPURows != 2 {
		t.Errorf("first group %q with %d CPU rows shown, want the group CPUs with 2", res.FirstGroup, res.CPURows)
	}
	if res.CPUChecked < 4 || res.CPUOK != res.CPUChecked {
		t.Errorf("%d of %d running-thread slices drawn in their thread's colour, want all of at least 4: %v", res.CPUOK, res.CPUChecked, res.Bad)
	}
	if res.StateRows < 3 {
		t.Errorf("%d thread-state rows shown, want the visible threads' states", res.StateRows)
	}
	for _, s := range []string{"running", "runnable"} {
		if res.States[s] == 0 || res.StateOK[s] != res.States[s] {
			t.Errorf("state %s: %d of %d slices in its colour: %v", s, res.StateOK[s], res.States[s], res.Bad)
		}
	}
	if !res.Legend {
		t.Error("no state legend drawn")
	}
}

// TestServerGroupCollapse: threads are grouped under their process; a
// click on a group's header collapses it (its rows go) and `-` expands it
// again.
func TestServerGroupCollapse(t *testing.T) {
	vs := newActivityServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	var before, collapsed, after int
	var hd struct {
		Name string
		X, Y float64
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(spansReady),
		eval(`window.__viewer.rows.length`, &before),
		eval(`(async () => { const { rowKind } = await import('/static/js/groups.js'); const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect();
  const i = v.rows.findIndex((r) => rowKind(r).kind === 'group');
  return {Name: v.groups[rowKind(v.rows[i]).id].name, X: r.left + 20, Y: r.top + 38 + (i - v.top) * v.rowH + v.rowH / 2}; })()`, &hd),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(hd.X, hd.Y),
		waitJS(`window.__viewer.rows.length < `+itoa(before)),
		eval(`window.__viewer.rows.length`, &collapsed),
		chromedp.KeyEvent("-"),
		waitJS(`window.__viewer.rows.length === `+itoa(before)),
		eval(`window.__viewer.rows.length`, &after),
	)
	shot(t, ctx, "spans-groups")
	if err != nil {
		t.Fatalf("%v (rows %d → %d → %d)", err, before, collapsed, after)
	}
	if hd.Name != "process 4242" {
		t.Errorf("first group %q, want the demo's process 4242", hd.Name)
	}
	if collapsed != 1 {
		t.Errorf("%d rows with the one group collapsed, want its header alone", collapsed)
	}

	// H on a derived row (its name clicked) hides it; the URL keeps it
	// (xd) and a reload restores the view without it.
	var d struct {
		X, Y  float64
		Track int
	}
	err = chromedp.Run(ctx, eval(`(async () => { const { rowKind } = await import('/static/js/groups.js'); const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect();
  const i = v.rows.findIndex((r) => rowKind(r).kind === 'derived');
  return {X: r.left + 30, Y: r.top + 38 + (i - v.top) * v.rowH + v.rowH / 2, Track: rowKind(v.rows[i]).id}; })()`, &d))
	if err != nil {
		t.Fatal(err)
	}
	var search string
	var rows int
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(d.X, d.Y),
		chromedp.KeyEvent("h"),
		waitJS(`window.__viewer.rows.length === `+itoa(before-1)),
		waitJS(`location.search.includes('xd=')`),
		eval(`location.search`, &search),
		chromedp.Reload(),
		waitJS(spansReady),
		eval(`window.__viewer.rows.length`, &rows),
	)
	if err != nil {
		t.Fatalf("hiding derived track %d: %v (URL %q)", d.Track, err, search)
	}
	if !strings.Contains(search, "xd="+itoa(d.Track)) || rows != before-1 {
		t.Errorf("after hiding derived track %d: URL %q, %d rows after a reload, want xd=%d and %d rows", d.Track, search, rows, d.Track, before-1)
	}
}

// TestServerActivitySlices: the demo trace shows the request activities
// as slices under their threads; clicking one shows its name, both ends'
// fields and its duration, as GET /spans/{track}/{slice} gives them.
func TestServerActivitySlices(t *testing.T) {
	vs := newActivityServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	var hit struct {
		X, Y         float64
		X0, X1       float64
		Track, Slice int
		Name         string
		Rows         int
	}
	var text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(spansReady),
		eval(`(() => { const v = window.__viewer; const a = v.meta.first + 5000000n; v.setView(v.vp.constructor.fromRange(a, a + 20000000n, v.vp.width), 'push'); })()`, nil),
		waitJS(`window.__viewer.spans.to - window.__viewer.spans.from < 50000000n`),
		eval(`new Promise(r => setTimeout(r, 200))`, nil),
		eval(`(async () => {
  const { layoutItems } = await import('/static/js/spans.js');
  const { rowKind } = await import('/static/js/groups.js');
  const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect(), L = v.labelW();
  let rows = 0, best = null;
  const n = Math.min(v.rows.length, v.top + v.rowsVisible());
  for (let row = v.top; row < n; row++) {
    const k = rowKind(v.rows[row]);
    if (k.kind !== 'derived') continue;
    const st = v.spans.tracks.get(k.id);
    if (!st || st.track.kind !== 'slices') continue;
    rows++;
    for (const b of layoutItems(st.items, st.depths, v.vp, v.rowH))
      if (!best && !b.item.summary && b.x1 - b.x0 > 10 && b.x0 > 0 && b.x1 < v.vp.width)
        best = {X0: r.left + L + b.x0, X1: r.left + L + b.x1, X: r.left + L + (b.x0 + b.x1) / 2, Y: r.top + 38 + (row - v.top) * v.rowH + b.y + b.h / 2, Track: k.id, Slice: b.item.slice, Name: b.item.name};
  }
  return {...(best ?? {X: 0, Y: 0, Track: -1, Slice: -1, Name: ''}), Rows: rows};
})()`, &hit),
	)
	if err != nil {
		t.Fatal(err)
	}
	if hit.Rows < 2 || hit.Track < 0 {
		t.Fatalf("%d activity rows in view and no whole slice to click: %+v", hit.Rows, hit)
	}
	if !strings.HasPrefix(hit.Name, "Demo-Checkout/") {
		t.Errorf("the activity slice is named %q, want a Demo-Checkout request", hit.Name)
	}
	err = chromedp.Run(ctx,
		chromedp.MouseClickXY(hit.X, hit.Y),
		waitJS(`window.__viewer.sliceDetails !== null`),
		eval(`document.getElementById('details').textContent`, &text),
	)
	shot(t, ctx, "spans-activity")
	if err != nil {
		t.Fatal(err)
	}
	var sl struct {
		Name       string `json:"name"`
		DurationNS int64  `json:"duration_ns"`
		Start      int64  `json:"start"`
		End        int64  `json:"end"`
		Args       []struct{ Name, Value string }
	}
	getJSON(t, fmt.Sprintf("%s/api/traces/%s/spans/%d/%d", vs.URL, id, hit.Track, hit.Slice), &sl)
	want := []string{sl.Name, "Start fields", "End fields", commas(int(sl.DurationNS)) + " ns"}
	for _, a := range sl.Args {
		want = append(want, strings.TrimPrefix(a.Name, "end."), a.Value)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("details lack %q:\n%s", w, text)
		}
	}
	// The ruler (right drag) from 3 px inside the slice's start to 3 px
	// inside its end snaps to both edges: it measures the slice exactly.
	var ruler struct{ T0, T1 string }
	err = chromedp.Run(ctx,
		drag(hit.X0+3, hit.X1-3, hit.Y, input.Right, 0),
		waitJS(`window.__viewer.ruler !== null`),
		eval(`({T0: String(window.__viewer.ruler.t0), T1: String(window.__viewer.ruler.t1)})`, &ruler),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ruler.T0 != fmt.Sprint(sl.Start) || ruler.T1 != fmt.Sprint(sl.End) {
		t.Errorf("the ruler measures %s to %s, want the slice's edges %d to %d", ruler.T0, ruler.T1, sl.Start, sl.End)
	}
	// → selects the next slice of the track, ← the previous again.
	var next, back struct{ Slice int }
	err = chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent(kb.ArrowRight),
		waitJS(`window.__viewer.sliceDetails.slice !== `+itoa(hit.Slice)),
		eval(`({Slice: window.__viewer.sliceDetails.slice})`, &next),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Run(ctx,
		chromedp.KeyEvent(kb.ArrowLeft),
		waitJS(`window.__viewer.sliceDetails.slice !== `+itoa(next.Slice)),
		eval(`({Slice: window.__viewer.sliceDetails.slice})`, &back),
	)
	if err != nil {
		t.Fatal(err)
	}
	if next.Slice <= hit.Slice || back.Slice != hit.Slice {
		t.Errorf("→ then ← from slice %d: %d then %d", hit.Slice, next.Slice, back.Slice)
	}
}

// peakDeriver makes one counter track of the synthetic events' values
// with a single spike far above the rest, and records every sample for
// the brute force.
type peakDeriver struct {
	n       int
	samples []span.Sample
}

const peakAt, peakValue = 777, 1e6

func (d *peakDeriver) Observe(r trace.Reader, e trace.Event, b *span.Builder) {
	c := b.Track(span.Track{Kind: span.KindCounter, Name: "value", Of: trace.NoTrack, CPU: trace.NoCPU})
	v := float64(synth.Value(e) % 1000)
	if d.n == peakAt {
		v = peakValue
	}
	d.n++
	s := span.Sample{Time: e.Time, Track: c, Value: v}
	d.samples = append(d.samples, s)
	b.AddSample(s)
}

func (d *peakDeriver) Finish(trace.Reader, *span.Builder) {}

// TestServerCounterPeak: a counter whose one spike lasts a sample (far
// less than a pixel of the whole trace) is drawn fully zoomed out: the
// page's per-pixel bands hold the brute-force maximum of the samples in
// each pixel column (from the API's finest answer and from the deriver's
// own samples), and the spike's column is painted up to the row's top.
func TestServerCounterPeak(t *testing.T) {
	var d *peakDeriver
	vs := startViewerServer(t, web.Config{
		Formats:   []trace.Format{synth.Format{}},
		MaxUpload: 1 << 20,
		Demo:      func() (string, []byte) { return "counter.synth", synth.File(100_000, 3, 4) },
		Derive: func(trace.Reader) span.Deriver {
			d = &peakDeriver{}
			return d
		},
	})
	id := vs.demo(t)
	ctx := tab(t)
	var res struct {
		Start, End string
		Width      float64
		Hi         float64
		PeakX      float64
		Bands      []struct{ X, Min, Max float64 }
		Painted    bool
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(spansReady),
		eval(`new Promise(r => setTimeout(r, 200))`, nil),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`(async () => {`+pixelJS+`
  const { counterBands, counterY } = await import('/static/js/spans.js');
  const { rowKind } = await import('/static/js/groups.js');
  const row = v.rows.findIndex((r) => rowKind(r).kind === 'derived');
  const st = v.spans.tracks.get(rowKind(v.rows[row]).id);
  const { bands, lo, hi } = counterBands(st.counters, v.spans.start, v.spans.res, v.vp);
  const peak = bands.reduce((a, b) => (b.max > a.max ? b : a));
  const L = v.labelW(), y = rowY(row) + counterY(hi, lo, hi, v.rowH) + 1;
  const bg = css(getComputedStyle(document.documentElement).getPropertyValue('--canvas-bg').trim() || '#fff');
  const got = px(L + peak.x + 0.5, y);
  return {Start: String(v.vp.start), End: String(v.vp.end), Width: v.vp.width, Hi: hi, PeakX: peak.x,
    Bands: bands.map((b) => ({X: b.x, Min: b.min, Max: b.max})), Painted: !near(got, bg) && !near(got, css(v.theme.rowAlt))};
})()`, &res),
	)
	shot(t, ctx, "spans-counter")
	if err != nil {
		t.Fatal(err)
	}
	if res.Hi != peakValue {
		t.Errorf("the counter's scale tops at %v zoomed out, want the spike %v", res.Hi, peakValue)
	}
	if !res.Painted {
		t.Errorf("the spike's column (x %v) is not painted at the row's top", res.PeakX)
	}
	// Brute force: per pixel column the min and max of the samples in it
	// (and of the value held into it), from the deriver's samples.
	var start, end int64
	fmt.Sscan(res.Start, &start)
	fmt.Sscan(res.End, &end)
	nsPerPx := float64(end-start) / res.Width
	type mm struct{ lo, hi float64 }
	cols := map[int]mm{}
	for _, s := range d.samples {
		x := int(math.Floor(float64(int64(s.Time)-start) / nsPerPx))
		c, ok := cols[x]
		if !ok {
			c = mm{s.Value, s.Value}
		}
		c.lo, c.hi = min(c.lo, s.Value), max(c.hi, s.Value)
		cols[x] = c
	}
	checked := 0
	for _, b := range res.Bands {
		c, ok := cols[int(b.X)]
		if !ok {
			continue
		}
		// A bucket may straddle a column edge: the band holds at least the
		// column's own extremes.
		if b.Max < c.hi || b.Min > c.lo {
			t.Errorf("column %v: band [%v, %v] does not hold the samples' [%v, %v]", b.X, b.Min, b.Max, c.lo, c.hi)
		}
		checked++
	}
	if checked < int(res.Width)/2 {
		t.Errorf("only %d of %v columns compared", checked, res.Width)
	}
}

// TestServerFlowArrows: selecting a request event of the demo draws
// arrows to the other events of its activity, the ones GET /flows lists;
// Shift+F draws the arrows between all related events in view.
func TestServerFlowArrows(t *testing.T) {
	vs := newActivityServer(t)
	id := vs.demo(t)
	var want struct {
		Events []struct {
			Ev    string `json:"ev"`
			Track int    `json:"track"`
		} `json:"events"`
	}
	ctx := tab(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(vs.URL+"/t/"+id), waitJS(spansReady)); err != nil {
		t.Fatal(err)
	}
	// The first request's Start event.
	var hits struct {
		Hits []struct{ Ev string } `json:"hits"`
	}
	getJSON(t, vs.URL+"/api/traces/"+id+"/search?q=Demo-Checkout/OrderStart&limit=1", &hits)
	if len(hits.Hits) == 0 {
		t.Fatal("the demo holds no Demo-Checkout/OrderStart")
	}
	ref := hits.Hits[0].Ev
	getJSON(t, vs.URL+"/api/traces/"+id+"/flows?event="+ref, &want)
	if len(want.Events) < 3 {
		t.Fatalf("GET /flows lists %d events for %s, want the request's several", len(want.Events), ref)
	}
	var got []string
	var heads, chains int
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id+"?sel="+ref),
		waitJS(spansReady+` && window.__viewer.selEvent !== null && window.__viewer.flows.length > 0`),
		eval(`(() => { const v = window.__viewer; const t = v.selEvent.time; v.setView(v.vp.constructor.fromRange(t - 1000000n, t + 24000000n, v.vp.width), 'push'); })()`, nil),
		eval(`new Promise(r => setTimeout(r, 200))`, nil),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`window.__viewer.flows.map((f) => f.ref)`, &got),
		// Arrow heads: the selection colour just left of each related event's glyph.
		eval(`(() => {`+pixelJS+`
  const sel = css(v.theme.sel), L = v.labelW();
  let n = 0;
  for (const f of v.flows) {
    if (f.ref === v.selEvent.ref) continue;
    const row = v.rows.indexOf(f.track);
    if (row < v.top) continue;
    const x = L + v.vp.x(f.time), y = rowY(row) + v.rowH / 2;
    let found = false;
    for (let dx = -8; dx <= 0 && !found; dx++) for (let dy = -8; dy <= 8 && !found; dy++) if (near(px(x + dx, y + dy), sel)) found = true;
    if (found) n++;
  }
  return n;
})()`, &heads),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("F", chromedp.KeyModifiers(input.ModifierShift)),
		waitJS(`window.__viewer.allFlows.length > 0`),
		eval(`window.__viewer.allFlows.length`, &chains),
	)
	shot(t, ctx, "spans-flows")
	if err != nil {
		t.Fatal(err)
	}
	var api []string
	for _, e := range want.Events {
		api = append(api, e.Ev)
	}
	if strings.Join(got, " ") != strings.Join(api, " ") {
		t.Errorf("the page's flows %v, want GET /flows's %v", got, api)
	}
	if heads < len(api)-1 {
		t.Errorf("%d arrow heads drawn, want one per related event (%d)", heads, len(api)-1)
	}
	if chains < 2 {
		t.Errorf("Shift+F: %d chains of related events in view, want the requests in view", chains)
	}
}

// TestRealSchedTracks opens a real perf sched recording
// (../shared/realdata/perf/local-recordings/sched-noclock.data): the
// CPUs group comes first with one row per CPU the deriver found, and
// every running-thread slice or merged column of a CPU row is painted in
// its thread's colour (or, merged, at least its bottom pixel), whole
// trace and zoomed to 2 ms.
func TestRealSchedTracks(t *testing.T) {
	path := tracetest.RealData(t, "perf/local-recordings/sched-noclock.data")
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vs := startViewerServer(t, web.Config{
		Formats:   []trace.Format{perf.Format{}},
		MaxUpload: int64(len(file)),
		Demo:      func() (string, []byte) { return "sched-noclock.data", file },
		Derive: func(r trace.Reader) span.Deriver {
			if p, ok := r.(*perf.Reader); ok {
				return perf.NewSched(p)
			}
			return nil
		},
	})
	id := vs.demo(t)
	ctx := tab(t)
	type res struct {
		First           string
		CPUTracks, Rows int
		Boxes, Painted  int
		Bad             []string
		CounterCols     int
		Width           float64
	}
	check := `(async () => {` + pixelJS + `
  const { layoutItems, counterBands } = await import('/static/js/spans.js');
  const { sliceColor } = await import('/static/js/spandraw.js');
  const { rowKind } = await import('/static/js/groups.js');
  const out = {First: v.groups[0]?.name ?? '', CPUTracks: v.derived.filter((d) => d.kind === 'cpu').length, Rows: 0, Boxes: 0, Painted: 0, Bad: [], CounterCols: 0, Width: v.vp.width};
  for (const [id, st] of v.spans.tracks) if (st.track.kind === 'counter')
    out.CounterCols = Math.max(out.CounterCols, counterBands(st.counters, v.spans.start, v.spans.res, v.vp, v.spans.enter.get(id)).bands.length);
  const L = v.labelW();
  const n = Math.min(v.rows.length, v.top + v.rowsVisible());
  for (let row = v.top; row < n; row++) {
    const k = rowKind(v.rows[row]);
    const st = k.kind === 'derived' ? v.spans.tracks.get(k.id) : null;
    if (!st || st.track.kind !== 'cpu') continue;
    out.Rows++;
    const boxes = layoutItems(st.items, st.depths, v.vp, v.rowH);
    for (const b of boxes) {
      if (b.x0 < 1 || b.x0 > v.vp.width - 2) continue;
      // A column two slices share shows the one drawn last.
      const c = Math.floor((b.x0 + b.x1) / 2);
      if (boxes.some((o) => o !== b && o.x0 < c + 1 && o.x1 > c)) continue;
      out.Boxes++;
      // The axis's grid lines cross the rows: a column on one is not read.
      const got = px(L + c, rowY(row) + b.y + b.h - 1);
      const ok = near(got, css(sliceColor('cpu', b.item, v.theme.dark))) || near(got, css(v.theme.grid)) ||
        (b.item.summary && !near(got, css(v.theme.bg)) && !near(got, css(v.theme.rowAlt)));
      if (ok) out.Painted++;
      else if (out.Bad.length < 5) out.Bad.push(b.item.name + ' ' + got + ' want ' + css(sliceColor('cpu', b.item, v.theme.dark)) + ' x ' + b.x0.toFixed(1) + '-' + b.x1.toFixed(1) + ' y ' + b.y + '+' + b.h + ' sum ' + b.item.summary + ' thr ' + b.item.thread);
    }
  }
  return out;
})()`
	var whole, zoomed res
	err = chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(spansReady),
		eval(`new Promise(r => setTimeout(r, 300))`, nil),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(check, &whole),
		eval(`(() => { const v = window.__viewer; const a = v.meta.first + (v.meta.last - v.meta.first) / 2n; v.setView(v.vp.constructor.fromRange(a, a + 2000000n, v.vp.width), 'push'); })()`, nil),
		waitJS(`window.__viewer.spans.to - window.__viewer.spans.from < 10000000n`),
		eval(`new Promise(r => setTimeout(r, 300))`, nil),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(check, &zoomed),
	)
	shot(t, ctx, "spans-real-sched")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("whole %+v; zoomed %+v", whole, zoomed)
	if whole.First != "CPUs" || whole.CPUTracks == 0 || whole.Rows != min(whole.CPUTracks, 20) {
		t.Errorf("first group %q with %d CPU rows for %d CPU tracks", whole.First, whole.Rows, whole.CPUTracks)
	}
	// The busy-CPUs counter holds its value between samples: zoomed in
	// between two of them it still covers the width.
	if zoomed.CounterCols < int(zoomed.Width)*9/10 {
		t.Errorf("zoomed in, the counter covers %d of %v columns", zoomed.CounterCols, zoomed.Width)
	}
	for _, r := range []res{whole, zoomed} {
		if r.Boxes == 0 || r.Painted != r.Boxes {
			t.Errorf("%d of %d CPU slices painted: %v", r.Painted, r.Boxes, r.Bad)
		}
	}
}

// TestBinaryDemoDerived builds the viewer binary and opens its demo
// trace as `viewer serve` shows it (cmd/viewer's deriver list): the
// request activities are slices under their threads, the GC track shows
// GC and pause slices, and every counter track (the GC heap size) has
// its peak over the whole trace (the spans API's one-bucket answer: the
// brute-force maximum) on top of the page's bands fully zoomed out, its
// column painted up to the row's top.
func TestBinaryDemoDerived(t *testing.T) {
	ctx := tab(t)
	bin := filepath.Join(t.TempDir(), "viewer")
	if out, err := exec.Command("go", "build", "-o", bin, "viewer/cmd/viewer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base := serveBinary(t, bin)
	var id string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		waitJS(`document.querySelector('#traces tr[data-id]') !== null`),
		eval(`document.querySelector('#traces tr[data-id]').dataset.id`, &id),
	)
	if err != nil {
		t.Fatal(err)
	}
	type track struct {
		Kind, Name string
		Items      int
		PageHi     float64
		APIHi      float64
		Names      []string
		Shown      bool
		PeakPaint  bool
	}
	var got []track
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/t/"+id),
		waitJS(spansReady),
		eval(`new Promise(r => setTimeout(r, 300))`, nil),
		eval(`(async () => {
  const { counterBands, counterY } = await import('/static/js/spans.js');
  const { derivedRow } = await import('/static/js/groups.js');
  `+pixelJS+`
  const whole = await v.source.spans({ from: v.meta.first, to: v.meta.last + 1n, width: 1, tracks: null });
  const all = await v.source.spans({ from: v.vp.start, to: v.vp.end, width: Math.round(v.vp.width), tracks: null });
  const out = [];
  for (const d of v.derived) {
    const st = all.tracks.get(d.id), w = whole.tracks.get(d.id);
    let pageHi = 0, apiHi = 0, peakPaint = false;
    const row = v.rows.indexOf(derivedRow(d.id));
    if (d.kind === 'counter') {
      const f = v.spans, pst = f.tracks.get(d.id);
      const cb = counterBands(pst.counters, f.start, f.res, v.vp, f.enter.get(d.id));
      pageHi = cb.hi;
      apiHi = Math.max(...w.counters.map((c) => c.max));
      const peak = cb.bands.reduce((a, b) => (b.max > a.max ? b : a));
      const got = px(v.labelW() + peak.x + 0.5, rowY(row) + counterY(cb.hi, cb.lo, cb.hi, v.rowH) + 1);
      peakPaint = row >= v.top && !near(got, css(v.theme.bg)) && !near(got, css(v.theme.rowAlt));
    }
    out.push({Kind: d.kind, Name: d.name, Items: st.items.length + st.counters.length, PageHi: pageHi, APIHi: apiHi,
      Names: [...new Set(st.items.map((i) => i.name))].sort().slice(0, 5), Shown: row >= v.top && row < v.top + v.rowsVisible(), PeakPaint: peakPaint});
  }
  return out;
})()`, &got),
	)
	shot(t, ctx, "binary-demo")
	if err != nil {
		t.Fatal(err)
	}
	activities, gc, heap := 0, false, false
	for _, tr := range got {
		if tr.Kind == "slices" && strings.HasPrefix(tr.Name, "GC") && tr.Shown && slices.Contains(tr.Names, "GC gen 0") && slices.Contains(tr.Names, "pause") {
			gc = true
		}
		if tr.Kind == "counter" && strings.Contains(tr.Name, "heap") && tr.Shown {
			heap = true
			if !tr.PeakPaint {
				t.Errorf("counter %q: the peak's column is not painted at the row's top", tr.Name)
			}
		}
		t.Logf("%+v", tr)
		if tr.Kind == "slices" && tr.Name == "activities" && tr.Items > 0 && slices.ContainsFunc(tr.Names, func(n string) bool { return strings.HasPrefix(n, "Demo-Checkout/") }) {
			activities++
		}
		if tr.Kind == "counter" && (tr.PageHi != tr.APIHi || tr.APIHi == 0) {
			t.Errorf("counter %q: the page's bands top at %v zoomed out, the trace's maximum is %v", tr.Name, tr.PageHi, tr.APIHi)
		}
	}
	if activities < 4 {
		t.Errorf("%d threads show request activity slices, want the demo's 4 workers", activities)
	}
	if !gc || !heap {
		t.Errorf("GC slices (GC gen 0, pause) shown: %v; a heap-size counter shown: %v", gc, heap)
	}
}
