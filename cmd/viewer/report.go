package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/wrap"
)

// runReport prints a .NET trace's GC table (`report gc`, trace/clr's GCs)
// or its exceptions (`report exceptions`), as text, JSON (--json) or CSV
// (--csv).
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "gc" && args[0] != "exceptions") {
		return fmt.Errorf("report: gc or exceptions, then FILE")
	}
	what := args[0]
	fs := newFlagSet("report "+what, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	asCSV := fs.Bool("csv", false, "print the table as CSV")
	name, err := oneFile(fs, args[1:])
	if err != nil {
		return err
	}
	if *asJSON && *asCSV {
		return fmt.Errorf("--json or --csv, not both")
	}
	if err := regularFile(name); err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	r := f.Reader
	gcs, exc := clr.NewGCs(), clr.NewExceptions()
	src := symbolSource(r)
	var readErr error
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		e, err := r.ReadEvent()
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if src != nil {
			src.Observe(r, e)
		}
		if what == "gc" {
			gcs.Observe(r, e)
		} else {
			exc.Observe(r, e)
		}
	}
	if src != nil {
		src.Finish(r)
	}
	format := "text"
	if *asJSON {
		format = "json"
	} else if *asCSV {
		format = "csv"
	}
	if what == "gc" {
		err = writeGCReport(stdout, r.Meta(), gcs, format)
	} else {
		err = writeExceptionReport(stdout, r, src, exc, format)
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return readErr
}

// gcRow is one row of `viewer report gc --json`.
type gcRow struct {
	Number       int64  `json:"number"`
	Generation   int64  `json:"generation"`
	Reason       string `json:"reason"`
	Type         string `json:"type,omitempty"`
	PID          int64  `json:"pid"`
	Thread       string `json:"thread"`
	StartNS      int64  `json:"start_ns"`
	EndNS        *int64 `json:"end_ns,omitempty"`
	PauseStartNS *int64 `json:"pause_start_ns,omitempty"`
	PauseEndNS   *int64 `json:"pause_end_ns,omitempty"`
	PauseNS      *int64 `json:"pause_ns,omitempty"`
	HeapBefore   *int64 `json:"heap_before_bytes,omitempty"`
	HeapAfter    *int64 `json:"heap_after_bytes,omitempty"`
	Promoted     *int64 `json:"promoted_bytes,omitempty"`
}

func reportThread(m *trace.Meta, t trace.TrackID) string {
	if t >= 0 && int(t) < len(m.Tracks) {
		return m.Tracks[t].Name
	}
	return ""
}

func gcRows(m *trace.Meta, gcs *clr.GCs) []gcRow {
	rows := []gcRow{}
	p := func(v int64) *int64 { return &v }
	for _, g := range gcs.Rows() {
		row := gcRow{Number: g.Number, Generation: g.Generation, Reason: g.Reason, Type: g.Type, PID: g.PID,
			Thread: reportThread(m, g.Track), StartNS: int64(g.Start)}
		if g.HasEnd {
			row.EndNS = p(int64(g.End))
		}
		if g.HasPause {
			row.PauseStartNS, row.PauseEndNS, row.PauseNS = p(int64(g.PauseStart)), p(int64(g.PauseEnd)), p(int64(g.Pause()))
		}
		if g.HasHeap {
			row.HeapBefore, row.HeapAfter, row.Promoted = p(int64(g.HeapBefore)), p(int64(g.HeapAfter)), p(int64(g.Promoted))
		}
		rows = append(rows, row)
	}
	return rows
}

func optText(v *int64, scale float64) string {
	if v == nil {
		return ""
	}
	if scale == 1 {
		return strconv.FormatInt(*v, 10)
	}
	return strconv.FormatFloat(float64(*v)/scale, 'f', 3, 64)
}

