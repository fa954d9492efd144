package web

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"viewer/trace"
	"viewer/trace/span"
)

func TestViewRoundTrip(t *testing.T) {
	sel := EventRef{Track: 3, Index: 1234}
	tr := trace.TrackID(7)
	full := View{
		Version: ViewVersion, HasRange: true, Start: -5, End: 1 << 62,
		Sel: &sel, Track: &tr,
		Hide:        []trace.TrackID{1, 2, 3, 4, 9, 12, 13},
		Pin:         []trace.TrackID{9, 2},
		Order:       []trace.TrackID{5, 0, 1},
		HideTypes:   []trace.TypeID{0, 40000},
		HideDerived: []span.TrackID{2, 5, 6, 7},
		Mode:        ModeSummary,
		Query:       "GC/Start && Reason = 4",
		Filter:      "thread 1&2",
		Where:       "Reason = 4", WhereMode: "hide",
		Stacks: "open", StacksView: "bottom", StacksRange: "all", StacksTracks: "sel",
		StacksEvent: "Thread/Sample", StacksWeight: "field:Size", StacksTf: "fmod%21Main~r",
		StacksQ: "Parse", StacksFn: "mod!Main(int)", StacksNode: "mod!Main\nmod!Run",
		Traces:  []uuid.UUID{uuid.MustParse("3f2504e0-4f89-41d3-9a0c-0305e82c3301"), uuid.MustParse("9a8b7c6d-0000-4000-8000-000000000001")},
		Offsets: []TraceOffset{{Trace: 1, NS: -1500}},
	}
	enc := full.Encode()
	want := "v=1&s=-5&e=4611686018427387904&sel=3:1234&tr=7&hide=1-4,9,12,13&pin=9,2&order=5,0,1&xt=0,40000&xd=2,5-7&mode=summary&q=GC%2FStart+%26%26+Reason+%3D+4&f=thread+1%262&w=Reason+%3D+4&wm=hide" +
		"&sp=open&sv=bottom&sr=all&sx=sel&sev=Thread%2FSample&sw=field%3ASize&stf=fmod%2521Main~r&sq=Parse&sfn=mod%21Main%28int%29&sn=mod%21Main%0Amod%21Run" +
		"&t=3f2504e0-4f89-41d3-9a0c-0305e82c3301,9a8b7c6d-0000-4000-8000-000000000001&off=1:-1500"
	if enc != want {
		t.Errorf("Encode:\n got %s\nwant %s", enc, want)
	}
	q, err := url.ParseQuery(enc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseView(q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, full) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, full)
	}
	def, err := ParseView(url.Values{})
	if err != nil || !reflect.DeepEqual(def, DefaultView()) || def.Encode() != "v=1" {
		t.Errorf("empty query: %+v %v %q", def, err, def.Encode())
	}
}

func TestParseViewErrors(t *testing.T) {
	for _, tc := range []struct{ query, key string }{
		{"v=2", "v"},
		{"v=x", "v"},
		{"s=1", "s"},
		{"s=5&e=5", "e"},
		{"s=a&e=5", "s"},
		{"sel=12", "sel"},
		{"sel=1:-2", "sel"},
		{"tr=-1", "tr"},
		{"tr=01", "tr"},
		{"hide=3,2", "hide"},
		{"hide=5-1", "hide"},
		{"hide=0-99999999", "hide"},
		{"pin=1,1", "pin"},
		{"pin=1-3", "pin"},
		{"xt=", "xt"},
		{"mode=fancy", "mode"},
		{"q=" + strings.Repeat("a", MaxViewQuery+1), "q"},
		{"s=1&s=2&e=3", "s"},
	} {
		q, _ := url.ParseQuery(tc.query)
		_, err := ParseView(q)
		ve, ok := err.(*ViewError)
		if !ok || ve.Key != tc.key {
			t.Errorf("%s: error %v, want one for key %q", tc.query, err, tc.key)
		}
	}
}

func TestEventRef(t *testing.T) {
	for _, s := range []string{"0:0", "-1:5", "2147483647:2147483647"} {
		r, err := ParseEventRef(s)
		if err != nil || r.String() != s {
			t.Errorf("%s: %v %v", s, r, err)
		}
	}
	for _, s := range []string{"", "1", "1:", ":1", "-2:0", "+1:0", "01:0", "1:-1", "1:2:3", "-0:1"} {
		if _, err := ParseEventRef(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

// FuzzParseView checks that every view ParseView accepts encodes to a
// query that parses back to the same view and the same encoding.
func FuzzParseView(f *testing.F) {
	for _, s := range []string{
		"v=1", "v=1&s=-5&e=10&sel=3:1234&tr=7&hide=1-4,9&pin=9,2&order=5,0&xt=0,4&mode=summary&q=a%26b&f=x",
		"s=0&e=1", "hide=0-65535", "q=%ff%fe", "sel=-1:0", "unknown=1&v=1",
		"t=3f2504e0-4f89-41d3-9a0c-0305e82c3301,9a8b7c6d-0000-4000-8000-000000000001&off=0:-3,1:1500000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		v, err := ParseView(q)
		if err != nil {
			return
		}
		enc := v.Encode()
		q2, err := url.ParseQuery(enc)
		if err != nil {
			t.Fatalf("Encode gave an unparsable query %q: %v", enc, err)
		}
		v2, err := ParseView(q2)
		if err != nil {
			t.Fatalf("%q does not parse: %v", enc, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", raw, v2, v)
		}
		if enc2 := v2.Encode(); enc2 != enc {
			t.Fatalf("encoding unstable: %q then %q", enc, enc2)
		}
	})
}
