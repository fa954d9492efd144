package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser is shared by every test of the binary; each test opens its
// own tab (starting Chromium dominates a run).
var (
	browserCtx context.Context
	noBrowser  string // why there is no browser, when there is none
)

// chromiumPath finds Debian's chromium.
func chromiumPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "/usr/lib/chromium/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH (apt-get install chromium)")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	path, err := chromiumPath()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "browser tests: CI is set but", err)
			return 1
		}
		noBrowser = err.Error()
		return m.Run()
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-accelerated-2d-canvas", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Run(bctx); err != nil {
		fmt.Fprintln(os.Stderr, "browser tests: starting chromium:", err)
		return 1
	}
	browserCtx = bctx
	return m.Run()
}

// tab opens a new tab with a deadline; it skips the test when there is no
// browser outside CI.
func tab(t testing.TB) context.Context {
	t.Helper()
	if noBrowser != "" {
		t.Skip(noBrowser)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelT)
	// Surface page errors in the test log.
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			t.Logf("page exception: %s", e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				for _, a := range e.Args {
					t.Logf("console %s: %s", e.Type, a.Value)
				}
			}
		}
	})
	return ctx
}

// staticServer serves ui/static as it is on disk, so the frontend's test
// page (dev.html, a generated trace) runs without the web server.
func staticServer(t testing.TB) *httptest.Server {
	t.Helper()
	dir, err := filepath.Abs("../../ui/static")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(http.FileServerFS(os.DirFS(dir)))
	t.Cleanup(s.Close)
	return s
}

// eval evaluates a JavaScript expression (awaiting a promise) into out.
func eval(expr string, out any) chromedp.Action {
	return chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})
}

// waitJS polls a JavaScript condition until it is true.
func waitJS(cond string) chromedp.Action {
	return chromedp.Poll(cond, nil, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))
}

// shot saves a screenshot under $VIEWER_SHOTS when that is set, for a
// person to look at.
func shot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("VIEWER_SHOTS")
	if dir == "" {
		return
	}
	var buf []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&buf, 100)); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Log(err)
	}
}
