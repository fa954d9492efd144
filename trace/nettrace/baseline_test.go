package nettrace

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// dropped is a kind of event that PerfView's TraceLog leaves out of its
// baselines (PROVENANCE.md: "TraceLog drops bookkeeping events") although
// the file holds it.
type dropped struct {
	provider string
	id       int64
	name     string // TraceEvent's name, for the record
	count    int64
}

// baselines maps each real file with a PerfView baseline to the events
// TraceLog drops from it. Every difference between the baseline's total and
// the reader's is one of these rows.
var baselines = []struct {
	file    string
	dropped []dropped
}{
	{"eventpipe-dotnetcore2.1-linux-x64-objver3.netperf", []dropped{
		{providerRundown, 144, "Method/DCStopVerbose", 26053},
		{providerRundown, 150, "MethodILToNativeMap/DCStop", 50},
	}},
	{"eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf", nil},
	{"eventpipe-dotnetcore2.1-win-x86-objver3.netperf", []dropped{
		{providerRundown, 144, "Method/DCStopVerbose", 28265},
		{providerRundown, 150, "MethodILToNativeMap/DCStop", 45},
		{providerRuntime, 190, "Method/ILToNativeMap", 2},
	}},
	{"eventpipe-dotnetcore3.0-win-x64-objver4.nettrace", []dropped{
		{providerRuntime, 190, "Method/ILToNativeMap", 35},
	}},
	{"eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace", []dropped{
		{providerRundown, 144, "Method/DCStopVerbose", 1499},
		{providerRundown, 150, "MethodILToNativeMap/DCStop", 363},
	}},
	{"eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace", nil},
}

// readBaseline returns the per-provider sums of a PerfView baseline's
// counts (first two columns; a UTF-8 BOM may start the file).
func readBaseline(t *testing.T, path string) (map[string]int64, int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	sums := map[string]int64{}
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ", ")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		provider, _, _ := strings.Cut(name, "/")
		sums[provider] += n
		total += n
	}
	return sums, total
}

// TestPerfViewBaselines checks that the reader's event total equals the
// PerfView baseline's total plus the events TraceLog drops, per provider,
// with each dropped kind's count checked against the reader's count for
// that event id.
func TestPerfViewBaselines(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace")
	for _, bl := range baselines {
		t.Run(bl.file, func(t *testing.T) {
			want, wantTotal := readBaseline(t, filepath.Join(dir, "perfview", "baselines", bl.file+".baseline.txt"))
			r, _ := openReal(t, filepath.Join("perfview", bl.file))
			st, err := trace.Collect(r)
			if err != nil || st.Error != "" {
				t.Fatalf("reading: %v %s", err, st.Error)
			}
			got := map[string]int64{}
			byID := map[[2]string]int64{}
			for _, c := range st.Counts {
				got[c.Provider] += c.Count
				byID[[2]string{c.Provider, strconv.FormatInt(c.ID, 10)}] += c.Count
			}
			var droppedTotal int64
			for _, d := range bl.dropped {
				if n := byID[[2]string{d.provider, strconv.FormatInt(d.id, 10)}]; n != d.count {
					t.Errorf("%s id %d (%s): reader counts %d, table says TraceLog dropped %d", d.provider, d.id, d.name, n, d.count)
				}
				want[d.provider] += d.count
				droppedTotal += d.count
			}
			for p, n := range got {
				if want[p] != n {
					t.Errorf("provider %s: reader counts %d events, baseline + dropped = %d", p, n, want[p])
				}
			}
			for p, n := range want {
				if _, ok := got[p]; !ok {
					t.Errorf("provider %s: baseline + dropped = %d, reader has none", p, n)
				}
			}
			if st.Events != wantTotal+droppedTotal {
				t.Errorf("%d events, want baseline %d + dropped %d", st.Events, wantTotal, droppedTotal)
			}
		})
	}
}
