package wire

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/synth"
)

func index(t testing.TB, cfg synth.Config) *render.Index {
	t.Helper()
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// frames returns encoded frames of a small synthetic trace: its tables
// and replies at several zoom levels.
func frames(t testing.TB) [][]byte {
	x := index(t, synth.Config{Events: 20000, Tracks: 5, Types: 7, Seed: 2, LostEvery: 900, MarkEvery: 1000, Truncate: true})
	ids := x.Tracks()
	out := [][]byte{AppendTables(nil, 0, NewTables(x.Meta(), append(ids, trace.NoTrack)))}
	first, last := x.Span()
	for k, div := range []trace.Time{1, 10, 1000, 100000} {
		s, err := x.Query(context.Background(), render.Viewport{Start: first, End: first + (last-first)/div + 1, Width: 300, Tracks: ids})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, AppendReply(nil, uint32(k+1), NewReply(s, time.Millisecond)))
	}
	return out
}

func TestReplyRoundTrip(t *testing.T) {
	x := index(t, synth.Config{Events: 50000, Tracks: 9, Types: 11, Seed: 4, LostEvery: 700, MarkEvery: 500, Truncate: true})
	ids := append(x.Tracks(), 77)
	first, last := x.Span()
	for _, win := range []trace.Time{last - first + 1, (last - first) / 50, 2000, 10} {
		s, err := x.Query(context.Background(), render.Viewport{Start: first + (last-first)/3, End: first + (last-first)/3 + win, Width: 1500, Tracks: ids})
		if err != nil {
			t.Fatal(err)
		}
		r := NewReply(s, 1234*time.Microsecond)
		b := AppendReply([]byte("prefix"), 42, r)
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatal("AppendReply lost the prefix")
		}
		// AppendSlice writes the same bytes without the Reply.
		if b2 := AppendSlice([]byte("prefix"), 42, s, 1234*time.Microsecond, math.MaxInt32); !bytes.Equal(b2, b) {
			t.Fatalf("AppendSlice differs from AppendReply(NewReply)")
		}
		if b2 := AppendSlice(nil, 42, s, 1234*time.Microsecond, 3); true {
			f2, err := Decode(b2)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range f2.Reply.Tracks {
				for _, ty := range tr.Type {
					if ty > 3 {
						t.Fatalf("type %d not folded into 3", ty)
					}
				}
			}
		}
		f, err := Decode(b[6:])
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind != KindReply || f.Seq != 42 || !reflect.DeepEqual(f.Reply, r) {
			t.Fatalf("decoded %+v, want %+v", f, r)
		}
		// The reply says what the slice says.
		if f.Reply.Start != int64(s.Start) || f.Reply.Res != s.Res || int(f.Reply.Buckets) != s.Buckets || f.Reply.Micros != 1234 {
			t.Fatalf("header %+v", f.Reply)
		}
		for k, ts := range s.Tracks {
			wt := f.Reply.Tracks[k]
			if wt.Track != int32(ts.Track) || len(wt.X) != len(ts.Items) {
				t.Fatalf("track %d: %d items, want %d", k, len(wt.X), len(ts.Items))
			}
			for i, it := range ts.Items {
				want := float64(it.Bucket)
				if it.Count == 1 {
					want = float64(it.Time-s.Start) / float64(s.Res)
				}
				if math.Abs(float64(wt.X[i])-want) > 1.0/128 || int32(math.Floor(float64(wt.X[i]))) != it.Bucket && it.Count > 1 {
					t.Fatalf("item %d x %v, want %v", i, wt.X[i], want)
				}
				if wt.Count[i] != uint32(it.Count) || wt.First[i] != uint32(it.First) || wt.Type[i] != int32(it.Type) {
					t.Fatalf("item %d: %d %d %d, want %+v", i, wt.Count[i], wt.First[i], wt.Type[i], it)
				}
			}
		}
		if len(f.Reply.Markers.X) != len(s.Markers) {
			t.Fatalf("%d markers, want %d", len(f.Reply.Markers.X), len(s.Markers))
		}
	}
}

