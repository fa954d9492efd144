package browser

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace"
	"viewer/trace/nettrace/ipc"
	"viewer/trace/nettrace/ipc/ipctest"
	"viewer/web"
)

// Attaching to a running .NET process from the library page (issue #19,
// PROTOCOL.md §live), against ipctest's stand-in diagnostics server
// streaming the viewer's demo NetTrace slowly, its end (the rundown) held
// until StopTracing.

// newAttachServer serves NetTrace with attaching allowed (or not) to the
// processes whose sockets are in dir.
func newAttachServer(t testing.TB, dir string, allow bool) *viewerServer {
	t.Helper()
	return startViewerServer(t, web.Config{
		Formats:     []trace.Format{nettrace.Format{}},
		Symbols:     func(trace.Reader) render.SymbolSource { return clr.NewSymbols() },
		MaxUpload:   1 << 30,
		AllowAttach: allow,
		DiagDir:     dir,
	})
}

func TestServerAttach(t *testing.T) {
	ctx := tab(t)
	demo, err := os.ReadFile("../../cmd/viewer/demo.nettrace")
	if err != nil {
		t.Fatal(err)
	}
	dir := ipctest.TempDir(t)

	// With no process, and where attaching is not allowed, the section
	// stays hidden.
	for allow, state := range map[bool]string{true: "empty", false: "off"} {
		vs := newAttachServer(t, dir, allow)
		var hidden bool
		if err := chromedp.Run(ctx,
			chromedp.Navigate(vs.URL+"/"),
			waitJS(`document.getElementById('dotnet').dataset.state === '`+state+`'`),
			eval(`document.getElementById('dotnet').hidden && getComputedStyle(document.getElementById('dotnet')).display === 'none'`, &hidden),
		); err != nil {
			t.Fatal(err)
		}
		if !hidden {
			t.Errorf("allowed %v, no process: the .NET section is shown", allow)
		}
	}

	srv := ipctest.StartTest(t, ipctest.Config{Dir: dir, Trace: demo, Chunk: 4 << 10, Interval: 150 * time.Millisecond, Tail: 32 << 10})
	vs := newAttachServer(t, dir, true)
	pid := strconv.Itoa(os.Getpid())
	row := `#dotnet-processes tr[data-pid="` + pid + `"]`
	var defaults []string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/"),
		waitJS(`!document.getElementById('dotnet').hidden && !!document.querySelector('`+row+`')`),
		eval(`[...document.querySelectorAll('`+row+` input[name=profiles]:checked')].map((b) => b.value)`, &defaults),
	); err != nil {
		shot(t, ctx, "attach-list")
		t.Fatalf("the library does not list the stand-in process %s: %v", pid, err)
	}
	if len(defaults) != 1 || defaults[0] != "cpu" {
		t.Errorf("profiles checked by default: %v, want cpu", defaults)
	}
	shot(t, ctx, "attach-list")

	// Attach with gc too: the live page opens and its events grow.
	if err := chromedp.Run(ctx,
		chromedp.Click(row+` input[value=gc]`, chromedp.ByQuery),
		chromedp.Click(row+` button.attach`, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
	if err := waitNav(ctx, `location.pathname.startsWith('/t/') && `+ready+` && window.__viewer.live.live`, 20*time.Second); err != nil {
		shot(t, ctx, "attach-open")
		t.Fatalf("Attach did not open a live page: %v", err)
	}
	var id string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`location.pathname.slice(3)`, &id)); err != nil {
		t.Fatal(err)
	}
	// The events the live messages report, as the status line shows them.
	const liveEvents = `(window.__viewer.live.last?.events ?? 0)`
	var first chaseState
	var n0, n1 int64
	var line string
	if err := chromedp.Run(ctx,
		waitJS(`window.__viewer.live.chaseFrames >= 1 && `+liveEvents+` > 0`),
		eval(readChase, &first),
		eval(liveEvents, &n0),
	); err != nil {
		shot(t, ctx, "attach-live")
		t.Fatalf("the attached trace's page shows no events: %v", err)
	}
	if err := chromedp.Run(ctx,
		waitJS(liveEvents+` > `+strconv.FormatInt(n0, 10)),
		eval(liveEvents, &n1),
		eval(`document.getElementById('live-line').textContent`, &line),
	); err != nil {
		shot(t, ctx, "attach-live")
		t.Fatalf("the attached trace's page did not grow: %v", err)
	}
	if !first.Badge || !first.Chasing {
		t.Errorf("the attached trace's page: badge shown %v, chasing %v; want both", first.Badge, first.Chasing)
	}
	t.Logf("events %d → %d, %q", n0, n1, line)
	shot(t, ctx, "attach-live")
	if sent := srv.Sent(); sent >= int64(len(demo)) {
		t.Fatalf("the stand-in sent all %d bytes before Stop", sent)
	}

	// Stop: the stand-in sees StopTracing of the session, sends the rest,
	// and the trace is stored whole.
	if err := chromedp.Run(ctx, chromedp.Click(`#live-stop`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	var li liveInfo
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if li = vs.info(t, id); !li.Live && li.State == "ready" {
			break
		}
	}
	if li.Live || li.State != "ready" || li.Stats == nil {
		t.Fatalf("after Stop the server says live=%v state=%q", li.Live, li.State)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].ID != ipctest.CollectTracing2 || reqs[1].ID != ipctest.StopTracing || reqs[1].SessionID != reqs[0].SessionID {
		t.Fatalf("the stand-in saw %+v, want CollectTracing2 then StopTracing of its session", reqs)
	}
	want, _ := ipc.Select([]string{"cpu", "gc"}, nil)
	if len(reqs[0].Providers) != len(want) || reqs[0].Providers[1].Keywords != want[1].Keywords {
		t.Errorf("the session asked for %+v, want the cpu and gc profiles' %v", reqs[0].Providers, want)
	}
	if srv.Sent() != int64(len(demo)) || srv.Active() != 0 {
		t.Errorf("the stand-in sent %d of %d bytes and has %d sessions", srv.Sent(), len(demo), srv.Active())
	}
	if err := waitNav(ctx, `!window.__viewer.live.live && document.getElementById('live-badge').hidden && window.__viewer.meta.events === `+strconv.FormatInt(li.Stats.Events, 10), 20*time.Second); err != nil {
		shot(t, ctx, "attach-stopped")
		t.Fatalf("the page does not show the stored trace after Stop: %v", err)
	}
	shot(t, ctx, "attach-stopped")
}
