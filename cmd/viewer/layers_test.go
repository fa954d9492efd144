package main

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers says which of the project's packages each package may import
// (non-test imports; patterns as path.Match). It is the architecture in
// one table: the model at the bottom, format-neutral helpers beside it,
// one room per format, the index above the formats, the server above the
// index, and cmd/viewer, which assembles everything, on top. A package
// that is not listed fails the test: add it where it belongs.
var layers = []struct {
	pkg    string
	may    []string
	reason string
}{
	{"viewer/trace", nil, "the format-neutral model"},
	{"viewer/symbols", nil, "format-neutral address tables"},
	{"viewer/trace/export", []string{"viewer/trace"}, "dump and stats output of any trace"},
	{"viewer/trace/span", []string{"viewer/trace"}, "the model of derived tracks (slices, counters)"},
	{"viewer/trace/clr", []string{"viewer/trace", "viewer/trace/span"}, ".NET runtime knowledge"},
	{"viewer/trace/clr/internal/gen", nil, "the schema generator"},
	{"viewer/trace/vppfmt", []string{"viewer/symbols"}, "VPP's label formats"},
	{"viewer/trace/nettrace", []string{"viewer/trace", "viewer/trace/clr"}, "a format"},
	{"viewer/trace/nettrace/ipc", nil, "the .NET diagnostics IPC client: bytes to and from a socket, no trace model"},
	{"viewer/trace/cpel", []string{"viewer/trace", "viewer/symbols", "viewer/trace/vppfmt"}, "a format"},
	{"viewer/trace/elog", []string{"viewer/trace", "viewer/trace/vppfmt"}, "a format"},
	{"viewer/trace/perf", []string{"viewer/trace", "viewer/trace/span", "viewer/trace/perf/tracefs", "viewer/trace/perf/eventheader"}, "a format"},
	{"viewer/trace/perf/tracefs", []string{"viewer/trace"}, "tracefs event formats"},
	{"viewer/trace/perf/eventheader", []string{"viewer/trace", "viewer/trace/span"}, "EventHeader events"},
	{"viewer/trace/synth", []string{"viewer/trace"}, "the synthetic test format"},
	{"viewer/trace/wrap", []string{"viewer/trace"}, "zip, gzip and zstd around any format's trace"},
	{"viewer/trace/follow", nil, "a trace file still being written"},
	{"viewer/trace/align", []string{"viewer/trace"}, "several traces on one time axis"},
	// Writers and test helpers: the model, symbols and each other, never a
	// reader (the readers' own tests import them).
	{"viewer/trace/*/*test", []string{"viewer/trace", "viewer/symbols", "viewer/trace/*/*test", "viewer/trace/*/*/*test"}, "writers for tests"},
	{"viewer/trace/*/*/*test", []string{"viewer/trace", "viewer/symbols", "viewer/trace/*/*test", "viewer/trace/*/*/*test"}, "writers for tests"},
	{"viewer/trace/tracetest", []string{"viewer/trace", "viewer/trace/export"}, "checks every reader's tests share"},
	{"viewer/render", []string{"viewer/trace", "viewer/trace/export", "viewer/trace/span", "viewer/render/*"}, "the index"},
	{"viewer/render/stacks", []string{"viewer/trace", "viewer/render"}, "stack aggregation over the index, shared by the API and viewer stacks"},
	{"viewer/render/compare", []string{"viewer/trace", "viewer/trace/span", "viewer/render"}, "two traces or two ranges compared, over the index"},
	{"viewer/render/*", []string{"viewer/trace", "viewer/trace/export", "viewer/render", "viewer/render/*"}, "the index's parts"},
	{"viewer/ui", nil, "embedded pages and scripts"},
	{"viewer/ui/templates", nil, "templ pages"},
	{"viewer/web", []string{"viewer/trace", "viewer/trace/export", "viewer/trace/span", "viewer/trace/wrap", "viewer/trace/follow", "viewer/trace/nettrace/ipc", "viewer/trace/align", "viewer/render", "viewer/render/*", "viewer/ui/templates"}, "the server: formats come from its Config; it unwraps uploads, follows live traces, aligns several traces and attaches to .NET processes"},
	{"viewer/web/*", []string{"viewer/trace", "viewer/trace/export", "viewer/render", "viewer/render/*", "viewer/web", "viewer/ui/templates"}, "the server's parts"},
	{"viewer/web/internal/*", []string{"viewer/web"}, "generators of the page's files from the server's tables"},
	{"viewer/cmd/viewer", []string{"viewer/*", "viewer/*/*", "viewer/*/*/*", "viewer/*/*/*/*"}, "assembles everything"},
	{"viewer/cmd/viewer/internal/*", []string{"viewer/trace", "viewer/trace/*", "viewer/trace/*/*test"}, "generators of committed fixtures"},
}

// TestLayers checks every package's imports against [layers], that the
// model imports no JSON encoder and that no package under render/ is a
// trace format.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}} {{join .Imports \",\"}}", "viewer/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, dir := f[0], f[1]
		var imports []string
		if len(f) > 2 {
			imports = strings.Split(f[2], ",")
		}
		seen++
		may, ok := allowed(pkg)
		if !ok {
			t.Errorf("%s is not in the layers table: add it where it belongs", pkg)
			continue
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, "viewer/") {
				continue
			}
			if !slices.ContainsFunc(may, func(p string) bool { ok, _ := path.Match(p, imp); return ok }) {
				t.Errorf("%s imports %s, which its layer does not allow", pkg, imp)
			}
		}
		if pkg == "viewer/trace" && slices.ContainsFunc(imports, func(imp string) bool { return strings.HasPrefix(imp, "encoding/json") }) {
			t.Errorf("the model (viewer/trace) imports a JSON encoder; output belongs in trace/export")
		}
		if strings.HasPrefix(pkg, "viewer/render") {
			if name := formatIn(t, dir); name != "" {
				t.Errorf("%s defines %s, a trace format: formats live under trace/", pkg, name)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list named only %d packages", seen)
	}
}

// allowed returns the import patterns of pkg's layer.
func allowed(pkg string) ([]string, bool) {
	for _, l := range layers {
		if ok, _ := path.Match(l.pkg, pkg); ok {
			return l.may, true
		}
	}
	return nil, false
}

// formatIn returns the type in dir's non-test Go files that has the
// methods of a trace.Format (Name, Match and Open), or "".
func formatIn(t *testing.T, dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	methods := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				if methods[id.Name] == nil {
					methods[id.Name] = map[string]bool{}
				}
				methods[id.Name][fn.Name.Name] = true
			}
		}
	}
	for typ, m := range methods {
		if m["Name"] && m["Match"] && m["Open"] {
			return typ
		}
	}
	return ""
}