func TestTablesRoundTrip(t *testing.T) {
	m := &trace.Meta{
		Types:  []trace.EventType{{Provider: "P", Name: "A"}, {Name: "b"}, {ID: 7}, {Name: "ünï\x00code"}},
		Tracks: []trace.Track{{Kind: trace.TrackProcess, Name: "proc", Parent: trace.NoTrack}, {Kind: trace.TrackThread, Parent: 0}},
	}
	tab := NewTables(m, []trace.TrackID{trace.NoTrack, 0, 1})
	want := &Tables{
		Types:  []string{"P/A", "b", "#7", "ünï\x00code"},
		Tracks: []TrackName{{ID: -1, Parent: -1, Name: "(no track)"}, {ID: 0, Parent: -1, Name: "proc"}, {ID: 1, Parent: 0, Name: "thread 1"}},
	}
	if !reflect.DeepEqual(tab, want) {
		t.Fatalf("NewTables = %+v, want %+v", tab, want)
	}
	b := AppendTables(nil, 9, tab)
	if len(b)%4 != 0 {
		t.Errorf("frame of %d bytes is not a multiple of 4", len(b))
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindTables || f.Seq != 9 || !reflect.DeepEqual(f.Tables, want) {
		t.Fatalf("decoded %+v", f.Tables)
	}
	empty, err := Decode(AppendTables(nil, 1, &Tables{}))
	if err != nil || len(empty.Tables.Types) != 0 || len(empty.Tables.Tracks) != 0 {
		t.Fatalf("empty tables: %+v %v", empty, err)
	}
}

// TestLayout pins the byte layout FORMAT.md documents.
func TestLayout(t *testing.T) {
	r := &Reply{Start: -5, Res: 8, Buckets: 3, Micros: 2,
		Tracks:  []TrackItems{{Track: 4, X: []float32{1.5}, Count: []uint32{1}, First: []uint32{9}, Type: []int32{-1}}},
		Markers: Markers{X: []float32{2}, Kind: []uint32{1}, Track: []int32{4}, Count: []uint32{1}, Lost: []uint32{10}}}
	got := AppendReply(nil, 0x01020304, r)
	want := []byte{
		'V', 'W', 1, 2, 4, 3, 2, 1, 76, 0, 0, 0, 0, 0, 0, 0, // header: body 76 bytes
		0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // start -5
		8, 0, 0, 0, 0, 0, 0, 0, // res
		3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, // buckets, micros, tracks, markers
		4, 0, 0, 0, 1, 0, 0, 0, // track 4, 1 item
		0, 0, 0xc0, 0x3f, 1, 0, 0, 0, 9, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, // x 1.5, count, first, type -1
		0, 0, 0, 0x40, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, // marker
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("reply bytes\n% x\nwant\n% x", got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := frames(t)[1]
	for name, b := range map[string][]byte{
		"empty":    nil,
		"magic":    append([]byte("XW"), good[2:]...),
		"version":  append([]byte{'V', 'W', 9}, good[3:]...),
		"kind":     append([]byte{'V', 'W', 1, 77}, good[4:]...),
		"short":    good[:len(good)-4],
		"trailing": append(append([]byte(nil), good...), 0, 0, 0, 0),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", name, err)
		}
	}
	// A huge item count is rejected before allocating.
	b := append([]byte(nil), good...)
	le.PutUint32(b[HeaderSize+32+4:], 1<<30)
	if _, err := Decode(b); !errors.Is(err, ErrFormat) {
		t.Errorf("huge count: %v", err)
	}
}

// goldenFrames are frames of fixed values, independent of the index.
func goldenFrames() [][]byte {
	m := &trace.Meta{
		Types:  []trace.EventType{{Provider: "Microsoft-Windows-DotNETRuntime", Name: "GCStart"}, {Name: "sched_switch"}, {ID: 7}},
		Tracks: []trace.Track{{Kind: trace.TrackProcess, Name: "dotnet (1234)", Parent: trace.NoTrack}, {Kind: trace.TrackThread, Name: "thread 1240", Parent: 0}},
	}
	r := &Reply{Start: 1 << 40, Res: 1 << 10, Buckets: 2001, Micros: 350,
		Tracks: []TrackItems{
			{Track: 1, X: []float32{0, 17.25, 18}, Count: []uint32{40, 1, 3}, First: []uint32{0, 40, 41}, Type: []int32{0, 2, 1}},
			{Track: -1, X: []float32{}, Count: []uint32{}, First: []uint32{}, Type: []int32{}},
		},
		Markers: Markers{X: []float32{3.5, 1999.75}, Kind: []uint32{1, 5}, Track: []int32{1, -1}, Count: []uint32{2, 1}, Lost: []uint32{12, 0}}}
	return [][]byte{AppendTables(nil, 0, NewTables(m, []trace.TrackID{0, 1, trace.NoTrack})), AppendReply(nil, 7, r)}
}

var update = flag.Bool("update", false, "rewrite testdata/*.frame from the encoder")

// TestGolden keeps the encoder's output for a fixed synthetic trace in
// testdata, so that a change of the layout shows in review (and bumps
// Version); the files also seed FuzzDecode.
func TestGolden(t *testing.T) {
	for i, b := range goldenFrames() {
		name := filepath.Join("testdata", fmt.Sprintf("frame%d.frame", i))
		if *update {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s: the encoder's output changed (go test -update after bumping Version)", name)
		}
	}
}

// FuzzDecode checks that Decode never panics or over-allocates, and that
// whatever it accepts encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.frame"))
	for _, name := range seeds {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range frames(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		var again []byte
		switch fr.Kind {
		case KindTables:
			again = AppendTables(nil, fr.Seq, fr.Tables)
		case KindReply:
			again = AppendReply(nil, fr.Seq, fr.Reply)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n% x\n% x", again, b)
		}
	})
}
