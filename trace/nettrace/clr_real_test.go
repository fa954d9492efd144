package nettrace

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/tracetest"
)

var realNettrace = []string{
	"perfview/eventpipe-dotnetcore2.1-linux-x64-objver3.netperf",
	"perfview/eventpipe-dotnetcore2.1-win-x86-objver3.netperf",
	"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace",
	"perfview/eventpipe-dotnetcore5.0-win-x64-arraytypes.nettrace",
	"perfview/eventpipe-dotnetcore6.0-win-x64-executioncheckpoints.nettrace",
	"perfview/HeartRateMonitor.10068.nettrace",
	"perfview/mixed_managed_external_samples.nettrace",
	"perfview/only_managed_samples.nettrace",
	"dotnetdiag/dotnet-5.0-SampleProfiler-single-thread.golden.nettrace",
	"dotnetdiag/dotnet-5.0-SampleProfiler-webapp.golden.nettrace",
	"msperftools/HelloWorld_GC_Threads_Exception.nettrace",
}

// TestManifestLayoutsOnRealFiles decodes every runtime event of the real
// files with its manifest schema and checks that the schema accounts for
// the payload exactly: every byte used, when the event's version is one
// the schema knows. It also counts what newer versions append.
func TestManifestLayoutsOnRealFiles(t *testing.T) {
	for _, path := range realNettrace {
		t.Run(strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			r, _ := openReal(t, path)
			mismatch := map[string]int{}
			decoded := 0
			for {
				e, err := r.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				ti := &r.types[e.Type]
				if ti.manifest == nil {
					continue
				}
				et := r.meta.Types[e.Type]
				s, _ := r.schema.Lookup(et.Provider, int(et.ID), et.Version)
				raw, err := r.Payload(e)
				if err != nil {
					t.Fatal(err)
				}
				_, used := DecodePayload(raw, ti.manifest, r.meta.PointerSize)
				decoded++
				if used != len(raw) && s.Version == et.Version {
					mismatch[fmt.Sprintf("%s id %d v%d: used %d of %d bytes", et.Name, et.ID, et.Version, used, len(raw))]++
				}
			}
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range mismatch {
					if !yield(k) {
						return
					}
				}
			})
			for _, k := range keys {
				t.Errorf("%s (%d events)", k, mismatch[k])
			}
			t.Logf("%d runtime events decoded by their manifest schema", decoded)
		})
	}
}

// TestRuntimeEventFields checks the fields the .NET runtime issue names
// on the files that have those events.
func TestRuntimeEventFields(t *testing.T) {
	want := map[string][]string{
		"GC/Start":          {"Count", "Depth", "Reason", "Type"},
		"GC/AllocationTick": {"TypeName"},
		"Exception/Start":   {"ExceptionType", "ExceptionMessage"},
	}
	seen := map[string]bool{}
	for _, path := range []string{"perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace", "msperftools/HelloWorld_GC_Threads_Exception.nettrace"} {
		r, _ := openReal(t, path)
		for {
			e, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			et := r.meta.Types[e.Type]
			names, ok := want[et.Name]
			if !ok || seen[et.Name] {
				continue
			}
			d, err := r.Details(e)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				i := slices.IndexFunc(d.Fields, func(f trace.Field) bool { return f.Name == n })
				if i < 0 || d.Fields[i].Value.String() == "" {
					t.Errorf("%s: %s: no %s in %v", path, et.Name, n, d.Fields)
				}
			}
			seen[et.Name] = true
			t.Logf("%s: %s", path, d.Label)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no %s event found", name)
		}
	}
}

// TestProcessInfo checks that EventPipe's ProcessInfo event reaches the
// trace's info: command line, OS and architecture.
func TestProcessInfo(t *testing.T) {
	r, _ := openReal(t, "msperftools/HelloWorld_GC_Threads_Exception.nettrace")
	if res := tracetest.Check(t, r, false); res.Err != nil {
		t.Fatal(res.Err)
	}
	info := map[string]string{}
	for _, kv := range r.Meta().Info {
		info[kv.Key] = kv.Value
	}
	if !strings.HasSuffix(info["CommandLine"], "TestApp.dll") || info["OSInformation"] != "Linux" || info["ArchInformation"] != "x64" {
		t.Errorf("info %q", r.Meta().Info)
	}
}
