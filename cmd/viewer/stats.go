package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

// regularFile refuses what is not a regular file with a message that says
// so: a device such as /dev/zero or a FIFO has no size, and reading it as
// a trace would call it "empty".
func regularFile(name string) error {
	path, _ := wrap.SplitMember(name)
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	what := ""
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeCharDevice != 0:
		what = "a character device"
	case m&os.ModeDevice != 0:
		what = "a block device"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("%s is %s: traces are read from regular files (they are read out of order); copy it to a file first", name, what)
}

func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", stderr)
	asJSON := fs.Bool("json", false, "print the statistics as one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return statsOfEach(ctx, fs.Args(), *asJSON, stdout)
	}
	name, err := oneFile(fs, fs.Args())
	if err != nil {
		return err
	}
	st, m, err := statsOf(ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeStatsText(stdout, st, m)
}

// statsOf opens and counts one file for `viewer stats`.
func statsOf(ctx context.Context, name string) (export.Stats, *trace.Meta, error) {
	if err := regularFile(name); err != nil {
		return export.Stats{}, nil, err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return export.Stats{}, nil, err
	}
	defer f.Close()
	st, err := countTrace(ctx, f)
	return st, f.Meta(), err
}

// statsOfEach prints the statistics of several files: as text, each
// file's as one file's are printed, after a `==> FILE <==` line and
// separated by an empty line; as JSON, one object
// `{"files":[{"file":…,"stats":{…}}…]}`.
func statsOfEach(ctx context.Context, names []string, asJSON bool, stdout io.Writer) error {
	type fileStats struct {
		File  string       `json:"file"`
		Stats export.Stats `json:"stats"`
	}
	var all []fileStats
	for i, name := range names {
		st, m, err := statsOf(ctx, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if asJSON {
			all = append(all, fileStats{name, st})
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "==> %s <==\n", name)
		if err := writeStatsText(stdout, st, m); err != nil {
			return err
		}
	}
	if !asJSON {
		return nil
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Files []fileStats `json:"files"`
	}{all})
}

// countTrace reads f once for `viewer stats`, computing what it prints
// and no more: the counts, and for traces whose stacks the runtime's
// method events name, how many sample frames resolve, from a method map
// that keeps address ranges only (clr's RangesOnly). Formats without a
// symbol source have no stacks to count.
func countTrace(ctx context.Context, f *wrap.File) (export.Stats, error) {
	var c export.Counter
	r := f.Reader // the format's own, for its optional interfaces
	src := symbolSource(r)
	if ro, ok := src.(interface{ RangesOnly() }); ok {
		ro.RangesOnly()
	}
	m := r.Meta()
	if br, ok := r.(interface {
		ReadEvents([]trace.Event) (int, error)
	}); ok && src == nil { // in batches: the events are only counted
		evs := make([]trace.Event, 4096)
		for {
			if ctx.Err() != nil {
				return export.Stats{}, ctx.Err()
			}
			n, err := br.ReadEvents(evs)
			c.AddEvents(evs[:n])
			if err != nil {
				if _, ok := errors.AsType[*trace.FormatError](err); !ok && err != io.EOF {
					return export.Stats{}, err
				}
				return c.Stats(m, err), nil
			}
		}
	}
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return export.Stats{}, ctx.Err()
		}
		e, err := r.ReadEvent()
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok && err != io.EOF {
				return export.Stats{}, err
			}
			st := c.Stats(m, err)
			if src != nil {
				if frames, resolved := src.Finish(r); frames > 0 {
					st.Frames = &export.FrameCount{Total: frames, Resolved: resolved}
				}
			}
			return st, nil
		}
		c.Add(e)
		if src != nil {
			src.Observe(r, e)
		}
	}
}

func writeStatsText(w io.Writer, st export.Stats, m *trace.Meta) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "format      %s v%d\n", st.Format, st.Version)
	if st.PointerSize != 0 {
		fmt.Fprintf(bw, "pointers    %d bytes\n", st.PointerSize)
	}
	fmt.Fprintf(bw, "events      %d\n", st.Events)
	fmt.Fprintf(bw, "tracks      %d\n", st.Tracks)
	fmt.Fprintf(bw, "span        %s (%d ns to %d ns)\n", time.Duration(st.LastNS-st.FirstNS), st.FirstNS, st.LastNS)
	if wall, ok := m.Clock.WallTime(trace.Time(st.FirstNS)); ok {
		fmt.Fprintf(bw, "starts      %s\n", wall.Format(time.RFC3339Nano))
	}
	fmt.Fprintf(bw, "lost        %d\n", st.LostEvents)
	if st.Frames != nil {
		fmt.Fprintf(bw, "frames      %d of %d resolved\n", st.Frames.Resolved, st.Frames.Total)
	}
	if st.Truncated {
		fmt.Fprintf(bw, "truncated   at byte %d: %s\n", st.TruncatedAt, strconv.Quote(st.Error))
	}
	for _, kv := range m.Info {
		fmt.Fprintf(bw, "info        %s: %s\n", kv.Key, strconv.Quote(kv.Value))
	}
	for _, n := range m.Notices {
		fmt.Fprintf(bw, "notice      %s\n", strconv.Quote(n))
	}
	fmt.Fprintf(bw, "\n%10s  %s\n", "count", "event")
	for _, c := range st.Counts {
		name := c.Event
		if name == "" {
			name = "#" + strconv.FormatInt(c.ID, 10)
		}
		if c.Provider != "" {
			name = c.Provider + "/" + name
		}
		fmt.Fprintf(bw, "%10d  %s (id %d, version %d)\n", c.Count, strconv.Quote(name), c.ID, c.Version)
	}
	return bw.Flush()
}
