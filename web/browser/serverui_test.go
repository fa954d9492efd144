package browser

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	file := string(synthFile(50_000, 7, 6))
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
