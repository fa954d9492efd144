package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
)

// TestViewSpecJS fails when ui/static/js/urlspec.js is not what
// `go generate ./web` writes from the table.
func TestViewSpecJS(t *testing.T) {
	got, err := os.ReadFile("../ui/static/js/urlspec.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, ViewSpecJS()) {
		t.Fatal("ui/static/js/urlspec.js is stale: run go generate ./web")
	}
}

// TestViewParamsCoverView checks that the table names every field of
// View's JSON once (has_range aside: the range kinds set it).
func TestViewParamsCoverView(t *testing.T) {
	var fields, params []string
	rt := reflect.TypeFor[View]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "has_range" {
			fields = append(fields, name)
		}
	}
	for _, p := range ViewParams() {
		params = append(params, p.Field)
		if p.at == nil || (p.State == "") != (p.Kind == kindVersion) {
			t.Errorf("param %q: incomplete row", p.Key)
		}
	}
	slices.Sort(fields)
	slices.Sort(params)
	if !slices.Equal(fields, params) {
		t.Errorf("View's fields %v, the table's %v", fields, params)
	}
}

// urlCorpus is the agreement test's URLs (queries without "?"): normal
// views, defaults written out, extreme ranges, id lists and sets, text
// with escapes and bad UTF-8, and malformed values of every kind.
func urlCorpus() []string {
	ids := func(lo, hi int) string {
		var b []string
		for i := lo; i <= hi; i++ {
			b = append(b, fmt.Sprint(i))
		}
		return strings.Join(b, ",")
	}
	return []string{
		// Normal views and defaults.
		"", "v=1", "v=1&s=0&e=1",
		"v=1&s=1000&e=2000&sel=3:1234&tr=7&hide=1-4,9,12,13&pin=9,2&order=5,0,1&xt=0,40000&mode=summary&q=GC%2FStart+%26%26+Reason+%3D+4&f=thread+1%262",
		"f=x&q=y&mode=summary&xt=1&order=2&pin=3&hide=4&tr=5&sel=6:7&e=9&s=8&v=1", // any key order
		"v=1&mode=event", "mode=event&q=&f=", "q", "v=1&unknown=1&Q=upper",
		// Ranges up to the int64 limits.
		"s=-5&e=4611686018427387904",
		"s=-9223372036854775808&e=9223372036854775807",
		"s=9223372036854775806&e=9223372036854775807",
		"s=-9223372036854775808&e=-9223372036854775807",
		"s=9223372036854775807&e=9223372036854775808",
		"s=-9223372036854775809&e=0",
		"s=+5&e=007", "s=-0&e=1",
		"s=5&e=5", "s=6&e=5", "s=1", "e=1", "s=&e=1", "s=1e3&e=2000", "s=0x10&e=100", "s=1&e=x", "s=1&s=2&e=3",
		// Selection and selected track.
		"sel=0:0", "sel=-1:5", "sel=2147483647:2147483647", "sel=2147483648:0", "sel=-2:0", "sel=+1:0",
		"sel=01:0", "sel=1:-1", "sel=1:2:3", "sel=-0:1", "sel=12", "sel=",
		"tr=0", "tr=2147483647", "tr=2147483648", "tr=-1", "tr=01", "tr=+5", "tr=-0", "tr=",
		// Hidden and pinned tracks, track order, hidden types.
		"hide=0-65535", "hide=0-65536", "hide=3,2", "hide=5-1", "hide=1,2,3,5,6,8", "hide=1-1", "hide=1-2,3",
		"hide=+1-+3", "hide=-5", "hide=1--2", "hide=2147483646-2147483647", "hide=1,,2", "hide=1&hide=2",
		"xt=", "xt=0,4,5,6", "xt=7-9&hide=7-9",
		"pin=9,2", "pin=1,1", "pin=1-3", "pin=+1,-0", "order=5,0,1&pin=0",
		"pin=" + ids(0, MaxViewIDs-1), "order=" + ids(0, MaxViewIDs),
		// Modes.
		"mode=summary", "mode=SUMMARY", "mode=fancy", "mode=",
		// Search query and track filter.
		"q=a+b", "q=a%2Bb", "q=%E2%82%AC", "q=%ff%fe", "q=%E2%82A", "q=%ED%A0%80", "q=%F4%90%80%80", "q=%C0%80",
		"q=%EF%BF%BD", "q=caf%C3%A9+%26%26+x+%3D+%221%22", "f=!'()*~-._", "q=%00", "f=%0A%0D%09",
		"q=\u00e9t\u00e9", "q=\U0001F600", "q=a=b", "%71=escaped+key",
		"q=" + strings.Repeat("a", MaxViewQuery), "q=" + strings.Repeat("a", MaxViewQuery+1),
		"f=" + strings.Repeat("%C3%A9", MaxViewQuery/2), "f=" + strings.Repeat("%C3%A9", MaxViewQuery/2+1),
		// What the query syntax itself drops.
		"q=a;b&v=1", "q=%zz&tr=1", "q=%", "f=%2", "q=x&q=y", "&&&v=1&&", "=x&v=1", "tr=1;tr=2",
		strings.Repeat("x=1&", 10000) + "s=1&e=2",
		// The stacks panel.
		"sp=open&sv=butterfly&sr=ruler&sx=shown&sev=Thread%2FSample&sw=time&stf=fmod%2521Main~mlib%2521x~r&sq=a+b&sfn=m%21f&sn=m%21a%0Am%21b",
		"sp=closed&sv=flame&sr=view&sx=all", "sp=OPEN", "sp=", "sv=tree", "sr=fence", "sx=2",
		"sev=" + strings.Repeat("x", MaxViewName), "sev=" + strings.Repeat("x", MaxViewName+1), "sw=%ff",
		"sn=" + strings.Repeat("a", MaxViewPath), "sn=" + strings.Repeat("a", MaxViewPath+1), "stf=%zz&sp=open",
		// A combined view's traces and offsets.
		"t=3f2504e0-4f89-41d3-9a0c-0305e82c3301,9a8b7c6d-0000-4000-8000-000000000001&off=1:-1500000",
		"t=3f2504e0-4f89-41d3-9a0c-0305e82c3301&off=0:1,3:1125899906842624", "off=0:1125899906842625", "off=1:0",
		"off=1:5,0:5", "off=1:+5", "off=1:05", "off=1:-0", "off=8:1", "off=1", "off=a:1", "off=",
		"t=3F2504E0-4F89-41D3-9A0C-0305E82C3301", "t=3f2504e0-4f89-41d3-9a0c-0305e82c3301,3f2504e0-4f89-41d3-9a0c-0305e82c3301",
		"t=x", "t=", "t=" + strings.Repeat("3f2504e0-4f89-41d3-9a0c-0305e82c330,", 9) + "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
		// Versions.
		"v=2", "v=0", "v=01", "v=+1", "v=x", "v=1&v=1",
	}
}

