// Package tracetest holds test support shared by the format readers and
// their consumers: locating the real traces in ../shared/realdata, an
// invariant checker for any [trace.Reader], and the switch between
// sampled and exhaustive damage tests ([Exhaustive]).
package tracetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/export"
)

// ExhaustiveEnv names the environment variable that makes the tests which
// cut or damage traces at many places try every place: .ci/run sets it.
const ExhaustiveEnv = "VIEWER_EXHAUSTIVE"

// Exhaustive reports whether VIEWER_EXHAUSTIVE is set to a value other
// than "" or "0". Tests that cut a trace at every length, or at every
// block boundary of a real file, do so only then; otherwise they try a
// fixed seeded sample (always the headers and some block boundaries) so
// that a plain `go test ./...` stays quick. Every such test asks here and
// nowhere else.
func Exhaustive() bool {
	v := os.Getenv(ExhaustiveEnv)
	return v != "" && v != "0"
}

// Sample returns xs itself when [Exhaustive]. Otherwise it returns the
// first keep elements of xs and n more picked from the rest with a fixed
// seed, in their original order: the same sample on every run.
func Sample[T any](xs []T, keep, n int, seed uint64) []T {
	if Exhaustive() || len(xs) <= keep+n {
		return xs
	}
	rest := len(xs) - keep
	rng := rand.New(rand.NewPCG(seed, uint64(len(xs))))
	picked := make([]bool, rest)
	for _, i := range rng.Perm(rest)[:n] {
		picked[i] = true
	}
	out := append(make([]T, 0, keep+n), xs[:keep]...)
	for i, x := range xs[keep:] {
		if picked[i] {
			out = append(out, x)
		}
	}
	return out
}

// RealData returns the directory ../shared/realdata/<sub> beside the
// repository. It skips the test with a clear message when the folder is
// absent (a fresh clone) and fails it when running in CI, where the folder
// must be present.
func RealData(tb testing.TB, sub string) string {
	tb.Helper()
	dir, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "..", "shared", "realdata", sub)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("real data %s missing in CI: %v", p, err)
		}
		tb.Skipf("skipping: real data %s is absent (it lives beside the repository in ../shared)", p)
	}
	return p
}

// RealFiles returns the regular files below RealData(tb, sub) whose
// names end in one of exts (every file when exts is empty), in lexical
// order.
func RealFiles(tb testing.TB, sub string, exts ...string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(RealData(tb, sub), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && (len(exts) == 0 || slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(p, e) })) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("tracetest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Result is what Check saw while reading a trace to its end.
type Result struct {
	Events []trace.Event
	Err    error // nil for a clean end, else the error that ended reading
}

// Check reads r to its end, verifying on every event the invariants every
// reader promises: time never decreases, track, type, stack and label ids
// resolve. keep says whether to return the events. An error from
// ReadEvent other than a *trace.FormatError fails the test.
func Check(tb testing.TB, r trace.Reader, keep bool) Result {
	tb.Helper()
	var res Result
	var last trace.Time
	for n := 0; ; n++ {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				tb.Fatalf("event %d: error is not a *trace.FormatError: %v", n, err)
			}
			res.Err = err
			break
		}
		if err := Validate(r.Meta(), r, e, n, last); err != nil {
			tb.Fatal(err)
		}
		last = e.Time
		if keep {
			res.Events = append(res.Events, e)
		}
	}
	if r.Meta().Clock.TicksPerSecond == 0 {
		tb.Errorf("Meta().Clock.TicksPerSecond is 0")
	}
	return res
}

// Validate checks one event against the reader's tables; n is its index
// and prev the previous event's time.
func Validate(m *trace.Meta, r trace.Reader, e trace.Event, n int, prev trace.Time) error {
	switch {
	case n > 0 && e.Time < prev:
		return fmt.Errorf("event %d: time %d before previous %d", n, e.Time, prev)
	case e.Track != trace.NoTrack && (e.Track < 0 || int(e.Track) >= len(m.Tracks)):
		return fmt.Errorf("event %d: track %d of %d", n, e.Track, len(m.Tracks))
	case e.Capture != trace.NoTrack && (e.Capture < 0 || int(e.Capture) >= len(m.Tracks)):
		return fmt.Errorf("event %d: capture track %d of %d", n, e.Capture, len(m.Tracks))
	case e.Type < 0 || int(e.Type) >= len(m.Types):
		return fmt.Errorf("event %d: type %d of %d", n, e.Type, len(m.Types))
	case e.Stack != trace.NoStack && r.Stack(e.Stack) == nil:
		return fmt.Errorf("event %d: stack %d does not resolve", n, e.Stack)
	case e.Labels != trace.NoLabels && r.Labels(e.Labels) == nil:
		return fmt.Errorf("event %d: labels %d do not resolve", n, e.Labels)
	case e.Payload.Off < 0 || e.Payload.Len < 0:
		return fmt.Errorf("event %d: payload %+v", n, e.Payload)
	}
	return nil
}

// CheckDetailsConcurrent decodes every event's details once, then again
// from four goroutines in different orders, and fails the test when any
// concurrent result (label or fields) differs: Details must be safe for
// concurrent use once reading has finished. Run it under -race.
func CheckDetailsConcurrent(tb testing.TB, r trace.Reader, events []trace.Event) {
	tb.Helper()
	render := func(d trace.Details) string {
		return d.Label + "\x00" + string(export.AppendFields(nil, d.Fields))
	}
	want := make([]string, len(events))
	for i, e := range events {
		d, err := r.Details(e)
		if err != nil {
			tb.Fatalf("event %d: %v", i, err)
		}
		want[i] = render(d)
	}
	if len(events) == 0 {
		return
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for k := range events {
				i := (k*7 + g*1013) % len(events)
				d, err := r.Details(events[i])
				if err == nil && render(d) != want[i] {
					err = fmt.Errorf("event %d: concurrent details %q, want %q", i, render(d), want[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			tb.Error(err)
		}
	}
}

// Labels reads r to its end (checking it as Check does) and returns each
// event as "track | label", the text a golden test compares.
func Labels(tb testing.TB, r trace.Reader) []string {
	tb.Helper()
	res := Check(tb, r, true)
	if res.Err != nil {
		tb.Fatal(res.Err)
	}
	out := make([]string, 0, len(res.Events))
	for _, e := range res.Events {
		d, err := r.Details(e)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, r.Meta().Tracks[e.Track].Name+" | "+d.Label)
	}
	return out
}

// CheckCuts opens full cut at every length with f: each cut is refused
// with a *trace.FormatError, or reads to a truncation error after events
// whose details all decode. It cuts at every length even when not
// [Exhaustive]: the fixtures it is given are a few KiB and take
// milliseconds (sample with [Sample] if one grows).
func CheckCuts(tb testing.TB, f trace.Format, full []byte) {
	tb.Helper()
	for n := range len(full) {
		r, err := f.Open(bytes.NewReader(full[:n]), int64(n))
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				tb.Fatalf("cut at %d: Open error %v is not a FormatError", n, err)
			}
			continue
		}
		res := Check(tb, r, true)
		if !errors.Is(res.Err, trace.ErrTruncated) {
			tb.Fatalf("cut at %d: error %v, want truncation", n, res.Err)
		}
		for _, e := range res.Events {
			if _, err := r.Details(e); err != nil {
				tb.Fatalf("cut at %d: Details: %v", n, err)
			}
		}
	}
}
