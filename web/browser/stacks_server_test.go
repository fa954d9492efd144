package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"viewer/render/stacks"
	"viewer/trace"
	"viewer/trace/elog"
	"viewer/web"
)

// The stacks panel with the real server (render/stacks behind the stacks
// endpoints) on the viewer's demo trace, whose CPU samples carry
// symbolized stacks: what the panel shows is checked against what the API
// answers to the same questions.

// stacksReply is the stacks endpoint's reply (PROTOCOL.md).
type stacksReply struct {
	Total   float64      `json:"total"`
	Samples float64      `json:"samples"`
	Unit    string       `json:"unit"`
	Names   []string     `json:"names"`
	Nodes   [][4]float64 `json:"nodes"`
	Pruned  int          `json:"pruned"`
}

// getJSON GETs an API path into out and fails the test on an error status.
func getJSON(t *testing.T, u string, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		t.Fatalf("GET %s: %s %s", u, resp.Status, e.Error)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// panelQuery is the panel's current query (window.__viewer.stacks.q) as
// the stacks endpoint's parameters, written here from PROTOCOL.md rather
// than by the page's own stackParams.
const panelQuery = `(() => {
  const q = window.__viewer.stacks.q;
  return {from: q.from === null ? '' : String(q.from), to: q.to === null ? '' : String(q.to),
    tracks: q.tracks ? q.tracks.join(',') : '', event: q.event, weight: q.weight, view: q.view, tf: q.tf, width: String(q.width)};
})()`

type panelQ struct {
	From, To, Tracks, Event, Weight, View, Tf, Width string
}

func (q panelQ) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"from": q.From, "to": q.To, "tracks": q.Tracks, "event": q.Event, "weight": q.Weight, "view": q.View, "tf": q.Tf, "width": q.Width} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

const stacksReady = `window.__viewer.stacks.tree !== null && !window.__viewer.stacks.loading && window.__viewer.stacks.error === ''`

