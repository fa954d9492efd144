package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/perf"
	"viewer/trace/perf/eventheader"
	"viewer/trace/span"
	"viewer/trace/wrap"
)

// deriver returns what derives slice tracks from the trace r reads (r is
// the format's own reader): EventSource activities for .NET traces;
// scheduling, syscalls, EventHeader and .NET activities for perf.data; nil for
// formats nothing derives from. .NET traces (and .NET user_events in
// perf.data) also get their GC tracks.
func deriver(r trace.Reader) span.Deriver {
	switch r.Meta().Format {
	case "nettrace", "netperf":
		return span.Join(clr.NewActivities(), clr.NewGCTracks())
	case "perf":
		if p, ok := r.(*perf.Reader); ok {
			eh, dn, gc := eventheader.NewActivities(), clr.NewActivities(), clr.NewGCTracks()
			eh.Only, dn.Only, gc.Only = p.IsEventHeader, p.IsDotNet, p.IsDotNet
			// Only: a call per event spared where they have nothing to do.
			return span.Join(perf.NewSched(p), span.Only(p.IsEventHeader, eh), span.Only(p.IsDotNet, dn), span.Only(p.IsDotNet, gc))
		}
	}
	return nil
}

// runSpans prints the derived slices of a trace as JSON Lines, or with
// --summary their totals.
func runSpans(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("spans", stderr)
	summary := fs.Bool("summary", false, "print totals per track and name (for CPU tracks: per thread) instead of the slices")
	asJSON := fs.Bool("json", false, "with --summary: print one JSON object")
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	if err := regularFile(name); err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	set, rerr := span.Derive(f, deriver(f.Reader))
	if rerr != nil {
		fmt.Fprintf(stderr, "viewer: %s: %v (slices derived from the events before it)\n", name, rerr)
	}
	m := f.Meta()
	bw := bufio.NewWriter(stdout)
	if *summary {
		s := summarize(set, m)
		if *asJSON {
			enc := json.NewEncoder(bw)
			enc.SetIndent("", "  ")
			if err := enc.Encode(s); err != nil {
				return err
			}
		} else {
			writeSpanSummary(bw, s)
		}
		return bw.Flush()
	}
	var b []byte
	for _, sl := range set.All() {
		b = appendSpan(b[:0], set, m, sl)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// trackLabel names a derived track for output: the trace track it
// belongs under, a slash and its own name ("compile 19397/syscalls").
func trackLabel(set *span.Set, m *trace.Meta, id span.TrackID) string {
	t := set.Tracks[id]
	if t.Of >= 0 && int(t.Of) < len(m.Tracks) {
		return m.Tracks[t.Of].Name + "/" + t.Name
	}
	return t.Name
}

// appendSpan appends one slice as a JSON line.
func appendSpan(b []byte, set *span.Set, m *trace.Meta, sl span.Slice) []byte {
	b = append(b, `{"track":`...)
	b = strconv.AppendQuote(b, trackLabel(set, m, sl.Track))
	b = append(b, `,"kind":"`...)
	b = append(b, set.Tracks[sl.Track].Kind.String()...)
	b = append(b, `","name":`...)
	b = strconv.AppendQuote(b, set.Name(sl.Name))
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, int64(sl.Start), 10)
	b = append(b, `,"end_ns":`...)
	b = strconv.AppendInt(b, int64(sl.End), 10)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(sl.Depth), 10)
	if o := sl.Flags.Ends(); o != "" {
		b = append(b, `,"open":"`...)
		b = append(b, o...)
		b = append(b, '"')
	}
	if sl.Thread >= 0 && int(sl.Thread) < len(m.Tracks) {
		b = append(b, `,"thread":`...)
		b = strconv.AppendQuote(b, m.Tracks[sl.Thread].Name)
	}
	if args := set.ArgList(sl.Args); len(args) > 0 {
		b = append(b, `,"args":{`...)
		for i, a := range args {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, a.Name)
			b = append(b, ':')
			b = appendJSONValue(b, a.Value)
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendJSONValue appends numbers as JSON numbers, everything else as
// its text.
func appendJSONValue(b []byte, v trace.Value) []byte {
	switch v.Kind() {
	case trace.KindInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case trace.KindUint:
		return strconv.AppendUint(b, v.Uint(), 10)
	case trace.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case trace.KindFloat:
		if f := v.Float(); f == f && f < 1e308 && f > -1e308 {
			return strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	}
	return strconv.AppendQuote(b, v.String())
}

// spanSummary is what `viewer spans --summary --json` prints.
type spanSummary struct {
	Tracks []trackSummary `json:"tracks"`
	// Threads totals the CPU tracks per thread, over all processors
	// (what perf sched timehist -s prints).
	Threads []threadRun `json:"threads,omitempty"`
	Dropped int64       `json:"dropped,omitempty"`
}

type trackSummary struct {
	Track    string      `json:"track"`
	Kind     string      `json:"kind"`
	Slices   int         `json:"slices"`
	Open     int         `json:"open"`
	TotalNS  int64       `json:"total_ns"`
	Switches int         `json:"switches,omitempty"` // CPU tracks: sched_switch events
	Names    []nameTotal `json:"names"`
	Threads  []threadRun `json:"threads,omitempty"` // CPU tracks
	Samples  int         `json:"samples,omitempty"` // counter tracks: samples, their least and greatest value
	Min      float64     `json:"min,omitempty"`
	Max      float64     `json:"max,omitempty"`
}

type nameTotal struct {
	Name    string `json:"name"`
	Count   int    `json:"count"`
	Open    int    `json:"open"`
	TotalNS int64  `json:"total_ns"`
}

// threadRun is one thread's time on CPU tracks: the run time of its
// slices with both ends known and the number of times it was switched
// out (NOTES.md §sched in trace/perf says how each CPU's first and last
// slice count).
type threadRun struct {
	Thread   string `json:"thread"`
	TID      int64  `json:"tid"`
	PID      int64  `json:"pid"`
	RunNS    int64  `json:"run_ns"`
	Switches int    `json:"switches"`
}

func summarize(set *span.Set, m *trace.Meta) spanSummary {
	var s spanSummary
	s.Dropped = set.Dropped
	all := map[trace.TrackID]*threadRun{}
	for id := range set.Tracks {
		if sm := set.TrackSamples(span.TrackID(id)); len(sm) > 0 {
			ts := trackSummary{Track: trackLabel(set, m, span.TrackID(id)), Kind: set.Tracks[id].Kind.String(), Samples: len(sm), Min: sm[0].Value, Max: sm[0].Value, Names: []nameTotal{}}
			for _, x := range sm {
				ts.Min, ts.Max = min(ts.Min, x.Value), max(ts.Max, x.Value)
			}
			s.Tracks = append(s.Tracks, ts)
		}
		sl := set.TrackSlices(span.TrackID(id))
		if len(sl) == 0 {
			continue
		}
		ts := trackSummary{Track: trackLabel(set, m, span.TrackID(id)), Kind: set.Tracks[id].Kind.String(), Slices: len(sl)}
		names := map[span.NameID]*nameTotal{}
		threads := map[trace.TrackID]*threadRun{}
		for _, x := range sl {
			d := int64(x.End - x.Start)
			n := names[x.Name]
			if n == nil {
				n = &nameTotal{Name: set.Name(x.Name)}
				names[x.Name] = n
			}
			n.Count++
			if x.Open() {
				n.Open++
				ts.Open++
			}
			n.TotalNS += d
			ts.TotalNS += d
			if set.Tracks[id].Kind != span.KindCPU || x.Flags&span.OpenEnd != 0 {
				continue
			}
			ts.Switches++
			for _, tm := range []map[trace.TrackID]*threadRun{threads, all} {
				r := tm[x.Thread]
				if r == nil {
					r = &threadRun{TID: -1, PID: -1}
					if x.Thread >= 0 && int(x.Thread) < len(m.Tracks) {
						t := &m.Tracks[x.Thread]
						r.Thread, r.TID, r.PID = t.Name, t.TID, t.PID
					}
					tm[x.Thread] = r
				}
				r.Switches++
				if x.Flags == 0 {
					r.RunNS += d
				}
			}
		}
		for _, n := range names {
			ts.Names = append(ts.Names, *n)
		}
		slices.SortFunc(ts.Names, func(a, b nameTotal) int {
			return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(a.Name, b.Name))
		})
		ts.Threads = sortedRuns(threads)
		s.Tracks = append(s.Tracks, ts)
	}
	s.Threads = sortedRuns(all)
	return s
}

func sortedRuns(m map[trace.TrackID]*threadRun) []threadRun {
	var out []threadRun
	for _, r := range m {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b threadRun) int { return cmp.Or(cmp.Compare(b.RunNS, a.RunNS), cmp.Compare(a.TID, b.TID)) })
	return out
}

func writeSpanSummary(w io.Writer, s spanSummary) {
	for _, t := range s.Tracks {
		if t.Samples > 0 {
			fmt.Fprintf(w, "%s (%s): %d samples from %g to %g\n", t.Track, t.Kind, t.Samples, t.Min, t.Max)
			continue
		}
		fmt.Fprintf(w, "%s (%s): %d slices, %d open, %.3f ms", t.Track, t.Kind, t.Slices, t.Open, float64(t.TotalNS)/1e6)
		if t.Kind == span.KindCPU.String() {
			fmt.Fprintf(w, ", %d switches", t.Switches)
		}
		fmt.Fprintln(w)
		for _, n := range t.Names {
			fmt.Fprintf(w, "  %-40s %8d %10.3f ms\n", n.Name, n.Count, float64(n.TotalNS)/1e6)
		}
	}
	if len(s.Threads) > 0 {
		fmt.Fprintf(w, "run time per thread (all CPUs):\n  %-32s %8s %8s %12s %8s\n", "thread", "tid", "pid", "run (ms)", "switches")
		for _, r := range s.Threads {
			fmt.Fprintf(w, "  %-32s %8d %8d %12.3f %8d\n", r.Thread, r.TID, r.PID, float64(r.RunNS)/1e6, r.Switches)
		}
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "dropped past the limits: %d\n", s.Dropped)
	}
}