func writeGCReport(w io.Writer, m *trace.Meta, gcs *clr.GCs, format string) error {
	rows := gcRows(m, gcs)
	switch format {
	case "json":
		b, err := json.MarshalIndent(struct {
			GCs     []gcRow `json:"gcs"`
			Dropped int64   `json:"dropped,omitempty"`
		}{rows, gcs.Dropped}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"number", "generation", "reason", "type", "pid", "thread", "start_ns", "end_ns", "pause_start_ns", "pause_end_ns", "pause_ns", "heap_before_bytes", "heap_after_bytes", "promoted_bytes"})
		for _, r := range rows {
			cw.Write([]string{strconv.FormatInt(r.Number, 10), strconv.FormatInt(r.Generation, 10), r.Reason, r.Type,
				strconv.FormatInt(r.PID, 10), r.Thread, strconv.FormatInt(r.StartNS, 10), optText(r.EndNS, 1),
				optText(r.PauseStartNS, 1), optText(r.PauseEndNS, 1), optText(r.PauseNS, 1),
				optText(r.HeapBefore, 1), optText(r.HeapAfter, 1), optText(r.Promoted, 1)})
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GC\tgen\treason\ttype\tstart ms\tpause ms\tduration ms\tbefore MB\tafter MB\tpromoted MB\t\n")
	for i, r := range rows {
		g := gcs.Rows()[i]
		dur := ""
		if g.HasEnd {
			dur = strconv.FormatFloat(float64(g.Duration())/1e6, 'f', 3, 64)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t\n", r.Number, r.Generation, r.Reason, r.Type,
			float64(r.StartNS)/1e6, optText(r.PauseNS, 1e6), dur, optText(r.HeapBefore, 1<<20), optText(r.HeapAfter, 1<<20), optText(r.Promoted, 1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var pause int64
	for _, g := range gcs.Rows() {
		pause += int64(g.Pause())
	}
	_, err := fmt.Fprintf(w, "%d GCs, %.3f ms paused\n", len(rows), float64(pause)/1e6)
	return err
}

// exceptionRow is one row of `viewer report exceptions --json`.
type exceptionRow struct {
	TimeNS  int64    `json:"time_ns"`
	Thread  string   `json:"thread"`
	PID     int64    `json:"pid"`
	TID     int64    `json:"tid"`
	Type    string   `json:"type"`
	Message string   `json:"message"`
	Stack   []string `json:"stack"`
}

func writeExceptionReport(w io.Writer, r trace.Reader, src render.SymbolSource, exc *clr.Exceptions, format string) error {
	m := r.Meta()
	rows := []exceptionRow{}
	for _, x := range exc.Rows() {
		row := exceptionRow{TimeNS: int64(x.Time), Thread: reportThread(m, x.Track), PID: x.PID, TID: x.TID, Type: x.Type, Message: x.Message, Stack: []string{}}
		for _, a := range r.Stack(x.Stack) {
			f := trace.Frame{Addr: a}
			if src != nil {
				if g, ok := src.Symbolize(x.PID, x.Time, a); ok {
					f = g
					f.Addr = a
				}
			}
			row.Stack = append(row.Stack, f.String())
		}
		rows = append(rows, row)
	}
	type group struct {
		Type  string `json:"type"`
		Count int64  `json:"count"`
	}
	groups := []group{}
	for _, g := range exc.ByType() {
		groups = append(groups, group{g.Type, g.Count})
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(struct {
			ByType     []group        `json:"by_type"`
			Exceptions []exceptionRow `json:"exceptions"`
			Dropped    int64          `json:"dropped,omitempty"`
		}{groups, rows, exc.Dropped}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"time_ns", "thread", "pid", "tid", "type", "message", "stack"})
		for _, r := range rows {
			cw.Write([]string{strconv.FormatInt(r.TimeNS, 10), r.Thread, strconv.FormatInt(r.PID, 10), strconv.FormatInt(r.TID, 10), r.Type, r.Message, strings.Join(r.Stack, "\n")})
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "count\ttype\n")
	for _, g := range groups {
		fmt.Fprintf(tw, "%d\t%s\n", g.Count, oneLine(g.Type))
	}
	tw.Flush()
	for _, r := range rows {
		fmt.Fprintf(w, "\n%.3f ms  %s (tid %d)  %s: %s\n", float64(r.TimeNS)/1e6, oneLine(r.Thread), r.TID, oneLine(r.Type), oneLine(r.Message))
		for _, f := range r.Stack {
			fmt.Fprintf(w, "    %s\n", oneLine(f))
		}
	}
	return nil
}

// oneLine keeps text from a trace on one line of the text report.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