func TestServerStacks(t *testing.T) {
	vs := newNetTraceServer(t)
	id := vs.demo(t)
	api := vs.URL + "/api/traces/" + id
	ctx := tab(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(vs.URL+"/t/"+id), waitJS(ready)); err != nil {
		t.Fatal(err)
	}
	// The panel's range is the visible one ("view"): fence a range with
	// Shift+drag, which zooms to it.
	var start0 string
	if err := chromedp.Run(ctx, eval(`String(window.__viewer.vp.start)`, &start0)); err != nil {
		t.Fatal(err)
	}
	x0, y := plotXY(t, ctx, 0.35, 0)
	x1, _ := plotXY(t, ctx, 0.6, 0)
	var q panelQ
	var vpStart, vpEnd string
	var root float64
	err := chromedp.Run(ctx,
		drag(x0, x1, y, input.Left, input.ModifierShift),
		waitJS(`String(window.__viewer.vp.start) !== `+jsString(start0)),
		eval(`String(window.__viewer.vp.start)`, &vpStart),
		eval(`String(window.__viewer.vp.end)`, &vpEnd),
		chromedp.Focus("#timeline", chromedp.ByID),
		chromedp.KeyEvent("x"),
		waitJS(`!document.getElementById('stacks').hidden`),
		waitJS(stacksReady+` && String(window.__viewer.stacks.q.from) === String(window.__viewer.vp.start)`),
		eval(panelQuery, &q),
		eval(`window.__viewer.stacks.tree.tot[0]`, &root),
	)
	shot(t, ctx, "server-stacks-fenced")
	if err != nil {
		t.Fatal(err)
	}
	if q.From != vpStart || q.To != vpEnd || q.View != "top" || q.Tf != "" {
		t.Fatalf("panel query %+v, want the fenced range [%s, %s), view top, no transforms", q, vpStart, vpEnd)
	}
	// The samples the API counts in the fenced range.
	var inRange stacksReply
	getJSON(t, api+"/stacks?from="+vpStart+"&to="+vpEnd, &inRange)
	var all stacksReply
	getJSON(t, api+"/stacks", &all)
	if inRange.Samples == 0 || inRange.Samples >= all.Samples {
		t.Fatalf("the fenced range holds %v of the trace's %v samples: fence a part that has samples", inRange.Samples, all.Samples)
	}
	if root != inRange.Samples || inRange.Nodes[0][2] != inRange.Samples {
		t.Errorf("root weight %v, want the %v samples the API counts in the fenced range (its root %v)", root, inRange.Samples, inRange.Nodes[0][2])
	}
	// The panel's Export link downloads the same selection as a
	// speedscope file whose weights add up to the root's.
	var exportURL string
	if err := chromedp.Run(ctx, eval(`document.getElementById('stacks-export').href`, &exportURL)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exportURL, "/stacks/speedscope?") || !strings.Contains(exportURL, "from="+vpStart) {
		t.Errorf("export link %q, want the speedscope endpoint for the fenced range", exportURL)
	}
	var file struct {
		Profiles []struct {
			EndValue float64 `json:"endValue"`
		} `json:"profiles"`
	}
	getJSON(t, exportURL, &file)
	if len(file.Profiles) != 1 || file.Profiles[0].EndValue != inRange.Samples {
		t.Errorf("the exported file %+v, want one profile weighing the range's %v samples", file.Profiles, inRange.Samples)
	}
	var events struct {
		Events []struct {
			Event string
			Count float64
		}
		Default string
	}
	getJSON(t, api+"/stacks/events", &events)
	var sel string
	if err := chromedp.Run(ctx, eval(`document.getElementById('stacks-event').value`, &sel)); err != nil {
		t.Fatal(err)
	}
	if sel != events.Default || q.Event != events.Default {
		t.Errorf("event select %q, query %q, want the endpoint's default %q (%+v)", sel, q.Event, events.Default, events.Events)
	}

	// Brute force: every frame's self weight, from the unpruned top-down
	// tree of the same range.
	var full stacksReply
	getJSON(t, api+"/stacks?from="+vpStart+"&to="+vpEnd+"&width=100000", &full)
	if full.Pruned != 0 {
		t.Fatalf("the top-down tree of the range is pruned (%d nodes) even at width 100000", full.Pruned)
	}
	self := map[string]float64{}
	for _, n := range full.Nodes[1:] {
		self[full.Names[int(n[1])]] += n[3]
	}
	maxSelf := 0.0
	for _, w := range self {
		maxSelf = max(maxSelf, w)
	}

	// The inverted tree: the function with the largest self weight on top.
	var first, rowText string
	var firstW float64
	var bq panelQ
	err = chromedp.Run(ctx,
		chromedp.Click(`#stacks button[data-view="bottom"]`, chromedp.ByQuery),
		waitJS(stacksReady+` && window.__viewer.stacks.q.view === 'bottom' && document.querySelectorAll('#stacks .ct-row[data-node]').length > 1`),
		eval(panelQuery, &bq),
		eval(`(() => { const t = window.__viewer.stacks.tree; return t.names[t.name[t.heavy[0][0]]]; })()`, &first),
		eval(`(() => { const t = window.__viewer.stacks.tree; return t.tot[t.heavy[0][0]]; })()`, &firstW),
		eval(`document.querySelectorAll('#stacks .ct-row[data-node]')[1].textContent`, &rowText),
	)
	shot(t, ctx, "server-stacks-bottom")
	if err != nil {
		t.Fatal(err)
	}
	if self[first] != maxSelf || firstW != maxSelf || !strings.Contains(rowText, first) {
		t.Errorf("bottom-up tree starts with %q (weight %v, row %q), want a function of the largest self weight %v (%q has %v)", first, firstW, rowText, maxSelf, first, self[first])
	}
	var bottom stacksReply
	getJSON(t, api+"/stacks?"+bq.values().Encode(), &bottom)
	if len(bottom.Nodes) < 2 || bottom.Nodes[0][2] != root {
		t.Fatalf("view=bottom: %d nodes, root %v, want the root %v", len(bottom.Nodes), bottom.Nodes[0][2], root)
	}

	// Clicking that row marks its samples on the timeline: those
	// /stacks/samples gives for the node.
	var node int
	var marked []string
	err = chromedp.Run(ctx,
		chromedp.Click(`#stacks .ct-row[data-node]:nth-of-type(3) .ct-name`, chromedp.ByQuery),
		waitJS(`window.__viewer.stacks.sel > 0 && window.__viewer.stacks.fromStacks && window.__viewer.hits.length > 0`),
		eval(`window.__viewer.stacks.sel`, &node),
		eval(`window.__viewer.hits.map((h) => h.ref + '@' + h.time)`, &marked),
	)
	shot(t, ctx, "server-stacks-marked")
	if err != nil {
		t.Fatal(err)
	}
	v := bq.values()
	v.Set("node", fmt.Sprint(node))
	v.Set("limit", "10000")
	var hits struct {
		Hits []struct {
			Ev, Time string
			Track    int
		}
		More bool
	}
	getJSON(t, api+"/stacks/samples?"+v.Encode(), &hits)
	var want []string
	for _, h := range hits.Hits {
		want = append(want, h.Ev+"@"+h.Time)
	}
	if hits.More || float64(len(want)) != firstW || strings.Join(marked, " ") != strings.Join(want, " ") {
		t.Errorf("node %d (%q, weight %v): %d samples marked, /stacks/samples gives %d (more %v); first marked %v, first given %v",
			node, first, firstW, len(marked), len(want), hits.More, head(marked), head(want))
	}

	// A transform on the selection: collapse its recursion, in the
	// server's tf encoding, in the request and the URL.
	wantTf := stacks.FormatTransforms([]stacks.Transform{{Op: stacks.Recursion, Arg: first}})
	var href string
	var tq panelQ
	var troot float64
	err = chromedp.Run(ctx,
		chromedp.Click(`#stacks button[data-stacks-action="recursion"]`, chromedp.ByQuery),
		waitJS(stacksReady+` && window.__viewer.stacks.q.tf !== '' && window.__viewer.stacks.sel > 0 && window.__viewer.hits.length > 0`),
		eval(panelQuery, &tq),
		eval(`window.__viewer.stacks.tree.tot[0]`, &troot),
		eval(`location.href`, &href),
	)
	if err != nil {
		t.Fatal(err)
	}
	if tq.Tf != wantTf || !strings.Contains(href, "stf="+wantTf) {
		t.Errorf("tf %q, URL %s; want the server's encoding %q", tq.Tf, href, wantTf)
	}
	var tfReply stacksReply
	getJSON(t, api+"/stacks?"+tq.values().Encode(), &tfReply)
	if troot != tfReply.Nodes[0][2] {
		t.Errorf("root %v with tf %q, the API's %v", troot, tq.Tf, tfReply.Nodes[0][2])
	}

	// The copied URL restores the panel, its transforms and its selection.
	ctx2 := tab(t)
	checkStacksRestored(t, ctx2, href)
	var sel2 string
	var rq panelQ
	var marked2 []string
	if err := chromedp.Run(ctx2,
		eval(`(() => { const s = window.__viewer.stacks; return s.tree.names[s.tree.name[s.sel]]; })()`, &sel2),
		eval(panelQuery, &rq),
		eval(`window.__viewer.hits.map((h) => h.ref + '@' + h.time)`, &marked2),
	); err != nil {
		t.Fatal(err)
	}
	if sel2 != first || rq != tq {
		t.Errorf("restored selection %q with query %+v, want %q with %+v", sel2, rq, first, tq)
	}
	var hits2 struct{ Hits []struct{ Ev, Time string } }
	v = rq.values()
	v.Set("node", fmt.Sprint(node))
	v.Set("limit", "10000")
	getJSON(t, api+"/stacks/samples?"+v.Encode(), &hits2)
	if len(marked2) != len(hits2.Hits) {
		t.Errorf("restored: %d samples marked, /stacks/samples gives %d", len(marked2), len(hits2.Hits))
	}
}

