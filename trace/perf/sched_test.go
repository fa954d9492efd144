package perf

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/eventheader"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// deriveSched reads a file made in memory through NewSched.
func deriveSched(t *testing.T, b []byte) (*Reader, *span.Set) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := span.Derive(r, NewSched(r))
	if err != nil {
		t.Fatal(err)
	}
	return r, set
}

type gotSlice struct {
	track, name string
	start, end  trace.Time
	flags       span.Flags
}

func slicesOf(set *span.Set, kind span.Kind) []gotSlice {
	var out []gotSlice
	for _, s := range set.All() {
		if tr := set.Tracks[s.Track]; tr.Kind == kind {
			out = append(out, gotSlice{fmt.Sprint(tr.Name, "@", tr.Of), set.Name(s.Name), s.Start, s.End, s.Flags})
		}
	}
	return out
}

// TestSchedSyscalls: sys_enter/sys_exit pairs of a writer-made recording
// become syscall slices named from the table of the recording's
// architecture; a lost exit, an exit without enter and an unknown number
// stay visible.
func TestSchedSyscalls(t *testing.T) {
	for _, tc := range []struct {
		arch                 string
		read, write, futex   int64
		wantR, wantW, wantFx string
	}{
		{"x86_64", 0, 1, 202, "read", "write", "futex"},
		{"aarch64", 63, 64, 98, "read", "write", "futex"},
	} {
		for _, pipe := range []bool{false, true} {
			t.Run(fmt.Sprint(tc.arch, " pipe=", pipe), func(t *testing.T) {
				var f memFile
				o := perftest.SchedOptions(tc.arch)
				o.Pipe = pipe // HEADER_ARCH arrives as a record among the events
				wr, err := perftest.NewWriter(&f, o)
				if err != nil {
					t.Fatal(err)
				}
				s := &perftest.SchedWriter{W: wr}
				s.SysExit(1000, 0, 7, 7, tc.futex, 0)      // exit without enter
				s.SysEnter(2000, 0, 7, 7, tc.read)         // read 2000–3000
				s.SysExit(3000, 0, 7, 7, tc.read, 5)       //
				s.SysEnter(4000, 1, 8, 8, tc.write)        // write on another thread …
				s.SysEnter(4500, 0, 7, 7, 999)             // syscall 999 4500–4600
				s.SysExit(4600, 0, 7, 7, 999, -38)         //
				s.SysEnter(5000, 1, 8, 8, tc.futex)        // … whose exit was lost
				s.SysExit(6000, 1, 8, 8, tc.futex, 0)      // futex 5000–6000
				s.SysEnter(7000, 0, 7, 7, tc.write)        // never returns
				s.Switch(8000, 0, 7, 7, "a", 1, 0, "idle") // the trace's last time
				wr.FinishedRound()
				if err := wr.Close(); err != nil {
					t.Fatal(err)
				}
				_, set := deriveSched(t, f.b)
				got := slicesOf(set, span.KindSlices)
				var names []string
				for _, g := range got {
					names = append(names, fmt.Sprintf("%s %d-%d %d", g.name, g.start, g.end, g.flags))
				}
				want := []string{
					// thread 7, in start order
					fmt.Sprintf("%s 1000-1000 %d", tc.wantFx, span.OpenStart),
					fmt.Sprintf("%s 2000-3000 0", tc.wantR),
					"syscall 999 4500-4600 0",
					fmt.Sprintf("%s 7000-8000 %d", tc.wantW, span.OpenEnd),
					// thread 8
					fmt.Sprintf("%s 4000-5000 %d", tc.wantW, span.OpenEnd),
					fmt.Sprintf("%s 5000-6000 0", tc.wantFx),
				}
				if fmt.Sprint(names) != fmt.Sprint(want) {
					t.Errorf("syscall slices\n got %q\nwant %q", names, want)
				}
				for _, s := range set.All() {
					if tr := set.Tracks[s.Track]; tr.Kind == span.KindSlices && set.Name(s.Name) == tc.wantR {
						if a := set.ArgList(s.Args); len(a) != 1 || a[0].Name != "ret" || a[0].Value.Int() != 5 {
							t.Errorf("read's args %v, want ret=5", a)
						}
					}
				}
			})
		}
	}
}