// goCanonical parses a query as the server does and, while ParseView
// refuses it, drops the key the error names (both range keys for a range
// error), as urlstate.js drops what it refuses. It returns the view and
// the first error's key.
func goCanonical(raw string) (View, string) {
	q := (&url.URL{RawQuery: raw}).Query()
	first := ""
	for {
		v, err := ParseView(q)
		var ve *ViewError
		if !errors.As(err, &ve) {
			return v, first
		}
		if first == "" {
			first = ve.Key
		}
		delete(q, ve.Key)
		for _, p := range viewParams {
			if (p.Kind == kindStart || p.Kind == kindEnd) && (ve.Key == "s" || ve.Key == "e") {
				delete(q, p.Key)
			}
		}
	}
}

// agreeScript runs urlstate.js (and conn.js's fitViewport) on the cases
// the test writes to stdin.
const agreeScript = `
import { readFileSync } from 'node:fs';
import { parseStateChecked, formatState, fromPageView } from './js/urlstate.js';
import { fitViewport } from './js/conn.js';

const input = JSON.parse(readFileSync(0, 'utf8'));
const show = (st) => JSON.stringify(st, (k, v) => (typeof v === 'bigint' ? v + 'n' : v));
const cases = input.cases.map((c) => {
  const a = parseStateChecked(c.raw);
  const canon = formatState(a.state);
  const g = parseStateChecked(c.goEnc);
  return {
    canon, refused: a.refused, state: show(a.state),
    canonState: show(parseStateChecked(canon).state),
    goEncCanon: formatState(g.state), goEncRefused: g.refused, goEncState: show(g.state),
    pageState: show(fromPageView(c.goView)),
  };
});
const fits = input.viewports.map((q) => {
  const f = fitViewport({ ...q, start: BigInt(q.start), end: BigInt(q.end) });
  return { ...f, start: String(f.start), end: String(f.end) };
});
process.stdout.write(JSON.stringify({ cases, fits }));
`

