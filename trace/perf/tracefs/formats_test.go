package tracefs

import (
	"archive/zip"
	"encoding/binary"
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
	files, printOK := 0, 0
	printFailed := map[string]int{}
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
		// The print fmt: parsed, or unsupported with libtraceevent's
		// reason; rendered without a panic over zeros and over bytes.
		if msg := e.Print.Err(); msg != "" {
			printFailed[msg]++
			t.Logf("%s: print fmt unsupported: %s", zf.Name, msg)
		} else {
			printOK++
		}
		size := 0
		for _, f := range e.Fields {
			size = max(size, f.Offset+f.Size)
		}
		raw := make([]byte, size+64)
		for _, fill := range []byte{0, 0x41, 0xff} {
			for i := range raw {
				raw[i] = fill + byte(i)
			}
			if out := e.Print.Append(nil, raw, binary.LittleEndian); len(out) > MaxOutput {
				t.Errorf("%s: %d bytes of output", zf.Name, len(out))
			}
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
	failed := 0
	for _, k := range slices.Sorted(maps.Keys(printFailed)) {
		t.Logf("print fmt unsupported %4d× %s", printFailed[k], k)
		failed += printFailed[k]
	}
	t.Logf("print fmt: %d of %d parsed, %d unsupported", printOK, files, failed)
	if printOK != wantPrintOK {
		t.Errorf("%d print fmts parsed, want %d", printOK, wantPrintOK)
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
// char arrays are strings, __data_loc char[] strings, pointers hex,
// char scalars are numbers, typedefs take `signed:`, unsigned longs are
// hex…).
var wantSummary = map[string]int{
	"eventheader":       2,
	"bool/none":         125,
	"hex/fixed":         3,
	"hex/none":          2095,
	"signed/fixed":      1,
	"signed/none":       6079,
	"string/data_loc":   492,
	"string/fixed":      93,
	"unsigned/data_loc": 54,
	"unsigned/fixed":    204,
	"unsigned/none":     15394,
}

// wantPrintOK is how many print fmts of formats0.zip the interpreter
// parses; the others are reported as unsupported, with the reason
// libtraceevent would fail them for (TestFormatsZip logs them).
var wantPrintOK = 2709