// TestServerStacksRuler: with the range "ruler", the panel aggregates the
// ruler's interval (a right drag).
func TestServerStacksRuler(t *testing.T) {
	vs := newNetTraceServer(t)
	id := vs.demo(t)
	ctx := tab(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(vs.URL+"/t/"+id+"?sp=open&sr=ruler"), waitJS(ready), waitJS(stacksReady)); err != nil {
		t.Fatal(err)
	}
	x0, y := plotXY(t, ctx, 0.2, 0)
	x1, _ := plotXY(t, ctx, 0.5, 0)
	var q panelQ
	var t0, t1 string
	var root float64
	err := chromedp.Run(ctx,
		drag(x0, x1, y, input.Right, 0),
		waitJS(`window.__viewer.ruler !== null && window.__viewer.ruler.t0 !== window.__viewer.ruler.t1`),
		eval(`String(window.__viewer.ruler.t0)`, &t0),
		eval(`String(window.__viewer.ruler.t1)`, &t1),
		waitJS(stacksReady+` && window.__viewer.stacks.q.from === window.__viewer.ruler.t0`),
		eval(panelQuery, &q),
		eval(`window.__viewer.stacks.tree.tot[0]`, &root),
	)
	shot(t, ctx, "server-stacks-ruler")
	if err != nil {
		t.Fatal(err)
	}
	if q.From != t0 || q.To != t1 {
		t.Fatalf("panel range [%s, %s), want the ruler's [%s, %s)", q.From, q.To, t0, t1)
	}
	var r stacksReply
	getJSON(t, vs.URL+"/api/traces/"+id+"/stacks?from="+t0+"&to="+t1, &r)
	if root != r.Samples {
		t.Errorf("root weight %v, want the %v samples the API counts in the ruler's interval", root, r.Samples)
	}
}

