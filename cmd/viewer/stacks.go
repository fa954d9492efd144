package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/render/stacks"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

// sample is one stack sample kept for symbolization after the pass.
type sample struct {
	time    trace.Time
	stack   trace.StackID
	track   trace.TrackID
	managed bool // the sampled thread ran managed code (Thread/Sample Type 2)
	// value is the sample's payload field asked for by --weight
	// field:NAME, when it has it.
	value    int64
	hasValue bool
}

// scan reads a whole trace once: statistics, the managed method map and
// the stack samples (events named event, or Thread/Sample), with the
// numeric payload field named field when field is not "".
type scan struct {
	stats   export.Stats
	symbols render.SymbolSource
	samples []sample
}

func scanTrace(ctx context.Context, f *wrap.File, event, field string) (*scan, error) {
	if event == "" {
		event = clr.SampleEvent
	}
	var c export.Counter
	var r trace.Reader = f
	s := &scan{symbols: symbolSource(f.Reader)}
	if s.symbols == nil {
		s.symbols = clr.NewSymbols()
	}
	m := r.Meta()
	var isSample []int8
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e, err := r.ReadEvent()
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok && err != io.EOF {
				return nil, err
			}
			s.stats = c.Stats(m, err)
			break
		}
		c.Add(e)
		s.symbols.Observe(r, e)
		if e.Stack == trace.NoStack || e.Type < 0 {
			continue
		}
		for int(e.Type) >= len(isSample) {
			isSample = append(isSample, 0)
		}
		if isSample[e.Type] == 0 {
			isSample[e.Type] = -1
			if int(e.Type) < len(m.Types) && m.Types[e.Type].Name == event {
				isSample[e.Type] = 1
			}
		}
		if isSample[e.Type] > 0 {
			sm := sample{time: e.Time, stack: e.Stack, track: e.Track, managed: isManagedSample(r, e)}
			if field != "" {
				sm.value, sm.hasValue = fieldValue(r, e, field)
			}
			s.samples = append(s.samples, sm)
		}
	}
	if frames, resolved := s.symbols.Finish(r); frames > 0 {
		s.stats.Frames = &export.FrameCount{Total: frames, Resolved: resolved}
	}
	return s, nil
}

// fieldValue returns a numeric top-level payload field of an event,
// rounded to an integer.
func fieldValue(r trace.Reader, e trace.Event, name string) (int64, bool) {
	d, _ := r.Details(e)
	for _, f := range d.Fields {
		if f.Name == name {
			if v, ok := f.Value.Number(); ok && !math.IsNaN(v) {
				return int64(math.Round(v)), true
			}
			return 0, false
		}
	}
	return 0, false
}

// isManagedSample reports whether a Thread/Sample event says the thread
// was running managed code.
func isManagedSample(r trace.Reader, e trace.Event) bool {
	d, err := r.Details(e)
	if err != nil {
		return false
	}
	for _, f := range d.Fields {
		if f.Name == "Type" {
			return f.Value.Str() == "Managed" || (f.Value.Kind() == trace.KindUint && f.Value.Uint() == 2)
		}
	}
	return false
}

// trackFlag collects repeated --track values.
type trackFlag []string

func (t *trackFlag) String() string     { return strings.Join(*t, ",") }
func (t *trackFlag) Set(v string) error { *t = append(*t, v); return nil }

