package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"viewer/trace/clr"
	"viewer/trace/export"
	"viewer/trace/tracetest"
)

// frameShare counts the stack frames of sample events and how many of
// them are named (not a bare hex address).
type frameShare struct{ total, named int64 }

func (s *frameShare) add(stack []string) {
	for _, f := range stack {
		s.total++
		if !strings.HasPrefix(f, "0x") {
			s.named++
		}
	}
}

// sampleTraces returns the shared .nettrace and .netperf files with their
// `viewer stats` frame counts (nil for traces without sample stacks),
// computed once for the tests that share them.
func sampleTraces(t *testing.T) map[string]*export.FrameCount {
	t.Helper()
	root := tracetest.RealData(t, "nettrace")
	sampleTracesOnce.Do(func() { sampleTracesMap, sampleTracesErr = frameCounts(root) })
	if sampleTracesErr != nil {
		t.Fatal(sampleTracesErr)
	}
	if len(sampleTracesMap) == 0 {
		t.Fatal("no .nettrace or .netperf file in ../shared/realdata/nettrace")
	}
	return sampleTracesMap
}

// The frame counts sampleTraces computes once per test binary.
var (
	sampleTracesOnce sync.Once
	sampleTracesMap  map[string]*export.FrameCount
	sampleTracesErr  error
)

// frameCounts runs `viewer stats --json` on every .nettrace and .netperf
// below root and returns their frame counts.
func frameCounts(root string) (map[string]*export.FrameCount, error) {
	out := map[string]*export.FrameCount{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".nettrace" && filepath.Ext(p) != ".netperf") {
			return err
		}
		var buf bytes.Buffer
		if err := runStats(context.Background(), []string{"--json", p}, &buf, io.Discard); err != nil {
			return fmt.Errorf("%s: stats: %w", p, err)
		}
		var st export.Stats
		if err := json.Unmarshal(buf.Bytes(), &st); err != nil {
			return fmt.Errorf("%s: stats: %w", p, err)
		}
		out[p] = st.Frames
		return nil
	})
	return out, err
}

// TestDumpSymbolized checks that `viewer dump` names the frames of every
// shared .NET trace's sample stacks as `viewer stats` counts them: the
// same number of frames, and the same number resolved.
func TestDumpSymbolized(t *testing.T) {
	t.Parallel()
	withFrames := 0
	for p, want := range sampleTraces(t) {
		if want != nil && want.Total > maxQuickFrames && !tracetest.Exhaustive() {
			t.Logf("%s: %d sample frames: dumped only in exhaustive runs", filepath.Base(p), want.Total)
			continue
		}
		var buf bytes.Buffer
		if err := runDump(context.Background(), []string{p}, &buf, io.Discard); err != nil {
			t.Fatalf("%s: dump: %v", p, err)
		}
		var got frameShare
		sc := bufio.NewScanner(&buf)
		sc.Buffer(nil, 16<<20)
		sample := []byte(`"event":"` + clr.SampleEvent + `"`)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), sample) {
				continue
			}
			var line struct {
				Event string   `json:"event"`
				Stack []string `json:"stack"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if line.Event == clr.SampleEvent {
				got.add(line.Stack)
			}
		}
		name := filepath.Base(p)
		if want == nil {
			if got.total != 0 {
				t.Errorf("%s: dump has %d sample frames, stats none", name, got.total)
			}
			continue
		}
		withFrames++
		t.Logf("%s: %d of %d frames named (%.2f%%)", name, got.named, got.total, 100*float64(got.named)/float64(got.total))
		if got.total != want.Total || got.named != want.Resolved {
			t.Errorf("%s: dump names %d of %d sample frames, stats %d of %d", name, got.named, got.total, want.Resolved, want.Total)
		}
	}
	if withFrames == 0 {
		t.Error("no shared trace has sample stacks")
	}
}

// maxQuickFrames and maxAPISamples bound the sample frames
// TestDumpSymbolized dumps and the sample events TestAPISymbolized fetches
// one by one from a trace; larger traces are checked only in exhaustive
// runs (CI): webapp and objver4 take seconds each.
const (
	maxQuickFrames = 20000
	maxAPISamples  = 2000
)

// TestAPISymbolized uploads every shared .NET trace with sample stacks to
// the server and checks that its stats carry the frame counts of `viewer
// stats`, and that the event API names the frames of its sample events
// as those counts say (every sample event, found with the search API).
func TestAPISymbolized(t *testing.T) {
	t.Parallel()
	hs, stop := startServerWith(t, t.TempDir(), 64<<20) // HeartRateMonitor is 30 MB
	defer stop()
	for p, want := range sampleTraces(t) {
		if want == nil {
			continue
		}
		name := filepath.Base(p)
		id, err := uploadFile(hs.URL, p)
		if err != nil {
			t.Fatal(err)
		}
		info := waitIndexed(t, hs.URL, id)
		if f := info.Stats.Frames; f == nil || *f != *want {
			t.Errorf("%s: API stats frames %+v, viewer stats %+v", name, f, *want)
		}
		evs := searchAll(t, hs.URL, id, clr.SampleEvent)
		if len(evs) > maxAPISamples && !tracetest.Exhaustive() {
			t.Logf("%s: %d sample events: checked through the API only in exhaustive runs", name, len(evs))
			continue
		}
		got := fetchFrames(t, hs.URL, id, evs)
		t.Logf("%s: the event API names %d of %d frames of %d samples", name, got.named, got.total, len(evs))
		if got.total != want.Total || got.named != want.Resolved {
			t.Errorf("%s: the event API names %d of %d sample frames, stats %d of %d", name, got.named, got.total, want.Resolved, want.Total)
		}
	}
}

// searchAll returns the ids of every event the search API finds for q.
func searchAll(t *testing.T, base, id, q string) []string {
	t.Helper()
	var evs []string
	after := ""
	for {
		u := base + "/api/traces/" + id + "/search?limit=10000&q=" + url.QueryEscape(q)
		if after != "" {
			u += "&after=" + after
		}
		var r struct {
			Hits []struct {
				Ev string `json:"ev"`
			} `json:"hits"`
			More bool `json:"more"`
		}
		getJSON(t, u, &r)
		for _, h := range r.Hits {
			evs = append(evs, h.Ev)
		}
		if !r.More || len(r.Hits) == 0 {
			return evs
		}
		after = r.Hits[len(r.Hits)-1].Ev
	}
}

// fetchFrames asks the event API for each event and counts its frames.
func fetchFrames(t *testing.T, base, id string, evs []string) frameShare {
	t.Helper()
	var (
		mu    sync.Mutex
		total frameShare
		wg    sync.WaitGroup
		errs  = make(chan error, 1)
	)
	next := make(chan string)
	for range 4 {
		wg.Go(func() {
			var mine frameShare
			for ev := range next {
				resp, err := http.Get(base + "/api/traces/" + id + "/events/" + ev)
				if err != nil {
					report(errs, err)
					continue
				}
				var e struct {
					Stack []string `json:"stack"`
				}
				err = json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					report(errs, fmt.Errorf("event %s: %d %v", ev, resp.StatusCode, err))
					continue
				}
				mine.add(e.Stack)
			}
			mu.Lock()
			total.total += mine.total
			total.named += mine.named
			mu.Unlock()
		})
	}
	for _, ev := range evs {
		next <- ev
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return total
}

// report keeps the first error of many.
func report(errs chan<- error, err error) {
	select {
	case errs <- err:
	default:
	}
}
