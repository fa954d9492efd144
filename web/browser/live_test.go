package browser

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/web"
)

// The page on a live trace (issue #19, PROTOCOL.md §live): the library's
// Live demo button records the demo NetTrace as if a program wrote it
// now; the viewer follows its end (chase) and the Stop button ends it.

// liveDemoTime is how long the test's live demo writes its trace: long
// enough to watch a few chase frames and stop it before it ends by itself.
const liveDemoTime = 24 * time.Second

// newLiveServer serves the viewer's demo NetTrace (a stream format, read
// as it grows) with a live demo of liveDemoTime.
func newLiveServer(t testing.TB) *viewerServer {
	t.Helper()
	demo, err := os.ReadFile("../../cmd/viewer/demo.nettrace")
	if err != nil {
		t.Fatal(err)
	}
	return startViewerServer(t, web.Config{
		Formats:      []trace.Format{nettrace.Format{}},
		Symbols:      func(trace.Reader) render.SymbolSource { return clr.NewSymbols() },
		MaxUpload:    int64(len(demo)),
		Demo:         func() (string, []byte) { return "demo.nettrace", demo },
		LiveDemoTime: liveDemoTime,
	})
}

// liveInfo is what GET /api/traces/{id} says of a live trace.
type liveInfo struct {
	Live  bool   `json:"live"`
	State string `json:"state"`
	Stats *struct {
		Events int64 `json:"events"`
	} `json:"stats"`
}

