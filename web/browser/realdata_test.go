package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/trace/tracetest"
)

// realFiles are small real traces from ../shared/realdata, one per format.
var realFiles = []string{
	"cpel/vpp_rich.cpel",
	"nettrace/perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace",
	"perf/local-recordings/sched-zstd.data",
}

// TestRealDropUpload builds the viewer binary, serves an empty library and
// drops real trace files on its page: each must open in the viewer and
// draw, with the event count `viewer stats` reports. Every one must be
// read: a format dropped from cmd/viewer's list fails the test.
func TestRealDropUpload(t *testing.T) {
	root := tracetest.RealData(t, "")
	ctx := tab(t)
	bin := filepath.Join(t.TempDir(), "viewer")
	build := exec.Command("go", "build", "-o", bin, "viewer/cmd/viewer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	type stats struct {
		Events int64 `json:"events"`
	}
	want := map[string]int64{}
	for _, f := range realFiles {
		out, err := exec.Command(bin, "stats", "--json", filepath.Join(root, f)).Output()
		if err != nil {
			t.Fatalf("viewer stats %s: %v%s", f, err, stderrOf(err))
		}
		var s stats
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("%s: stats: %v", f, err)
		}
		want[f] = s.Events
	}

	base := serveBinary(t, bin)
	for _, f := range realFiles {
		n := want[f]
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		err = chromedp.Run(ctx,
			chromedp.Navigate(base+"/"),
			waitJS(`document.readyState === 'complete'`),
			eval(dropBytesJS(name, data), nil),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitNav(ctx, `location.pathname.startsWith('/t/') && `+ready+` && window.__viewer.meta.name === `+jsString(name), 60*time.Second); err != nil {
			shot(t, ctx, "real-"+name)
			var status string
			chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById('status')?.textContent ?? ''`, &status))
			t.Fatalf("%s did not open: %v (status %q)", f, err, status)
		}
		var events float64
		var painted int
		err = chromedp.Run(ctx,
			eval(`new Promise(r => requestAnimationFrame(() => r()))`, nil),
			eval(`window.__viewer.meta.events`, &events),
			eval(paintedPixels, &painted),
		)
		shot(t, ctx, "real-"+name)
		if err != nil {
			t.Fatal(err)
		}
		if int64(events) != n || (n > 0 && painted < 20) {
			t.Errorf("%s: page shows %v events and %d glyph pixels; viewer stats says %d events", f, events, painted, n)
		}
	}
}

// stderrOf returns ": " and the standard error of a command that exited
// with err, when it wrote any.
func stderrOf(err error) string {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// serveBinary runs `viewer serve --port 0` on an empty data directory and
// returns its base URL.
func serveBinary(t *testing.T, bin string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--port", "0", "--data", t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := re.FindString(sc.Text()); m != "" {
			go func() {
				for sc.Scan() {
				}
			}()
			return m
		}
	}
	t.Fatal("viewer serve printed no URL")
	return ""
}

// dropBytesJS drops a file with the given bytes on the page.
func dropBytesJS(name string, data []byte) string {
	return `(() => {
  const b = Uint8Array.from(atob("` + base64.StdEncoding.EncodeToString(data) + `"), c => c.charCodeAt(0));
  const dt = new DataTransfer();
  dt.items.add(new File([b], ` + jsString(name) + `));
  for (const type of ['dragenter', 'dragover', 'drop'])
    document.body.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
})()`
}
