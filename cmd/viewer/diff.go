package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"viewer/render"
	"viewer/render/compare"
	"viewer/trace"
	"viewer/trace/wrap"
	"viewer/web"
)

// errThreshold is diff's error when a --fail-if threshold is exceeded:
// the table is printed, the exit status is 1.
var errThreshold = errors.New("a --fail-if threshold was exceeded")

// runDiff compares two traces, or two ranges of one (render/compare),
// and prints the table; --fail-if thresholds make it fail.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", stderr)
	asJSON := fs.Bool("json", false, "print the table as one JSON object")
	rangeFlag := fs.String("range", "", "the compared range of each side: `A:FROM..TO,B:FROM..TO` (times from the trace's first event: 1.5ms, 2s, or ns; an empty bound is the trace's start or end)")
	ranges := fs.String("ranges", "", "with one FILE: compare two of its ranges, `FROM..TO,FROM..TO`")
	noFields := fs.Bool("no-fields", false, "leave out the numeric field rows (they decode every event)")
	top := fs.Int("top", 0, "print only the first N rows (0: all)")
	var fails failIfFlags
	fs.Var(&fails, "fail-if", "exit with status 1 when a row exceeds this threshold: `'GC/Start count +20%'` (repeatable; README: viewer diff)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := fs.Args()
	var spec [2]rangeSpec
	switch {
	case len(files) == 1 && *ranges != "":
		if *rangeFlag != "" {
			return errors.New("give --ranges or --range, not both")
		}
		r1, r2, ok := strings.Cut(*ranges, ",")
		if !ok {
			return fmt.Errorf("--ranges %q is not FROM..TO,FROM..TO", *ranges)
		}
		var err error
		if spec[0], err = parseRange(r1); err != nil {
			return fmt.Errorf("--ranges: %w", err)
		}
		if spec[1], err = parseRange(r2); err != nil {
			return fmt.Errorf("--ranges: %w", err)
		}
	case len(files) == 2 && *ranges == "":
		var err error
		if spec, err = parseSideRanges(*rangeFlag); err != nil {
			return fmt.Errorf("--range: %w", err)
		}
	default:
		fs.Usage()
		return errors.New("diff takes two FILEs, or one FILE and --ranges")
	}

	var sides [2]compare.Side
	for i, name := range files {
		x, closeAll, err := indexFile(ctx, name)
		if err != nil {
			return err
		}
		defer closeAll()
		sides[i] = spec[i].side(x)
		if len(files) == 1 {
			sides[1] = spec[1].side(x)
		}
	}
	tab, err := compare.Compare(ctx, sides[0], sides[1], compare.Options{NoFields: *noFields})
	if err != nil {
		return err
	}
	failed, err := fails.check(tab)
	if err != nil {
		return err
	}
	rows := tab.Rows
	if *top > 0 && *top < len(rows) {
		rows = rows[:*top]
	}
	if *asJSON {
		err = writeDiffJSON(stdout, tab, rows, failed)
	} else {
		err = writeDiffText(stdout, tab, rows)
	}
	if err != nil {
		return err
	}
	for _, f := range failed {
		fmt.Fprintf(stderr, "viewer: diff: %s: %s\n", f.expr, f.row)
	}
	if len(failed) > 0 {
		return errThreshold
	}
	return nil
}

// indexFile opens and indexes a trace, deriving its slice tracks, for diff.
// closeAll closes the index, then the file it reads details from.
func indexFile(ctx context.Context, name string) (x *render.Index, closeAll func(), err error) {
	if err := regularFile(name); err != nil {
		return nil, nil, err
	}
	f, err := wrap.OpenFile(ctx, name, formats(), wrap.Limits{})
	if err != nil {
		return nil, nil, err
	}
	x, err = render.Build(ctx, f.Reader, render.Options{Derive: deriver(f.Reader)})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return x, func() { x.Close(); f.Close() }, nil
}

// rangeSpec is a time range relative to a trace's first event; nil
// bounds are the trace's start and end.
type rangeSpec struct{ from, to *trace.Time }

func (r rangeSpec) side(x *render.Index) compare.Side {
	s := compare.Whole(x)
	first := s.From
	if r.from != nil {
		s.From = first + *r.from
	}
	if r.to != nil {
		s.To = first + *r.to
	}
	return s
}

// parseRange reads FROM..TO.
func parseRange(s string) (rangeSpec, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "..")
	if !ok {
		return rangeSpec{}, fmt.Errorf("%q is not FROM..TO", s)
	}
	var r rangeSpec
	for _, b := range []struct {
		text string
		into **trace.Time
	}{{from, &r.from}, {to, &r.to}} {
		if b.text == "" {
			continue
		}
		d, err := parseDuration(b.text)
		if err != nil {
			return rangeSpec{}, err
		}
		t := trace.Time(d)
		*b.into = &t
	}
	if r.from != nil && r.to != nil && *r.to <= *r.from {
		return rangeSpec{}, fmt.Errorf("%q is empty", s)
	}
	return r, nil
}

