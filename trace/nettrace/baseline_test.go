package nettrace

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"viewer/trace/export"
	"viewer/trace/tracetest"
)

// dropped is a kind of event that PerfView's TraceLog leaves out of its
// baselines (PROVENANCE.md: "TraceLog drops bookkeeping events") although
// the file holds it.
type dropped struct {
	provider string
	name     string // our name; TraceEvent's in the comment
	count    int64
}

// baselines maps each real file with a PerfView baseline to the events
// TraceLog drops from it. Every difference between the baseline's counts
// and the reader's is one of these rows or one of baselineNames.
var baselines = []struct {
	file    string
	dropped []dropped
}{
	{"eventpipe-dotnetcore2.1-linux-x64-objver3.netperf", []dropped{
		{providerRundown, "Method/DCStopVerbose", 26053},   // id 144, TraceEvent Method/DCStopVerbose
		{providerRundown, "Method/DCEndILToNativeMap", 50}, // id 150, TraceEvent MethodILToNativeMap/DCStop
	}},
	{"eventpipe-dotnetcore2.1-linux-x64-tracelogging.netperf", nil},
	{"eventpipe-dotnetcore2.1-win-x86-objver3.netperf", []dropped{
		{providerRundown, "Method/DCStopVerbose", 28265},
		{providerRundown, "Method/DCEndILToNativeMap", 45},
		{providerRuntime, "Method/ILToNativeMap", 2}, // id 190
	}},
	{"eventpipe-dotnetcore3.0-win-x64-objver4.nettrace", []dropped{
		{providerRuntime, "Method/ILToNativeMap", 35},
	}},
	{"eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace", []dropped{
		{providerRundown, "Method/DCStopVerbose", 1499},
		{providerRundown, "Method/DCEndILToNativeMap", 363},
	}},
	{"eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace", nil},
}

// baselineNames are events TraceEvent's own parser does not know: it
// shows them under their task name alone, which the manifest's
// IncreaseMemoryPressure (id 200) and DecreaseMemoryPressure (id 201) do
// not let us reproduce without losing their names.
var baselineNames = map[string]string{
	providerRuntime + "/GC/IncreaseMemoryPressure": providerRuntime + "/GC",
	providerRuntime + "/GC/DecreaseMemoryPressure": providerRuntime + "/GC",
}

// readBaseline returns a PerfView baseline's counts per Provider/Event
// name (first two columns; a UTF-8 BOM may start the file).
func readBaseline(t *testing.T, path string) map[string]int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	counts := map[string]int64{}
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
		counts[name] += n
	}
	return counts
}

// TestPerfViewBaselines checks the reader's count of every event name
// against the PerfView baselines: equal for every name a baseline lists,
// and every event the baselines leave out is a TraceLog-dropped kind
// listed above with its exact count.
func TestPerfViewBaselines(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace")
	for _, bl := range baselines {
		t.Run(bl.file, func(t *testing.T) {
			want := readBaseline(t, filepath.Join(dir, "perfview", "baselines", bl.file+".baseline.txt"))
			r, _ := openReal(t, filepath.Join("perfview", bl.file))
			st, err := export.Collect(r)
			if err != nil || st.Error != "" {
				t.Fatalf("reading: %v %s", err, st.Error)
			}
			got := map[string]int64{}
			for _, c := range st.Counts {
				name := c.Provider + "/" + c.Event
				if c.Event == "" {
					name = c.Provider + "/#" + strconv.FormatInt(c.ID, 10) // unnamed: never in a baseline
				}
				if pv, ok := baselineNames[name]; ok {
					name = pv
				}
				got[name] += c.Count
			}
			for _, d := range bl.dropped {
				name := d.provider + "/" + d.name
				if got[name] != d.count {
					t.Errorf("%s: reader counts %d, table says TraceLog dropped %d", name, got[name], d.count)
				}
				delete(got, name)
			}
			for name, n := range want {
				if got[name] != n {
					t.Errorf("%s: reader counts %d, baseline %d", name, got[name], n)
				}
			}
			for name, n := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: reader counts %d, the baseline has none and no row explains it", name, n)
				}
			}
		})
	}
}