// TestSchedBruteForce derives a generated recording and checks its CPU
// slices and thread states against a direct computation from the decoded
// fields of the same events (Details, not the deriver's raw reads).
func TestSchedBruteForce(t *testing.T) {
	var f memFile
	if err := perftest.GenerateSched(&f, 20000, 3, 4); err != nil {
		t.Fatal(err)
	}
	_, set := deriveSched(t, f.b)
	r2, evs := readAll(t, f.b)
	first, last := evs[0].Time, evs[len(evs)-1].Time
	type run struct {
		start trace.Time
		seen  bool
	}
	cpus := map[int32]*run{}
	var want []gotSlice
	nameOf := map[int32]string{}
	for _, e := range evs {
		ty := r2.Meta().Types[e.Type]
		if ty.Name != "sched_switch" {
			continue
		}
		d, err := r2.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		field := func(n string) trace.Value {
			for _, f := range d.Fields {
				if f.Name == n {
					return f.Value
				}
			}
			t.Fatalf("no field %s in %v", n, d.Fields)
			return trace.Value{}
		}
		c := cpus[e.CPU]
		if c == nil {
			c = &run{start: first}
			cpus[e.CPU] = c
		}
		fl := span.Flags(0)
		if !c.seen {
			fl = span.OpenStart
		}
		name := fmt.Sprint("CPU ", e.CPU, "@", trace.NoTrack)
		want = append(want, gotSlice{name, field("prev_comm").Str(), c.start, e.Time, fl})
		c.start, c.seen = e.Time, true
		nameOf[e.CPU] = field("next_comm").Str()
	}
	for cpu, c := range cpus {
		want = append(want, gotSlice{fmt.Sprint("CPU ", cpu, "@", trace.NoTrack), nameOf[cpu], c.start, last, span.OpenEnd})
	}
	got := slicesOf(set, span.KindCPU)
	slicesSortFunc(got)
	slicesSortFunc(want)
	if len(got) != len(want) {
		t.Fatalf("%d CPU slices, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("CPU slice %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Every closed state slice of a thread follows the previous one
	// without gap or overlap, and running alternates with a waiting
	// state.
	for id := range set.Tracks {
		if set.Tracks[id].Kind != span.KindState {
			continue
		}
		sl := set.TrackSlices(span.TrackID(id))
		for i := 1; i < len(sl); i++ {
			if sl[i].Start != sl[i-1].End {
				t.Fatalf("track %d: state %d starts at %d, the previous ends at %d", id, i, sl[i].Start, sl[i-1].End)
			}
			if set.Name(sl[i].Name) == set.Name(sl[i-1].Name) {
				t.Fatalf("track %d: state %q twice in a row", id, set.Name(sl[i].Name))
			}
		}
	}
	// Syscalls: every read/write/futex of the generator pairs.
	n := 0
	for _, s := range set.All() {
		if set.Tracks[s.Track].Kind == span.KindSlices && s.Flags == 0 {
			n++
			if nm := set.Name(s.Name); nm != "read" && nm != "write" && nm != "futex" {
				t.Fatalf("syscall %q", nm)
			}
		}
	}
	if n < 20000*3/8-12 {
		t.Errorf("%d closed syscall slices, want about %d", n, 20000*3/8)
	}
}

// deriveOneByOne derives d from r's events shown to the Driver one at a
// time (span.Derive shows them in runs).
func deriveOneByOne(r *Reader, d span.Deriver) *span.Set {
	v := span.NewDriver(r, d)
	for {
		e, err := r.ReadEvent()
		if err != nil {
			return v.Finish()
		}
		v.Observe(e)
	}
}

func slicesSortFunc(s []gotSlice) {
	slices.SortFunc(s, func(a, b gotSlice) int {
		return cmp.Or(cmp.Compare(a.track, b.track), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
}

// FuzzSched derives scheduling and EventHeader activity tracks from
// arbitrary perf.data bytes: no panic, every slice well formed, and the
// same slices whether Sched is shown runs of events or single ones
// (TestSchedRuns).
func FuzzSched(f *testing.F) {
	var a, b memFile
	if err := perftest.GenerateSched(&a, 300, 2, 3); err == nil {
		f.Add(a.b)
	}
	wr, err := perftest.NewWriter(&b, perftest.SchedOptions("aarch64"))
	if err == nil {
		s := &perftest.SchedWriter{W: wr}
		s.SysEnter(10, 0, 1, 1, 63)
		s.Switch(20, 0, 1, 1, "x", 2, 2, "y")
		s.Wakeup(30, 1, 2, 2, 1, "x")
		s.SysExit(40, 0, 1, 1, 63, 0)
		wr.FinishedRound()
		if wr.Close() == nil {
			f.Add(b.b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{})
		if err != nil {
			return
		}
		eh := eventheader.NewActivities()
		eh.Only = r.IsEventHeader
		set, _ := span.Derive(r, span.Join(NewSched(r), eh))
		for id := range set.Tracks {
			c := set.Column(span.TrackID(id))
			for i := range c.Len() {
				if s := c.At(i); s.End < s.Start || (i > 0 && s.Start < c.Start(i-1)) {
					t.Fatalf("track %d slice %d: %+v", id, i, s)
				}
			}
		}
		schedOnly := func(single bool) string {
			r, err := NewReader(bytes.NewReader(data), int64(len(data)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var set *span.Set
			if single {
				set = deriveOneByOne(r, NewSched(r))
			} else {
				set, _ = span.Derive(r, NewSched(r))
			}
			return fmt.Sprint(set.Tracks, set.Names, set.All())
		}
		if schedOnly(false) != schedOnly(true) {
			t.Fatal("runs of events derive other slices than single events")
		}
	})
}

// TestSchedBusyCounter: the "busy CPUs" counter follows switches to and
// from the idle task on two CPUs, sampled where it changes.
func TestSchedBusyCounter(t *testing.T) {
	var f memFile
	wr, err := perftest.NewWriter(&f, perftest.SchedOptions("x86_64"))
	if err != nil {
		t.Fatal(err)
	}
	s := &perftest.SchedWriter{W: wr}
	s.Switch(10, 0, 0, 0, "swapper/0", 0, 5, "a") // CPU 0 busy: 1
	s.Switch(20, 1, 0, 0, "swapper/1", 0, 6, "b") // CPU 1 busy: 2
	s.Switch(30, 0, 5, 5, "a", 1, 7, "c")         // still 2: no sample
	s.Switch(40, 1, 6, 6, "b", 1, 0, "swapper/1") // 1
	s.Switch(50, 0, 7, 7, "c", 1, 0, "swapper/0") // 0
	s.Switch(60, 1, 0, 0, "swapper/1", 0, 6, "b") // 1
	wr.FinishedRound()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	_, set := deriveSched(t, f.b)
	var got []string
	for id, tr := range set.Tracks {
		if tr.Kind == span.KindCounter {
			for _, x := range set.TrackSamples(span.TrackID(id)) {
				got = append(got, fmt.Sprintf("%d:%g", x.Time, x.Value))
			}
		}
	}
	if want := []string{"10:1", "20:2", "40:1", "50:0", "60:1"}; !slices.Equal(got, want) {
		t.Errorf("busy CPUs %v, want %v", got, want)
	}
}

// TestSchedRuns: Sched derives the same Set whether a Driver shows it
// runs of events (BatchSplit, noted on the reading goroutine and derived
// from on another) or single events, from a file or from a reader only
// one goroutine may read, on recordings plain, piped, compressed and
// big-endian, with EventHeader events between the scheduling ones.
func TestSchedRuns(t *testing.T) {
	var inputs []memFile
	var f memFile
	if err := perftest.GenerateSched(&f, 20000, 3, 4); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, f)
	for _, o := range []perftest.GenerateOptions{
		{SchedEvery: 3},
		{SchedEvery: 1000}, // runs of EventHeader events, few switches
		{SchedEvery: 2, Pipe: true},
		{SchedEvery: 2, Compress: true},
		{SchedEvery: 2, BigEndian: true},
	} {
		var g memFile
		if err := perftest.Generate(&g, 6000, o); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, g)
	}
	derive := func(ra io.ReaderAt, size int, single, withEH bool) string {
		r, err := NewReader(ra, int64(size), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := NewSched(r)
		eh := eventheader.NewActivities()
		eh.Only = r.IsEventHeader
		var d span.Deriver = s
		if withEH { // EventHeader events end the runs of scheduling ones
			d = span.Join(s, span.Only(r.IsEventHeader, eh))
		}
		var set *span.Set
		if single {
			set = deriveOneByOne(r, d)
		} else if set, err = span.Derive(r, d); err != nil {
			t.Fatal(err)
		}
		out := fmt.Sprint(set.Tracks, set.Names, set.Dropped, set.All())
		for id := range set.Tracks {
			out += fmt.Sprint(set.TrackSamples(span.TrackID(id)))
		}
		for id := range set.Args {
			out += fmt.Sprint(set.ArgList(span.ArgsID(id)))
		}
		return out
	}
	for i, in := range inputs {
		for _, withEH := range []bool{false, true} {
			runs := derive(bytes.NewReader(in.b), len(in.b), false, withEH)
			section := derive(io.NewSectionReader(bytes.NewReader(in.b), 0, int64(len(in.b))), len(in.b), false, withEH)
			single := derive(bytes.NewReader(in.b), len(in.b), true, withEH)
			if runs != single || section != single || len(single) < 100 {
				t.Errorf("input %d, EventHeader %v: runs derive the same %v, from a section %v, single events %d bytes", i, withEH, runs == single, section == single, len(single))
			}
		}
	}
}