// parseSideRanges reads `A:FROM..TO,B:FROM..TO` (either part may be
// left out).
func parseSideRanges(s string) ([2]rangeSpec, error) {
	var spec [2]rangeSpec
	if s == "" {
		return spec, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		side, r, ok := strings.Cut(strings.TrimSpace(part), ":")
		i := strings.Index("AB", side)
		if !ok || len(side) != 1 || i < 0 {
			return spec, fmt.Errorf("%q is not A:FROM..TO or B:FROM..TO", part)
		}
		var err error
		if spec[i], err = parseRange(r); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

// failIf is one --fail-if threshold: `SUBJECT MEASURE LIMIT`, where
// SUBJECT is a row's key (or its end after a slash: `GC/Start` matches
// `Microsoft-Windows-DotNETRuntime/GC/Start`), optionally prefixed by
// its kind (`track:app 7`), MEASURE a measure's name, and LIMIT `+N%`
// (fails when the relative delta exceeds +N%), `-N%` (falls below −N%),
// `N%` (either way), and the same without `%` for absolute deltas.
type failIf struct {
	text    string
	kind    compare.Kind // 0: any
	subject string
	measure compare.Measure
	limit   float64
	sign    int // +1, −1, or 0 for either way
	rel     bool
}

type failIfFlags []failIf

func (f *failIfFlags) String() string { return "" }

func (f *failIfFlags) Set(s string) error {
	fi, err := parseFailIf(s)
	if err != nil {
		return err
	}
	*f = append(*f, fi)
	return nil
}

func parseFailIf(s string) (failIf, error) {
	fi := failIf{text: s}
	fields := strings.Fields(s)
	if len(fields) < 3 {
		return fi, fmt.Errorf("--fail-if %q is not SUBJECT MEASURE LIMIT ('GC/Start count +20%%')", s)
	}
	lim, meas := fields[len(fields)-1], fields[len(fields)-2]
	fi.subject = strings.Join(fields[:len(fields)-2], " ")
	if kind, rest, ok := strings.Cut(fi.subject, ":"); ok {
		for k := compare.KindType; k <= compare.KindField; k++ {
			if k.String() == kind {
				fi.kind, fi.subject = k, rest
			}
		}
	}
	var ok bool
	if fi.measure, ok = compare.ParseMeasure(meas); !ok {
		return fi, fmt.Errorf("--fail-if %q: %q is not a measure (count, rate, mean, p50, p99, min, max)", s, meas)
	}
	switch lim[0] {
	case '+':
		fi.sign, lim = 1, lim[1:]
	case '-':
		fi.sign, lim = -1, lim[1:]
	}
	lim, fi.rel = strings.CutSuffix(lim, "%")
	v, err := strconv.ParseFloat(lim, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fi, fmt.Errorf("--fail-if %q: limit %q is not +N%%, -N%%, N%% or a number", s, fields[len(fields)-1])
	}
	if fi.rel {
		v /= 100
	}
	fi.limit = v
	return fi, nil
}

// matches reports whether the threshold applies to row r.
func (fi *failIf) matches(r *compare.Row) bool {
	if r.Measure != fi.measure || fi.kind != 0 && r.Kind != fi.kind {
		return false
	}
	return r.Key == fi.subject || strings.HasSuffix(r.Key, "/"+fi.subject)
}

// exceeded reports whether row r goes past the threshold.
func (fi *failIf) exceeded(r *compare.Row) bool {
	d := r.Delta
	if fi.rel {
		d = r.Rel
	}
	switch fi.sign {
	case 1:
		return d > fi.limit
	case -1:
		return d < -fi.limit
	}
	return math.Abs(d) > fi.limit
}

// failure is a row past a threshold.
type failure struct {
	expr string
	row  string
}

// check returns the rows past their thresholds; a threshold that no row
// matches is an error (a misspelt subject must not pass silently).
func (f failIfFlags) check(t compare.Table) ([]failure, error) {
	var out []failure
	for i := range f {
		fi := &f[i]
		matched := false
		for j := range t.Rows {
			r := &t.Rows[j]
			if !fi.matches(r) {
				continue
			}
			matched = true
			if fi.exceeded(r) {
				out = append(out, failure{fi.text, fmt.Sprintf("%s %s %s %s → %s (%s, %s)", r.Kind, r.Key, r.Measure, num(r.A), num(r.B), signed(r.Delta), relText(r.Rel))})
			}
		}
		if !matched {
			return nil, fmt.Errorf("--fail-if %q matches no row of the table", fi.text)
		}
	}
	return out, nil
}

// num formats a value for the text table: integers as integers, others
// with six significant digits.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func signed(v float64) string {
	if v > 0 {
		return "+" + num(v)
	}
	return num(v)
}

func relText(r float64) string {
	switch {
	case math.IsInf(r, 1):
		return "new"
	case math.IsInf(r, -1):
		return "gone"
	case r > 0:
		return "+" + strconv.FormatFloat(100*r, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*r, 'f', 1, 64) + "%"
}

// writeDiffText prints the rows as aligned columns.
func writeDiffText(w io.Writer, t compare.Table, rows []compare.Row) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "ranges      A %s, B %s\n\n", num(t.SecondsA)+" s", num(t.SecondsB)+" s")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "score\tA\tB\tdelta\trel\t  kind\t measure\t  key\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t  %s\t %s\t  %s\n", strconv.FormatFloat(r.Score, 'g', 4, 64), num(r.A), num(r.B), signed(r.Delta), relText(r.Rel), r.Kind, r.Measure, strconv.Quote(r.Key))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

func writeDiffJSON(w io.Writer, t compare.Table, rows []compare.Row, failed []failure) error {
	out := struct {
		SecondsA float64          `json:"seconds_a"`
		SecondsB float64          `json:"seconds_b"`
		Rows     []web.CompareRow `json:"rows"`
		Failed   []string         `json:"failed"`
	}{SecondsA: t.SecondsA, SecondsB: t.SecondsB, Rows: []web.CompareRow{}, Failed: []string{}}
	for _, r := range rows {
		out.Rows = append(out.Rows, web.NewCompareRow(r)) // the compare API's rows are diff's
	}
	for _, f := range failed {
		out.Failed = append(out.Failed, f.expr+": "+f.row)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
