package browser

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The compare page (web/PROTOCOL.md §8) on the viewer's demo trace: its
// first half against its second half, reached from the viewer's
// Compare… button, shows the table and a differential flame graph.

const compareReady = `window.__compare && window.__compare.tableReady && window.__compare.flameReady`

// flameColours counts the compare flame graph's pixels that are clearly
// red and clearly blue.
const flameColours = `(() => {
  const c = document.querySelector('#compare-flame canvas');
  if (!c || !c.width) return [0, 0];
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let red = 0, blue = 0;
  for (let i = 0; i < d.length; i += 4) {
    const [r, g, b] = [d[i], d[i+1], d[i+2]];
    if (r > g + 40 && r > b + 40) red++;
    if (b > r + 40 && b > g + 20) blue++;
  }
  return [red, blue];
})()`

func TestComparePage(t *testing.T) {
	vs := newNetTraceServer(t)
	id := vs.demo(t)
	var info struct {
		Stats struct {
			FirstNS int64 `json:"first_ns"`
			LastNS  int64 `json:"last_ns"`
		}
	}
	getJSON(t, vs.URL+"/api/traces/"+id, &info)
	ctx := tab(t)

	// The viewer's Compare… menu offers the view's halves; with the whole
	// trace in view they are the trace's halves.
	var href string
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/t/"+id),
		waitJS(ready),
		chromedp.Click(`button[data-action="compareMenu"]`, chromedp.ByQuery),
		waitJS(`document.querySelector('#compare-menu a') !== null`),
		eval(`document.querySelector('#compare-menu a').getAttribute('href')`, &href),
	)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	var vpStart, vpEnd string
	if err := chromedp.Run(ctx, eval(`String(window.__viewer.vp.start)`, &vpStart), eval(`String(window.__viewer.vp.end)`, &vpEnd)); err != nil {
		t.Fatal(err)
	}
	if u.Path != "/compare" || q.Get("a") != id || q.Get("b") != id || q.Get("afrom") != vpStart || q.Get("bto") != vpEnd || q.Get("ato") != q.Get("bfrom") {
		t.Fatalf("Compare… links %q; the view is [%s, %s)", href, vpStart, vpEnd)
	}

	var rows, shown int
	var nodes, changed int
	var colours [2]int
	err = chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+href),
		waitJS(compareReady),
		eval(`document.querySelectorAll('#compare-table tbody tr').length`, &rows),
		eval(`window.__compare.shown.length`, &shown),
		eval(`window.__compare.diff ? window.__compare.diff.tree.parent.length : 0`, &nodes),
		eval(`(() => { const d = window.__compare.diff; let n = 0; if (d) for (let i = 0; i < d.selfA.length; i++) if (d.selfA[i] !== d.selfB[i]) n++; return n; })()`, &changed),
		eval(flameColours, &colours),
	)
	shot(t, ctx, "compare-halves")
	if err != nil {
		t.Fatal(err)
	}
	var errText string
	chromedp.Run(ctx, eval(`window.__compare.error`, &errText))
	if rows == 0 || rows != shown || errText != "" {
		t.Fatalf("the table shows %d rows (state: %d), error %q", rows, shown, errText)
	}
	if nodes < 5 || changed == 0 {
		t.Fatalf("the flame graph has %d nodes, %d with a changed self weight", nodes, changed)
	}
	if colours[0] == 0 || colours[1] == 0 {
		t.Errorf("the flame graph has %d red and %d blue pixels: want both colours", colours[0], colours[1])
	}
	// The rows are the API's, in its order.
	var api struct {
		Rows []struct{ Kind, Key, Measure string }
	}
	getJSON(t, vs.URL+"/api/compare?"+u.RawQuery, &api)
	var first string
	if err := chromedp.Run(ctx, eval(`(() => { const r = window.__compare.shown[0]; return r.kind + ' ' + r.key + ' ' + r.measure; })()`, &first)); err != nil {
		t.Fatal(err)
	}
	if len(api.Rows) != rows || first != api.Rows[0].Kind+" "+api.Rows[0].Key+" "+api.Rows[0].Measure {
		t.Errorf("page: %d rows, first %q; API: %d rows, first %+v", rows, first, len(api.Rows), api.Rows[0])
	}

	// Sorting by a heading and the filter box.
	var keys []string
	var filtered int
	err = chromedp.Run(ctx,
		chromedp.Click(`#compare-table th button[data-col="key"]`, chromedp.ByQuery),
		eval(`[...document.querySelectorAll('#compare-table tbody td.key')].map((td) => td.textContent)`, &keys),
	)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] > keys[i] {
			t.Fatalf("sorted by key: %q before %q", keys[i-1], keys[i])
		}
	}
	word := strings.ToLower(strings.Fields(api.Rows[0].Key)[0])
	var allMatch bool
	err = chromedp.Run(ctx,
		chromedp.SendKeys("#compare-filter", word, chromedp.ByID),
		eval(`document.querySelectorAll('#compare-table tbody tr').length`, &filtered),
		eval(`window.__compare.shown.every((r) => (r.kind + ' ' + r.key + ' ' + r.measure).toLowerCase().includes(`+jsString(word)+`))`, &allMatch),
	)
	if err != nil {
		t.Fatal(err)
	}
	if filtered == 0 || filtered > rows || !allMatch {
		t.Errorf("filter %q: %d rows of %d, all matching: %v", word, filtered, rows, allMatch)
	}
}

// TestLibraryCompareForm: the library's form picks two traces and opens
// their compare page, without script too (a GET form).
func TestLibraryCompareForm(t *testing.T) {
	vs := newNetTraceServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	var loc string
	err := chromedp.Run(ctx,
		chromedp.Navigate(vs.URL+"/"),
		chromedp.WaitVisible("#compare-form", chromedp.ByID),
		// submitted from a timer, so that the evaluation returns before
		// the page goes
		eval(`setTimeout(() => document.querySelector('#compare-form button[type="submit"]').click(), 0), true`, nil),
		chromedp.WaitReady("#compare-table", chromedp.ByID),
		waitJS(compareReady),
		eval(`location.pathname + location.search`, &loc),
	)
	if err != nil {
		t.Fatal(err)
	}
	if loc != "/compare?a="+id+"&b="+id {
		t.Errorf("the form opened %q", loc)
	}
	var zero bool
	if err := chromedp.Run(ctx, eval(`window.__compare.rows.length > 0 && window.__compare.rows.every((r) => r.delta === 0)`, &zero)); err != nil {
		t.Fatal(err)
	}
	if !zero {
		t.Error("the demo trace against itself: not every delta is zero")
	}
}
