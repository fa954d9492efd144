package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"viewer/trace"
	"viewer/trace/align"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

// offsetFlags are the --offset FILE=DURATION flags: the time slew of each
// named file on the aligned clock.
type offsetFlags map[string]time.Duration

func (o offsetFlags) String() string { return "" }

func (o offsetFlags) Set(v string) error {
	name, d, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not FILE=DURATION", v)
	}
	dur, err := parseDuration(d)
	if err != nil {
		return err
	}
	o[name] = dur
	return nil
}

// parseDuration reads a signed duration with a unit (`+1.5ms`, `-3us`)
// or a plain number of nanoseconds.
func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (1.5ms, -3us) nor nanoseconds", s)
	}
	return d, nil
}

// offsetOf returns the offset given for the file named by arg (as
// written on the command line, or its base name) and whether one was.
func (o offsetFlags) offsetOf(arg string) (time.Duration, bool) {
	if d, ok := o[arg]; ok {
		return d, true
	}
	d, ok := o[filepath.Base(arg)]
	return d, ok
}

// mergeSource is one file of a merged dump: its reader, the event read
// ahead of the others, and the encoder that writes its lines.
type mergeSource struct {
	name string
	file *wrap.File
	r    trace.Reader // f's reader behind the --where filter
	view *alignedView
	enc  *export.Encoder
	head trace.Event
	ok   bool // head holds an event
	err  error
}

// alignedView is the reader the encoder of one file of a merged dump
// sees: the file's own, with the wall clock of the aligned axis.
type alignedView struct {
	trace.Reader
	meta trace.Meta
	ax   align.Axis
	i    int
}

func (v *alignedView) Meta() *trace.Meta { return &v.meta }

// refresh copies the reader's tables, which grow as it reads, and sets
// the aligned wall clock.
func (v *alignedView) refresh() {
	v.meta = *v.Reader.Meta()
	v.meta.Clock = v.ax.Clock(v.i, v.meta.Clock)
}

// dumpMerged writes the events of several files as one JSON Lines stream
// in the order of the aligned clock (trace/align; ties in the order of
// the files): each line as `viewer dump` writes it, with the file in a
// `trace` key first and `wall` the aligned wall-clock time. A file
// without a wall clock is aligned by its first event, with a notice on
// stderr. A damaged file's readable events are merged, its damage
// reported on stderr and as the command's error once the others are
// written.
func dumpMerged(ctx context.Context, names []string, sel *whereFlags, offsets offsetFlags, stdout, stderr io.Writer) error {
	for name := range offsets {
		if !matchesAny(name, names) {
			return fmt.Errorf("--offset names %s, which is not one of the files", name)
		}
	}
	srcs := make([]*mergeSource, len(names))
	defer func() {
		for _, s := range srcs {
			if s != nil {
				s.file.Close()
			}
		}
	}()
	var failed []error
	report := func(s *mergeSource) {
		if s.err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", s.name, s.err))
			fmt.Fprintf(stderr, "viewer: %s: %v (its events before that are merged)\n", s.name, s.err)
			s.err = nil
		}
	}
	ts := make([]align.Trace, len(names))
	for i, name := range names {
		f, err := wrap.OpenFile(ctx, name, commandFormats(), wrap.Limits{})
		if err != nil {
			return err
		}
		s := &mergeSource{name: name, file: f}
		srcs[i] = s
		sym, err := learnSymbols(ctx, f)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if s.r, err = sel.filter(f.Reader); err != nil {
			return err
		}
		s.next()
		report(s)
		// The first event read is the trace's first (readers deliver in
		// time order), unless --where or --from skipped some: alignment
		// by first event then uses the first one selected.
		ts[i] = align.Of(f.Meta(), s.head.Time)
		ts[i].Offset, _ = offsets.offsetOf(name)
		if !s.ok {
			ts[i].First = 0
		}
		s.view = &alignedView{Reader: s.r, i: i}
		s.enc = export.NewEncoder(s.view)
		if sym != nil {
			s.enc.Symbolize(sym)
		}
	}
	ax := align.Align(ts)
	for i, s := range srcs {
		s.view.ax = ax
		if ax.Places[i].How == align.ByFirstEvent {
			what := "the others' first event"
			if ax.Origin.IsZero() {
				what = "the first events of the others, which have none either"
			}
			fmt.Fprintf(stderr, "viewer: %s has no wall clock: its first event is aligned with %s (move it with --offset %s=DURATION)\n", s.name, what, s.name)
		}
	}

	buf := make([]byte, 0, dumpBuffer+dumpBuffer/8)
	var line []byte
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		best := -1
		for i, s := range srcs { // a handful of files: a scan beats a heap
			if s.ok && (best < 0 || ax.Time(i, s.head.Time) < ax.Time(best, srcs[best].head.Time)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		s := srcs[best]
		s.view.refresh()
		line = appendLine(s.enc, line[:0], s.head)
		buf = append(buf, `{"trace":`...)
		buf = export.AppendString(buf, s.name)
		if len(line) > 2 && line[1] != '}' {
			buf = append(buf, ',')
		}
		buf = append(buf, line[1:]...)
		if len(buf) >= dumpBuffer {
			if _, err := stdout.Write(buf); err != nil {
				if errors.Is(err, io.ErrClosedPipe) {
					return nil
				}
				return fmt.Errorf("writing output: %w", err)
			}
			buf = buf[:0]
		}
		s.next()
		report(s)
	}
	if _, err := stdout.Write(buf); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return errors.Join(failed...)
}

// next reads the source's next event into head.
func (s *mergeSource) next() {
	e, err := s.r.ReadEvent()
	s.head, s.ok = e, err == nil
	if err != nil && err != io.EOF {
		s.err = err
	}
}

// matchesAny reports whether an --offset name names one of the files.
func matchesAny(name string, names []string) bool {
	for _, n := range names {
		if n == name || filepath.Base(n) == name {
			return true
		}
	}
	return false
}
