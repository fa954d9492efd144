package browser

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The stacks panel on dev.html's generated trace, whose Thread/Sample
// events carry stacks (fake.js answers the stacks endpoints).

// fakeSamplesInView counts the generated samples in the visible range,
// from the fake's own data rather than its aggregation.
const fakeSamplesInView = `(() => {
  const v = window.__viewer, src = v.source, S = v.meta.types.length - 1;
  const lo = Number(v.vp.start - 9007199254740993n), hi = Number(v.vp.end - 9007199254740993n);
  let n = 0;
  for (const d of src.data) for (let i = 0; i < d.t.length; i++) if (d.type[i] === S && d.t[i] >= lo && d.t[i] < hi) n++;
  return n;
})()`

// largestSelf is the frame with the largest self weight in the panel's
// (top-down) tree, summed over its nodes.
const largestSelf = `(() => {
  const t = window.__viewer.stacks.tree, by = new Map();
  for (let i = 1; i < t.self.length; i++) { const n = t.names[t.name[i]]; by.set(n, (by.get(n) || 0) + t.self[i]); }
  return [...by].sort((a, b) => b[1] - a[1])[0][0];
})()`

func TestFakeStacks(t *testing.T) {
	ctx := tab(t)
	srv := staticServer(t)
	treeReady := `window.__viewer.stacks.tree !== null && !window.__viewer.stacks.loading`
	var count0, root0, count1, root1 float64
	var top, bottomFirst, rowText, href string
	err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/dev.html"),
		waitJS(ready),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("x"),
		waitJS(`!document.getElementById('stacks').hidden`),
		waitJS(treeReady),
		eval(fakeSamplesInView, &count0),
		eval(`window.__viewer.stacks.tree.tot[0]`, &root0),
		// Zooming in changes the range: the panel follows.
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("w"),
		chromedp.KeyEvent("w"),
		waitJS(`window.__viewer.stacks.q && window.__viewer.stacks.q.from === window.__viewer.vp.start && !window.__viewer.stacks.loading`),
		eval(fakeSamplesInView, &count1),
		eval(`window.__viewer.stacks.tree.tot[0]`, &root1),
		eval(largestSelf, &top),
		chromedp.Click(`#stacks button[data-view="bottom"]`, chromedp.ByQuery),
		waitJS(`window.__viewer.stacks.q.view === 'bottom' && !window.__viewer.stacks.loading`),
		eval(`(() => { const t = window.__viewer.stacks.tree; return t.names[t.name[t.heavy[0][0]]]; })()`, &bottomFirst),
		// The first row under the root is that function, as text.
		eval(`document.querySelectorAll('#stacks .ct-row[data-node]')[1].textContent`, &rowText),
		// Clicking it marks its samples on the timeline.
		chromedp.Click(`#stacks .ct-row[data-node]:nth-of-type(3) .ct-name`, chromedp.ByQuery),
		waitJS(`window.__viewer.hits.length > 0`),
	)
	shot(t, ctx, "fake-stacks")
	if err != nil {
		t.Fatal(err)
	}
	if root0 != count0 || root1 != count1 || count1 >= count0 {
		t.Errorf("root weight %v then %v after zooming in, want the samples in view %v then %v", root0, root1, count0, count1)
	}
	if bottomFirst != top || !strings.Contains(rowText, top) {
		t.Errorf("bottom-up tree starts with %q (row %q), want the largest self weight %q", bottomFirst, rowText, top)
	}
	var hits, want float64
	var sel string
	err = chromedp.Run(ctx,
		eval(`window.__viewer.hits.length`, &hits),
		eval(`(() => { const s = window.__viewer.stacks; return s.tree.tot[s.sel]; })()`, &want),
		eval(`window.__viewer.stacks.st.stacksNode`, &sel),
		// A transform on the selected node: collapse its recursion.
		chromedp.Click(`#stacks button[data-stacks-action="recursion"]`, chromedp.ByQuery),
		waitJS(`location.search.includes('stf=r') && !window.__viewer.stacks.loading && window.__viewer.stacks.q.tf !== ''`),
		eval(`location.href`, &href),
	)
	if err != nil {
		t.Fatal(err)
	}
	if hits != want || sel != top {
		t.Errorf("%v samples marked for %q, want %v of %q", hits, sel, want, top)
	}
	checkStacksRestored(t, tab(t), href)
}

// checkStacksRestored opens a copied URL in a new tab and expects the
// panel as it was: open, the same view, transforms and selection, and the
// selected node's samples marked.
func checkStacksRestored(t *testing.T, ctx context.Context, href string) {
	t.Helper()
	var want, got string
	err := chromedp.Run(ctx,
		chromedp.Navigate(href),
		waitJS(ready),
		waitJS(`window.__viewer.stacks.tree !== null && !window.__viewer.stacks.loading && window.__viewer.hits.length > 0`),
		eval(`JSON.stringify(Object.fromEntries(new URLSearchParams(location.search)))`, &got),
	)
	shot(t, ctx, "stacks-restored")
	if err != nil {
		t.Fatal(err)
	}
	u := href[strings.Index(href, "?"):]
	if err := chromedp.Run(ctx, eval(`JSON.stringify(Object.fromEntries(new URLSearchParams(`+jsString(u)+`)))`, &want)); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("reloaded state %s, want %s", got, want)
	}
	var open bool
	var view, tf string
	var sel int
	if err := chromedp.Run(ctx,
		eval(`!document.getElementById('stacks').hidden`, &open),
		eval(`window.__viewer.stacks.q.view`, &view),
		eval(`window.__viewer.stacks.q.tf`, &tf),
		eval(`window.__viewer.stacks.sel`, &sel),
	); err != nil {
		t.Fatal(err)
	}
	if !open || view != "bottom" || tf == "" || sel <= 0 {
		t.Errorf("restored panel: open %v, view %q, tf %q, selected node %d", open, view, tf, sel)
	}
}
