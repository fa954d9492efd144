package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

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
}

// scan reads a whole trace once: statistics, the managed method map and
// the stack samples (events named event, or Thread/Sample).
type scan struct {
	stats   export.Stats
	symbols *clr.Symbols
	samples []sample
}

func scanTrace(ctx context.Context, r trace.Reader, event string) (*scan, error) {
	if event == "" {
		event = clr.SampleEvent
	}
	var c export.Counter
	s := &scan{symbols: clr.NewSymbols()}
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
			s.samples = append(s.samples, sample{time: e.Time, stack: e.Stack, track: e.Track, managed: isManagedSample(r, e)})
		}
	}
	if frames, resolved := s.symbols.Finish(r); frames > 0 {
		s.stats.Frames = &export.FrameCount{Total: frames, Resolved: resolved}
	}
	return s, nil
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

func runStacks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stacks", stderr)
	collapsed := fs.Bool("collapsed", false, `print "frame;frame;frame weight" lines (root first) for flame-graph tools`)
	perThread := fs.Bool("per-thread", false, "aggregate per thread: the thread is the root frame")
	managedOnly := fs.Bool("managed-only", false, "only samples taken while the thread ran managed code")
	byTime := fs.Bool("time", false, "weigh each sample by the time since its thread's previous sample (ns), as dotnetdiag does, instead of 1")
	event := fs.String("event", "", "the event whose stacks are aggregated (default Thread/Sample)")
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := scanTrace(ctx, f, *event)
	if err != nil {
		return err
	}
	weights := map[string]int64{}
	var total int64
	meta := f.Meta()
	var sb strings.Builder
	type last struct {
		time    trace.Time
		managed bool
	}
	prev := map[trace.TrackID]last{}
	for _, sm := range s.samples {
		w, managed := int64(1), sm.managed
		if *byTime {
			// The interval since the thread's previous sample goes to this
			// sample's stack, and ran managed code if the previous sample
			// found the thread in managed code. A thread's first sample
			// has no interval.
			p, ok := prev[sm.track]
			prev[sm.track] = last{sm.time, sm.managed}
			if !ok {
				continue
			}
			w, managed = int64(sm.time-p.time), p.managed
		}
		if *managedOnly && !managed {
			continue
		}
		sb.Reset()
		if *perThread {
			sb.WriteString(trackName(meta, sm.track))
		}
		addrs := f.Stack(sm.stack)
		for i := len(addrs) - 1; i >= 0; i-- { // root first
			if sb.Len() > 0 {
				sb.WriteByte(';')
			}
			fr, _ := s.symbols.Symbolize(-1, sm.time, addrs[i])
			sb.WriteString(strings.ReplaceAll(fr.String(), ";", ":"))
		}
		weights[sb.String()] += w
		total += w
	}
	type line struct {
		stack  string
		weight int64
	}
	lines := make([]line, 0, len(weights))
	for k, w := range weights {
		lines = append(lines, line{k, w})
	}
	bw := bufio.NewWriter(stdout)
	if *collapsed {
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
	unit := "samples"
	if *byTime {
		unit = "ns"
	}
	fmt.Fprintf(bw, "%d %s, %d distinct stacks\n", total, unit, len(lines))
	for _, l := range lines {
		fmt.Fprintf(bw, "%6.2f%% %8d  %s\n", 100*float64(l.weight)/float64(max(total, 1)), l.weight, l.stack)
	}
	return bw.Flush()
}

func trackName(m *trace.Meta, id trace.TrackID) string {
	if id < 0 || int(id) >= len(m.Tracks) {
		return "no thread"
	}
	t := m.Tracks[id]
	if t.Name != "" {
		return t.Name
	}
	return "thread " + strconv.FormatInt(t.TID, 10)
}