func (vs *viewerServer) info(t testing.TB, id string) liveInfo {
	t.Helper()
	resp, err := http.Get(vs.URL + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var li liveInfo
	if err := json.NewDecoder(resp.Body).Decode(&li); err != nil {
		t.Fatal(err)
	}
	return li
}

// chaseState is what the test reads of the page while it chases.
type chaseState struct {
	Live, Chasing bool
	Frames        int
	End           string // the frame's end, ns (a BigInt on the page)
	Events        int64
	Badge         bool // the LIVE badge is shown
	Line          string
}

const readChase = `(() => {
  const v = window.__viewer;
  return {
    live: v.live.live, chasing: v.live.chasing, frames: v.live.chaseFrames,
    end: String(v.frame ? v.frame.end : 0n), events: v.meta ? v.meta.events : 0,
    badge: !document.getElementById('live-badge').hidden,
    line: document.getElementById('live-line').textContent,
  };
})()`

func TestServerLiveDemo(t *testing.T) {
	vs := newLiveServer(t)
	vs.demo(t)
	ctx := tab(t)
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/"),
		waitJS(`document.readyState === 'complete' && !!document.getElementById('live-demo')`),
		chromedp.Click(`#live-demo`, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitNav(ctx, `location.pathname.startsWith('/t/') && `+ready+` && window.__viewer.live.live`, 20*time.Second); err != nil {
		shot(t, ctx, "live-open")
		t.Fatalf("the live demo's page did not open live: %v", err)
	}
	var id string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`location.pathname.slice(3)`, &id)); err != nil {
		t.Fatal(err)
	}
	if li := vs.info(t, id); !li.Live || li.State != "live" {
		t.Fatalf("the server says the demo trace is live=%v state=%q, want a live trace", li.Live, li.State)
	}

	// Chase is on by default; successive pushed frames end later and later
	// and the count of events grows.
	var first chaseState
	if err := chromedp.Run(ctx, waitJS(`window.__viewer.live.chaseFrames >= 1`), eval(readChase, &first)); err != nil {
		shot(t, ctx, "live-chase")
		t.Fatalf("no chase frame arrived: %v", err)
	}
	if !first.Chasing || !first.Badge {
		t.Errorf("the live page opened with chasing=%v, badge shown=%v; want both", first.Chasing, first.Badge)
	}
	var later chaseState
	if err := chromedp.Run(ctx,
		waitJS(`window.__viewer.live.chaseFrames >= `+strconv.Itoa(first.Frames+3)),
		eval(readChase, &later),
	); err != nil {
		t.Fatalf("chase frames stopped after %d: %v", first.Frames, err)
	}
	e0, _ := strconv.ParseInt(first.End, 10, 64)
	e1, _ := strconv.ParseInt(later.End, 10, 64)
	if e1 <= e0 {
		t.Errorf("the chased frame's end went from %d to %d ns: it should advance", e0, e1)
	}
	if later.Events <= first.Events || first.Events <= 0 {
		t.Errorf("events shown went from %d to %d: they should grow", first.Events, later.Events)
	}
	if later.Line == "" {
		t.Error("the status line says nothing of the live trace")
	}
	t.Logf("chase: %d → %d frames, end %d → %d ns, events %d → %d, %q", first.Frames, later.Frames, e0, e1, first.Events, later.Events, later.Line)
	shot(t, ctx, "live-chase")

	// The library lists the trace as live, with its events so far.
	lib := tab(t)
	var badge bool
	if err := chromedp.Run(lib,
		chromedp.Navigate(vs.URL+"/"),
		waitJS(`(document.querySelector('#traces tr[data-id="`+id+`"] .state')?.textContent ?? '').startsWith('live ·')`),
		eval(`!!document.querySelector('#traces tr[data-id="`+id+`"] .live-badge')`, &badge),
	); err != nil {
		t.Fatalf("the library does not show the live trace's events: %v", err)
	}
	if !badge {
		t.Error("the library's row of the live trace has no LIVE badge")
	}

	// Panning turns chasing off: the view stays while the trace grows. The
	// key "." turns it on again, and the Follow button off and on.
	var start0, start1 string
	var msgs int
	if err := chromedp.Run(ctx,
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("a"),
		eval(`String(window.__viewer.vp.start)`, &start0),
		eval(`window.__viewer.live.messages`, &msgs),
		waitJS(`window.__viewer.live.messages >= `+strconv.Itoa(msgs+2)),
		eval(`String(window.__viewer.vp.start)`, &start1),
	); err != nil {
		t.Fatalf("after a pan: %v", err)
	}
	var paused chaseState
	if err := chromedp.Run(ctx, eval(readChase, &paused)); err != nil {
		t.Fatal(err)
	}
	if paused.Chasing || start1 != start0 {
		t.Errorf("after a pan the page chases=%v and its view moved from %s to %s ns while the trace grew; want it to stay", paused.Chasing, start0, start1)
	}
	var resumed chaseState
	if err := chromedp.Run(ctx,
		chromedp.KeyEvent("."),
		waitJS(`window.__viewer.live.chasing && window.__viewer.live.chaseFrames > `+strconv.Itoa(paused.Frames)),
		eval(readChase, &resumed),
	); err != nil {
		t.Fatalf("the key . did not resume the chase: %v", err)
	}
	if e2, _ := strconv.ParseInt(resumed.End, 10, 64); e2 <= e1 {
		t.Errorf("the resumed chase's frame ends at %d ns, before the paused one's %d", e2, e1)
	}
	var off, on bool
	if err := chromedp.Run(ctx,
		chromedp.Click(`#live-follow`, chromedp.ByQuery),
		eval(`window.__viewer.live.chasing`, &off),
		chromedp.Click(`#live-follow`, chromedp.ByQuery),
		eval(`window.__viewer.live.chasing`, &on),
	); err != nil {
		t.Fatal(err)
	}
	if off || !on {
		t.Errorf("the Follow button toggled chasing to %v then %v, want false then true", off, on)
	}

	// Stop: the server stores the trace; the page becomes an ordinary one,
	// its view where it was.
	var vpBefore, vpAfter string
	if err := chromedp.Run(ctx,
		chromedp.Click(`#live-follow`, chromedp.ByQuery), // chase off: the view must stay put
		eval(`String(window.__viewer.vp.start) + '/' + window.__viewer.vp.span`, &vpBefore),
		chromedp.Click(`#live-stop`, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var li liveInfo
	for time.Now().Before(deadline) {
		if li = vs.info(t, id); !li.Live && li.State == "ready" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if li.Live || li.State != "ready" || li.Stats == nil {
		t.Fatalf("after Stop the server says live=%v state=%q; want a stored, ready trace", li.Live, li.State)
	}
	if err := waitNav(ctx, `!window.__viewer.live.live && document.getElementById('live-badge').hidden && document.getElementById('live-stop').hidden && document.getElementById('live-follow').hidden`, 20*time.Second); err != nil {
		shot(t, ctx, "live-stopped")
		t.Fatalf("the page still shows a live trace after Stop: %v", err)
	}
	// The metadata reloads from the stored index: the page's count is the
	// stored trace's, fewer than the demo's whole (it was cut short).
	var events int64
	if err := chromedp.Run(ctx, waitJS(`window.__viewer.meta.events === `+strconv.FormatInt(li.Stats.Events, 10)), eval(`window.__viewer.meta.events`, &events)); err != nil {
		var got int64
		chromedp.Run(ctx, eval(`window.__viewer.meta.events`, &got))
		t.Fatalf("the page shows %d events, the stored trace has %d: %v", got, li.Stats.Events, err)
	}
	shot(t, ctx, "live-stopped")
	if err := chromedp.Run(ctx, eval(`String(window.__viewer.vp.start) + '/' + window.__viewer.vp.span`, &vpAfter)); err != nil {
		t.Fatal(err)
	}
	if vpAfter != vpBefore {
		t.Errorf("the view moved from %s to %s (start/span ns) when the trace ended", vpBefore, vpAfter)
	}
	ids := vs.traceIDs(t) // newest first: the demo trace is the last
	if whole := vs.info(t, ids[len(ids)-1]); whole.Stats == nil || events >= whole.Stats.Events {
		t.Errorf("the stopped trace holds %d events, the whole demo %v: Stop should have cut it short", events, whole.Stats)
	}
}
