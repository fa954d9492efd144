package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"viewer/trace/export"
	"viewer/trace/tracetest"
	"viewer/trace/wrap"
)

// collapsed parses "frame;frame weight" lines into each stack's share of
// the total. Unresolved frames (our hex addresses, dotnetdiag's ?!?) are
// made equal, and runs of them folded, since the two tools mark them
// differently.
func collapsed(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	addr := regexp.MustCompile(`^0x[0-9a-f]+$`)
	weights := map[string]float64{}
	var total float64
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		w, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("bad line %q", line)
		}
		var frames []string
		for f := range strings.SplitSeq(line[:i], ";") {
			if addr.MatchString(f) {
				f = "?!?"
			}
			if f == "?!?" && len(frames) > 0 && frames[len(frames)-1] == "?!?" {
				continue
			}
			frames = append(frames, f)
		}
		weights[strings.Join(frames, ";")] += w
		total += w
	}
	for k := range weights {
		weights[k] /= total
	}
	return weights
}

// TestStacksGolden compares `viewer stacks --collapsed --managed-only` with
// dotnetdiag's managed-only goldens: the same set of stacks, each stack's
// share of the total within one percentage point. --time weighs samples as
// dotnetdiag does (the time since the thread's previous sample); its
// conversion to nanoseconds is exact for these files' 1 GHz clock, but the
// shares are compared rather than the weights.
func TestStacksGolden(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace/dotnetdiag")
	for _, name := range []string{"dotnet-5.0-SampleProfiler-single-thread", "dotnet-5.0-SampleProfiler-webapp"} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := runStacks(context.Background(), []string{"--collapsed", "--managed-only", "--time", filepath.Join(dir, name+".golden.nettrace")}, &out, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := collapsed(t, &out)
			f, err := os.Open(filepath.Join(dir, name+"-managed-only.txt"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want := collapsed(t, f)
			for s, w := range want {
				g, ok := got[s]
				if !ok {
					t.Errorf("missing stack (%.2f%%): %s", 100*w, s)
					continue
				}
				if math.Abs(g-w) > 0.01 {
					t.Errorf("share %.2f%%, golden %.2f%%: %s", 100*g, 100*w, s)
				}
			}
			for s, g := range got {
				if _, ok := want[s]; !ok {
					t.Errorf("extra stack (%.2f%%): %s", 100*g, s)
				}
			}
		})
	}
}

// TestStatsFrames checks symbolization coverage of sample stacks: at least
// 99% of frames resolve on the files with rundown.
func TestStatsFrames(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace")
	for _, name := range []string{
		"perfview/only_managed_samples.nettrace",
		"perfview/mixed_managed_external_samples.nettrace",
		"perfview/HeartRateMonitor.10068.nettrace",
		"dotnetdiag/dotnet-5.0-SampleProfiler-single-thread.golden.nettrace",
	} {
		var out bytes.Buffer
		if err := runStats(context.Background(), []string{"--json", filepath.Join(dir, name)}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var st export.Stats
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		if st.Frames == nil || st.Frames.Total == 0 || float64(st.Frames.Resolved) < 0.99*float64(st.Frames.Total) {
			t.Errorf("%s: frames %+v, want ≥ 99%% resolved", name, st.Frames)
			continue
		}
		t.Logf("%s: %d of %d frames resolved (%.2f%%)", name, st.Frames.Resolved, st.Frames.Total, 100*float64(st.Frames.Resolved)/float64(st.Frames.Total))
	}
}

// BenchmarkSymbolize resolves every sample-stack frame of a real trace
// (after the one pass that builds the method map) and reports frames/s.
func BenchmarkSymbolize(b *testing.B) {
	for _, name := range []string{"perfview/HeartRateMonitor.10068.nettrace", "dotnetdiag/dotnet-5.0-SampleProfiler-webapp.golden.nettrace"} {
		b.Run(filepath.Base(name), func(b *testing.B) {
			f, err := wrap.OpenFile(context.Background(), filepath.Join(tracetest.RealData(b, "nettrace"), name), formats(), wrap.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			s, err := scanTrace(context.Background(), f, "", "")
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			frames, resolved := 0, 0
			for range b.N {
				for _, sm := range s.samples {
					for _, a := range f.Stack(sm.stack) {
						if _, ok := s.symbols.Symbolize(-1, sm.time, a); ok {
							resolved++
						}
						frames++
					}
				}
			}
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds()/1e6, "Mframes/s")
			b.ReportMetric(float64(resolved)/float64(max(frames, 1)), "resolved")
		})
	}
}