func runStacks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stacks", stderr)
	format := fs.String("format", "text", `text (shares, heaviest first), collapsed ("frame;frame;frame weight" lines, root first, for flame-graph tools) or speedscope (speedscope's JSON file format, which speedscope and the Firefox Profiler import)`)
	collapsed := fs.Bool("collapsed", false, "the same as --format collapsed")
	perThread := fs.Bool("per-thread", false, "aggregate per thread: the thread is the root frame")
	managedOnly := fs.Bool("managed-only", false, "only samples taken while the thread ran managed code")
	byTime := fs.Bool("time", false, "the same as --weight time")
	weightFlag := fs.String("weight", "count", "weigh samples by count, time (the time since the thread's previous sample, ns, as dotnetdiag does) or field:NAME (a numeric payload field)")
	event := fs.String("event", "", "the event whose stacks are aggregated (default Thread/Sample)")
	from := fs.Int64("from", math.MinInt64, "only samples at or after this time (ns)")
	to := fs.Int64("to", math.MaxInt64, "only samples before this time (ns)")
	var tracks trackFlag
	fs.Var(&tracks, "track", "only samples of this thread (its name, or its thread id); repeatable")
	viewFlag := fs.String("view", "top", "top, bottom, callers:NAME or callees:NAME")
	tfFlag := fs.String("tf", "", "transforms, as the API's tf parameter (web/PROTOCOL.md)")
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	if *collapsed {
		*format = "collapsed"
	}
	if *format != "text" && *format != "collapsed" && *format != "speedscope" {
		return fmt.Errorf("stacks: --format %q: want text, collapsed or speedscope", *format)
	}
	weight, err := stacks.ParseWeight(*weightFlag)
	if err != nil {
		return err
	}
	if *byTime {
		weight = stacks.Weight{Kind: stacks.Time}
	}
	view, err := stacks.ParseView(*viewFlag)
	if err != nil {
		return err
	}
	tf, err := stacks.ParseTransforms(*tfFlag)
	if err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	field := ""
	if weight.Kind == stacks.Field {
		field = weight.Field
	}
	s, err := scanTrace(ctx, f, *event, field)
	if err != nil {
		return err
	}
	meta := f.Meta()
	agg, err := stacks.New(stacks.Options{View: view, Transforms: tf, PerThread: *perThread,
		ThreadName: func(id trace.TrackID) string { return trackName(meta, id) }})
	if err != nil {
		return err
	}
	res := stacks.NewResolver(f.Stack, s.symbols, agg)
	keep := func(trace.TrackID) bool { return true }
	if len(tracks) > 0 {
		keep = func(id trace.TrackID) bool {
			n := trackName(meta, id)
			for _, t := range tracks {
				if t == n || id >= 0 && int(id) < len(meta.Tracks) && t == strconv.FormatInt(meta.Tracks[id].TID, 10) {
					return true
				}
			}
			return false
		}
	}
	type last struct {
		time    trace.Time
		managed bool
	}
	prev := map[trace.TrackID]last{}
	for _, sm := range s.samples {
		w, managed := int64(1), sm.managed
		switch weight.Kind {
		case stacks.Time:
			// The interval since the thread's previous sample (in the
			// whole trace) goes to this sample's stack, and ran managed
			// code if the previous sample found the thread in managed
			// code. A thread's first sample has no interval.
			p, ok := prev[sm.track]
			prev[sm.track] = last{sm.time, sm.managed}
			if !ok {
				continue
			}
			w, managed = int64(sm.time-p.time), p.managed
		case stacks.Field:
			if !sm.hasValue {
				continue
			}
			w = sm.value
		}
		if *managedOnly && !managed || sm.time < trace.Time(*from) || sm.time >= trace.Time(*to) || !keep(sm.track) {
			continue
		}
		agg.Add(stacks.Sample{Time: sm.time, Track: sm.track, Stack: res.Stack(-1, sm.stack, sm.time), Weight: w})
	}
	if *format == "speedscope" {
		var out []export.WeightedStack
		for _, c := range agg.Collapsed() {
			out = append(out, export.WeightedStack{Frames: c.Frames, Weight: c.Weight})
		}
		return export.WriteSpeedscope(stdout, filepath.Base(name), export.SpeedscopeUnit(weight.Unit()), out)
	}
	weights := map[string]int64{}
	for _, c := range agg.Collapsed() {
		for i, fr := range c.Frames {
			c.Frames[i] = strings.ReplaceAll(fr, ";", ":")
		}
		weights[strings.Join(c.Frames, ";")] += c.Weight
	}
	total := agg.Total()
	type line struct {
		stack  string
		weight int64
	}
	lines := make([]line, 0, len(weights))
	for k, w := range weights {
		lines = append(lines, line{k, w})
	}
	bw := bufio.NewWriter(stdout)
	if *format == "collapsed" {
		slices.SortFunc(lines, func(a, b line) int { return cmp.Compare(a.stack, b.stack) })
		for _, l := range lines {
			bw.WriteString(l.stack)
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatInt(l.weight, 10))
			bw.WriteByte('\n')
		}
		return bw.Flush()
	}
	slices.SortFunc(lines, func(a, b line) int { return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(a.stack, b.stack)) })
	fmt.Fprintf(bw, "%d %s, %d distinct stacks\n", total, weight.Unit(), len(lines))
	for _, l := range lines {
		fmt.Fprintf(bw, "%6.2f%% %8d  %s\n", 100*float64(l.weight)/float64(max(total, 1)), l.weight, l.stack)
	}
	return bw.Flush()
}

func trackName(m *trace.Meta, id trace.TrackID) string { return stacks.TrackName(m, id) }
