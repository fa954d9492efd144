package nettrace

import (
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"viewer/trace/tracetest"
)

// TestRealFilesNameEveryEvent reads every NetTrace and NetPerf file of the
// real data and checks that every event has a name: runtime events from
// the merged manifests, the rest from their metadata. It lists the
// runtime events only the runtime's own manifest names.
func TestRealFilesNameEveryEvent(t *testing.T) {
	dir := tracetest.RealData(t, "nettrace")
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".nettrace") || strings.HasSuffix(p, ".netperf")) {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil || len(paths) == 0 {
		t.Fatalf("%d files: %v", len(paths), err)
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			r, _ := openReal(t, rel)
			counts := map[string]int{}
			for {
				e, err := r.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				et := r.meta.Types[e.Type]
				key := et.Provider + "/" + et.Name
				if counts[key] == 0 {
					switch {
					case et.Name == "":
						t.Errorf("%s event id %d v%d has no name", et.Provider, et.ID, et.Version)
					case strings.HasPrefix(et.Name, "EventID("):
						t.Errorf("%s event id %d v%d is known to neither manifest", et.Provider, et.ID, et.Version)
					}
				}
				counts[key]++
			}
			for key, n := range counts {
				if strings.HasPrefix(key, "Microsoft-Windows-DotNETRuntime") {
					t.Logf("%s %d", key, n)
				}
			}
		})
	}
}
