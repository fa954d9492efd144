package browser

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/trace/synth"
)

// The frontend with the real server: web.Server with the embedded ui/static,
// its websocket and JSON API, on a synthetic demo trace.

func TestServerDemoDraws(t *testing.T) {
	vs := newViewerServer(t)
	checkDraws(t, tab(t), vs.URL+"/t/"+vs.demo(t), "server-demo")
}

func TestServerKeysMoveView(t *testing.T) {
	vs := newViewerServer(t)
	checkKeysMoveView(t, tab(t), vs.URL+"/t/"+vs.demo(t))
}

func TestServerClickShowsDetails(t *testing.T) {
	vs := newViewerServer(t)
	checkClickDetails(t, tab(t), vs.URL+"/t/"+vs.demo(t),
		[]string{"value", "point", "item-", "Raw bytes"})
}

func TestServerReloadRestores(t *testing.T) {
	vs := newViewerServer(t)
	checkReload(t, tab(t), tab(t), vs.URL+"/t/"+vs.demo(t))
}

func TestServerSearchNext(t *testing.T) {
	vs := newViewerServer(t)
	checkSearchNext(t, tab(t), vs.URL+"/t/"+vs.demo(t), "Synthetic-0/Event10")
}

// TestServerDropUpload drops a file on the library page (a synthetic
// DataTransfer, as a drag from the desktop delivers it) and expects the
// viewer of the new trace to open and draw.
func TestServerDropUpload(t *testing.T) {
	vs := newViewerServer(t)
	vs.demo(t)
	ctx := tab(t)
	file := string(synth.File(50_000, 7, 6))
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/"),
		waitJS(`document.readyState === 'complete'`),
		eval(dropJS("dropped.synth", file), nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitNav(ctx, `location.pathname.startsWith('/t/') && `+ready+` && window.__viewer.meta.name === 'dropped.synth'`, 20*time.Second); err != nil {
		shot(t, ctx, "drop")
		t.Fatalf("the dropped trace did not open: %v", err)
	}
	shot(t, ctx, "drop")
	if n := len(vs.traceIDs(t)); n != 2 {
		t.Errorf("library holds %d traces after the drop, want 2", n)
	}
}

// dropJS dispatches dragenter, dragover and drop of one file on the page.
func dropJS(name, content string) string {
	return `(() => {
  const dt = new DataTransfer();
  dt.items.add(new File([` + jsString(content) + `], ` + jsString(name) + `));
  for (const type of ['dragenter', 'dragover', 'drop'])
    document.body.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
})()`
}

// TestServerDamagedTrace opens a trace whose reading stopped early: the page
// says so in a banner and draws the truncation point and lost-event marks.
func TestServerDamagedTrace(t *testing.T) {
	vs := newViewerServer(t)
	vs.demo(t)
	resp, err := http.Post(vs.URL+"/api/traces?name=cut.synth", "application/octet-stream",
		strings.NewReader("SYNTH1 events=300000 seed=3 tracks=6 truncate\n"))
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
	var banner string
	var lostPx int
	err = chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+up.ID),
		waitJS(ready),
		eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
		eval(`[...document.querySelectorAll('#status .banner')].map(b => b.textContent).join('\n')`, &banner),
		eval(`(() => {
  const v = window.__viewer, c = v.ui.canvas, ctx = c.getContext('2d'), dpr = v.renderer.dpr;
  const lost = getComputedStyle(document.documentElement).getPropertyValue('--lost').trim();
  const probe = document.createElement('canvas').getContext('2d'); probe.fillStyle = lost; probe.fillRect(0, 0, 1, 1);
  const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
  const img = ctx.getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < img.length; i += 4) if (Math.abs(img[i]-r) + Math.abs(img[i+1]-g) + Math.abs(img[i+2]-b) < 30) n++;
  return n;
})()`, &lostPx),
	)
	shot(t, ctx, "server-damaged")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(banner, "damaged") {
		t.Errorf("no damage banner; banners: %q", banner)
	}
	if lostPx < 50 {
		t.Errorf("%d pixels in the lost/truncation colour, want the markers drawn", lostPx)
	}
}

// TestServerSampleShowsMethod opens the viewer's own demo trace, finds a
// CPU sample with the search box and expects the details panel to show
// its stack with method names (module!Namespace.Type.Method), as the
// event API gives them.
func TestServerSampleShowsMethod(t *testing.T) {
	vs := newNetTraceServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	var ref, text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("/"),
		waitJS(`document.activeElement.id === 'search'`),
		eval(`document.getElementById('search').value = ''`, nil),
		chromedp.KeyEvent("Thread/Sample\r"),
		waitJS(`window.__viewer.selEvent !== null && window.__viewer.details !== null`),
		eval(`window.__viewer.selEvent.ref`, &ref),
		eval(`document.getElementById('details').textContent`, &text),
	)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(vs.URL + "/api/traces/" + id + "/events/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Event string   `json:"event"`
		Stack []string `json:"stack"`
	}
	json.NewDecoder(resp.Body).Decode(&ev)
	resp.Body.Close()
	if ev.Event != "Thread/Sample" || len(ev.Stack) == 0 {
		t.Fatalf("selected %s: event %q with %d frames, want a Thread/Sample with a stack", ref, ev.Event, len(ev.Stack))
	}
	named := 0
	for _, f := range ev.Stack {
		if strings.HasPrefix(f, "0x") {
			continue
		}
		named++
		if !strings.Contains(text, f) {
			t.Errorf("details panel lacks the frame %q:\n%s", f, text)
		}
	}
	if named == 0 {
		t.Errorf("the sample's stack names no method: %v", ev.Stack)
	}
}
