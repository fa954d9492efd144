package browser

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/trace"
	"viewer/trace/synth"
	"viewer/web"
)

// upload stores a trace through the API and waits until it is indexed.
func (vs *viewerServer) upload(t testing.TB, name string, data []byte) string {
	t.Helper()
	resp, err := http.Post(vs.URL+"/api/traces?name="+name, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ ID, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.ID == "" {
		t.Fatalf("upload %s: %d %v %s", name, resp.StatusCode, err, r.Error)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(vs.URL + "/api/traces/" + r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ti struct{ State string }
		json.NewDecoder(resp.Body).Decode(&ti)
		resp.Body.Close()
		if ti.State == "ready" {
			return r.ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not indexed", name)
	return ""
}

// knownEventX is the plot x of the first event of the second trace's
// first busy track (its details give its aligned time), and that event's
// id, once a frame with the current offsets has been drawn.
const knownEventX = `(async () => {
  const v = window.__viewer, tr = v.meta.tracks.find((t) => t.trace === 1 && t.events > 0);
  const d = await v.source.details(tr.id + ':0');
  return {X: v.vp.x(d.time), Ev: d.ref, Off: v.source.query()};
})()`

// TestServerTogether opens two uploaded traces together, Alt+drags the
// second one's group header, copies the URL and opens it again: the
// known event of the second trace is where the drag put it, and the
// details say which trace it came from.
func TestServerTogether(t *testing.T) {
	vs := startViewerServer(t, web.Config{Formats: []trace.Format{synth.Format{}}, MaxUpload: 8 << 20})
	a := vs.upload(t, "first.synth", synth.File(20_000, 1, 4))
	b := vs.upload(t, "second.synth", synth.File(20_000, 2, 3))
	ctx := tab(t)
	type known struct {
		X   float64
		Ev  string
		Off string
	}
	var before, dragged, reloaded known
	var header struct{ X, Y float64 }
	var href, traceLabel string
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/v?t="+a+","+b),
		waitJS(ready),
		eval(knownEventX, &before),
		// The second trace's group header row.
		eval(`(() => { const v = window.__viewer, r = v.ui.canvas.getBoundingClientRect();
		  const g = v.groups.find((g) => g.key === 'x1'), i = v.rows.indexOf(-(2 ** 30) - g.id);
		  return {X: r.left + 20, Y: r.top + 38 + (i - v.top) * v.rowH + v.rowH / 2}; })()`, &header),
	)
	if err != nil {
		t.Fatal(err)
	}
	const dx = 120.0
	err = chromedp.Run(ctx,
		drag(header.X, header.X+dx, header.Y, input.Left, input.ModifierAlt),
		waitJS(`location.search.includes('off=1:')`),
		waitJS(ready),
		eval(knownEventX, &dragged),
		eval(`location.href`, &href),
		eval(`window.__viewer.source.details(`+jsString(before.Ev)+`).then((d) => d.labels.find((l) => l.key === 'trace')?.value ?? '')`, &traceLabel),
	)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(dragged.X-before.X-dx) > 1.5 {
		t.Errorf("after an Alt+drag of %v px the known event moved from x %.1f to %.1f", dx, before.X, dragged.X)
	}
	if traceLabel != "second.synth" {
		t.Errorf("the event's details name trace %q, want second.synth", traceLabel)
	}
	if !strings.Contains(href, "t="+a+","+b) {
		t.Errorf("URL %s does not name the traces", href)
	}
	ctx2 := tab(t)
	err = chromedp.Run(ctx2,
		chromedp.Navigate(href),
		waitJS(ready),
		eval(knownEventX, &reloaded),
	)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(reloaded.X-dragged.X) > 0.5 || reloaded.Off != dragged.Off {
		t.Errorf("reloaded %s: known event at x %.2f with %s, want %.2f with %s", href, reloaded.X, reloaded.Off, dragged.X, dragged.Off)
	}
	// Typing an offset for the first trace (in ms) moves it too, and the
	// URL says so.
	err = chromedp.Run(ctx2,
		eval(`(() => { const i = document.querySelector('#together input[data-trace="0"]');
		  i.value = '-2.5'; return i.dispatchEvent(new Event('change')); })()`, nil),
		waitJS(`location.search.includes('off=0:-2500000,1:')`),
	)
	if err != nil {
		t.Fatalf("typed offset: %v", err)
	}
	var groups []string
	if err := chromedp.Run(ctx2, eval(`window.__viewer.groups.map((g) => g.name)`, &groups)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(groups, ",") != "first.synth,second.synth" {
		t.Errorf("groups %v, want one per trace named after it", groups)
	}
}