// TestServerStacksNone opens the panel on a trace without stacks (a VPP
// event log): it says so, or shows the server's error, instead of waiting
// for a tree.
func TestServerStacksNone(t *testing.T) {
	elogFile, err := os.ReadFile("../../testdata/elog/rich.elog")
	if err != nil {
		t.Fatal(err)
	}
	vs := startViewerServer(t, web.Config{
		Formats:   []trace.Format{elog.Format{}},
		MaxUpload: 1 << 20,
		Demo:      func() (string, []byte) { return "rich.elog", elogFile },
	})
	id := vs.demo(t)
	checked := false
	for _, c := range []struct{ query, want string }{
		{"?sp=open", "No event in this trace carries stacks"},
		// An event the trace lacks, as an old URL may name: the server's 400.
		{"?sp=open&sev=Thread%2FSample", "stacks: "},
	} {
		ctx := tab(t)
		var info string
		err = chromedp.Run(ctx,
			chromedp.Navigate(vs.URL+"/t/"+id+c.query),
			waitJS(ready),
			waitJS(`!document.getElementById('stacks').hidden && window.__viewer.stacks.events !== null && !window.__viewer.stacks.loading && !document.getElementById('stacks-info').textContent.includes('loading')`),
			eval(`document.getElementById('stacks-info').textContent`, &info),
		)
		shot(t, ctx, "server-stacks-none")
		if err != nil {
			t.Fatalf("%s: %v (info %q)", c.query, err, info)
		}
		if !checked { // the page waited for the index
			checked = true
			var events struct{ Events []json.RawMessage }
			getJSON(t, vs.URL+"/api/traces/"+id+"/stacks/events", &events)
			if len(events.Events) != 0 {
				t.Fatalf("the synthetic trace has stacked events: %s", events.Events)
			}
		}
		if !strings.Contains(info, c.want) {
			t.Errorf("%s: the panel says %q, want %q", c.query, info, c.want)
		}
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }
