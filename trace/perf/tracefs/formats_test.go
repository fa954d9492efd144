package tracefs

import (
	"archive/zip"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace/tracetest"
)

// TestFormatsZip parses every one of the 2,751 real format files of
// formats0.zip and checks a summary of the field types they hold.
func TestFormatsZip(t *testing.T) {
	dir := tracetest.RealData(t, "perf/LinuxTracepoints-Net/DecodeTest/input")
	zr, err := zip.OpenReader(filepath.Join(dir, "formats0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	summary := map[string]int{}
	files := 0
	for _, zf := range zr.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		system, name, ok := strings.Cut(filepath.Base(zf.Name), " ")
		if !ok {
			t.Fatalf("entry %q is not \"<system> <event>\"", zf.Name)
		}
		e, err := ParseFormat(system, string(text), 8)
		if err != nil {
			t.Errorf("%s: %v", zf.Name, err)
			continue
		}
		files++
		if e.Name != name {
			t.Errorf("%s: name %q", zf.Name, e.Name)
		}
		if e.Common != 4 && !(e.Common == 0 && len(e.Fields) == 0) {
			summary["common!=4"]++
		}
		if e.PrintFmt == "" {
			t.Errorf("%s: no print fmt", zf.Name)
		}
		if e.EventHeader {
			summary["eventheader"]++
		}
		for _, f := range e.Fields {
			if f.Name == "noname" || f.ElemSize == 0 || f.Display == DisplayBad {
				t.Errorf("%s: field %+v", zf.Name, f)
			}
			if f.Array == ArrayFixed && f.Count > 0 && f.Count*f.ElemSize != f.Size && f.Display != DisplayString {
				summary["fixed array size mismatch"]++
			}
			summary[f.Display.String()+"/"+f.Array.String()]++
		}
	}
	if files != 2751 {
		t.Errorf("%d format files parsed, want 2751", files)
	}
	for _, k := range slices.Sorted(maps.Keys(summary)) {
		t.Logf("%-28s %6d", k, summary[k])
	}
	want := map[string]int{}
	for k, v := range wantSummary {
		want[k] = v
	}
	if !maps.Equal(summary, want) {
		t.Errorf("summary differs from wantSummary: got %v", summary)
	}
}

// wantSummary counts the fields of formats0.zip by display and array
// kind, as parsed by this package (reviewed against the declarations:
// char arrays are strings, __data_loc char[] strings, pointers hex…).
var wantSummary = map[string]int{
	"eventheader":       2,
	"bool/none":         125,
	"hex/fixed":         3,
	"hex/none":          4953,
	"signed/fixed":      1,
	"signed/none":       5686,
	"string/data_loc":   492,
	"string/fixed":      93,
	"string/none":       116,
	"unsigned/data_loc": 54,
	"unsigned/fixed":    204,
	"unsigned/none":     12813,
}