// TestURLStateAgreement runs web.ParseView / View.Encode and urlstate.js's
// parseState / formatState on the same URLs: both must give the same
// canonical URL, refuse the same first key, and read each other's output
// back to the same state; the page data's view must read (fromPageView) to
// that state too. It also checks that the page fits viewport requests
// within the limits the server enforces.
func TestURLStateAgreement(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is needed to check urlstate.js against ParseView (CI is set)")
		}
		t.Skip("node not found: urlstate.js's agreement with ParseView is not checked (install nodejs)")
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "js"), os.DirFS("../ui/static/js")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agree.js"), []byte(agreeScript), 0o644)

	type jsCase struct {
		Raw    string `json:"raw"`
		GoEnc  string `json:"goEnc"`
		GoView View   `json:"goView"`
	}
	corpus := urlCorpus()
	var cases []jsCase
	var views []View
	var firstErr []string
	for _, raw := range corpus {
		v, key := goCanonical(raw)
		views = append(views, v)
		firstErr = append(firstErr, key)
		cases = append(cases, jsCase{raw, v.Encode(), v})
	}
	type viewportReq struct {
		Start  string          `json:"start"`
		End    string          `json:"end"`
		Width  int             `json:"width"`
		Tracks []trace.TrackID `json:"tracks"`
		Hidden []trace.TypeID  `json:"hidden"`
		Mode   string          `json:"mode"`
	}
	tracks := func(n int) []trace.TrackID { return make([]trace.TrackID, n) }
	viewports := []viewportReq{
		{"0", "1000", 1600, tracks(40), []trace.TypeID{}, "event"},
		{"0", "1000", 40000, tracks(3), []trace.TypeID{}, "event"},
		{"-9223372036854775808", "9223372036854775807", 7680, tracks(740), []trace.TypeID{1}, "summary"},
		{"0", "1", 2000, tracks(render.MaxTracks + 500), []trace.TypeID{}, "event"},
	}
	in, _ := json.Marshal(map[string]any{"cases": cases, "viewports": viewports})
	cmd := exec.Command(node, "agree.js")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var res struct {
		Cases []struct {
			Canon        string   `json:"canon"`
			Refused      []string `json:"refused"`
			State        string   `json:"state"`
			CanonState   string   `json:"canonState"`
			GoEncCanon   string   `json:"goEncCanon"`
			GoEncRefused []string `json:"goEncRefused"`
			GoEncState   string   `json:"goEncState"`
			PageState    string   `json:"pageState"`
		} `json:"cases"`
		Fits []viewportReq `json:"fits"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Cases) != len(corpus) || len(res.Fits) != len(viewports) {
		t.Fatalf("node's answer: %v (%d cases, %d fits)", err, len(res.Cases), len(res.Fits))
	}
	short := func(s string) string {
		if len(s) > 120 {
			return s[:120] + fmt.Sprintf("…(%d bytes)", len(s))
		}
		return s
	}
	refusedAgree := 0
	for i, js := range res.Cases {
		raw, goEnc := short(corpus[i]), cases[i].GoEnc
		if js.Canon != goEnc {
			t.Errorf("%q: JS formats %q, Go encodes %q", raw, short(js.Canon), short(goEnc))
		}
		if firstErr[i] == "" && len(js.Refused) > 0 || firstErr[i] != "" && (len(js.Refused) == 0 || js.Refused[0] != firstErr[i]) {
			t.Errorf("%q: JS refuses %q, Go first refuses %q", raw, js.Refused, firstErr[i])
		} else if firstErr[i] != "" {
			refusedAgree++
		}
		// Go-encoded URLs read back in JS to the same state and URL.
		if len(js.GoEncRefused) > 0 || js.GoEncCanon != goEnc || js.GoEncState != js.State {
			t.Errorf("%q: JS reads Go's %q as %s (refusing %q), formatting %q; from the raw URL: %s", raw, short(goEnc), short(js.GoEncState), js.GoEncRefused, short(js.GoEncCanon), short(js.State))
		}
		if js.CanonState != js.State {
			t.Errorf("%q: JS round trip changes the state: %s then %s", raw, short(js.State), short(js.CanonState))
		}
		// The page data carries the same view.
		if js.PageState != js.State {
			t.Errorf("%q: page data reads as %s, the URL as %s", raw, short(js.PageState), short(js.State))
		}
		// JS-formatted URLs read back in Go to the same view and URL.
		v, err := ParseView((&url.URL{RawQuery: js.Canon}).Query())
		if err != nil || !reflect.DeepEqual(v, views[i]) || v.Encode() != goEnc {
			t.Errorf("%q: Go reads JS's %q as %+v, %v; want %+v", raw, short(js.Canon), v, err, views[i])
		}
	}
	for i, f := range res.Fits {
		var start, end sessionTime
		json.Unmarshal([]byte(f.Start), &start)
		json.Unmarshal([]byte(f.End), &end)
		req := request{Type: "viewport", Start: start, End: end, Width: f.Width, Tracks: f.Tracks, Types: f.Hidden, Mode: Mode(f.Mode)}
		if err := (&session{}).accept(&req); err != nil {
			t.Errorf("viewport %d fitted to width %d, %d tracks: the server refuses it: %v", i, f.Width, len(f.Tracks), err)
		}
		if w := viewports[i]; f.Width > w.Width || (len(w.Tracks) <= render.MaxTracks && len(f.Tracks) != len(w.Tracks)) || f.Start != w.Start || f.End != w.End {
			t.Errorf("viewport %d: %+v fitted to %+v", i, w, f)
		}
	}
	t.Logf("%d URLs (%d refused by both at the same key), %d viewport requests: Go and JS agree", len(corpus), refusedAgree, len(viewports))
}
