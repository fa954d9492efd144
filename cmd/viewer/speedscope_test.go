package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"viewer/trace/tracetest"
)

// speedscopeSchema compiles speedscope's published file-format schema,
// which .ci/run extracts from the npm package and names in
// SPEEDSCOPE_SCHEMA (nothing downloaded is committed). Without it the
// test skips, or fails when CI is set.
func speedscopeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := os.Getenv("SPEEDSCOPE_SCHEMA")
	if path == "" {
		msg := "SPEEDSCOPE_SCHEMA is not set: .ci/run extracts dist/release/file-format-schema.json from the npm package speedscope"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	sch, err := jsonschema.NewCompiler().Compile(path)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	return sch
}

// speedscopeFile is what the checks read of an exported file.
type speedscopeFile struct {
	Shared struct {
		Frames []struct{ Name string } `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type     string    `json:"type"`
		Unit     string    `json:"unit"`
		EndValue int64     `json:"endValue"`
		Samples  [][]int   `json:"samples"`
		Weights  []float64 `json:"weights"`
	} `json:"profiles"`
}

// checkSpeedscope validates data against the schema and checks what the
// schema cannot say: frame indexes in range, one weight per sample, the
// end value the weights' sum. It returns the parsed file.
func checkSpeedscope(t *testing.T, sch *jsonschema.Schema, what string, data []byte) speedscopeFile {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", what, err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("%s: not a valid speedscope file: %v", what, err)
	}
	var f speedscopeFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != 1 || f.Profiles[0].Type != "sampled" {
		t.Fatalf("%s: want one sampled profile, got %+v", what, f.Profiles)
	}
	p := f.Profiles[0]
	if len(p.Samples) == 0 || len(p.Samples) != len(p.Weights) {
		t.Fatalf("%s: %d samples, %d weights", what, len(p.Samples), len(p.Weights))
	}
	var sum int64
	for i, s := range p.Samples {
		for _, fr := range s {
			if fr < 0 || fr >= len(f.Shared.Frames) {
				t.Fatalf("%s: sample %d names frame %d of %d", what, i, fr, len(f.Shared.Frames))
			}
		}
		sum += int64(p.Weights[i])
	}
	if sum != p.EndValue {
		t.Errorf("%s: weights sum to %d, endValue %d", what, sum, p.EndValue)
	}
	return f
}

// TestSpeedscopeExport exports a range of HeartRateMonitor's samples with
// `viewer stacks --format speedscope` and through the API, and checks both
// against speedscope's schema and against each other.
func TestSpeedscopeExport(t *testing.T) {
	sch := speedscopeSchema(t)
	path := filepath.Join(tracetest.RealData(t, "nettrace"), "perfview", "HeartRateMonitor.10068.nettrace")
	const from, to = "1000000000", "3000000000"
	var cli bytes.Buffer
	if err := runStacks(context.Background(), []string{"--format", "speedscope", "--weight", "time", "--from", from, "--to", to, path}, &cli, io.Discard); err != nil {
		t.Fatal(err)
	}
	fc := checkSpeedscope(t, sch, "viewer stacks", cli.Bytes())
	if u := fc.Profiles[0].Unit; u != "nanoseconds" {
		t.Errorf("unit %q for --weight time, want nanoseconds", u)
	}

	hs, stop := startServerWith(t, t.TempDir(), 64<<20)
	defer stop()
	id, err := uploadFile(hs.URL, path)
	if err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, hs.URL, id)
	resp, err := http.Get(hs.URL + "/api/traces/" + id + "/stacks/speedscope?weight=time&from=" + from + "&to=" + to)
	if err != nil {
		t.Fatal(err)
	}
	api, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("API export: %d %s", resp.StatusCode, api)
	}
	fa := checkSpeedscope(t, sch, "API export", api)
	if fa.Profiles[0].EndValue != fc.Profiles[0].EndValue || len(fa.Profiles[0].Samples) != len(fc.Profiles[0].Samples) {
		t.Errorf("the API exports %d stacks weighing %d, the CLI %d weighing %d",
			len(fa.Profiles[0].Samples), fa.Profiles[0].EndValue, len(fc.Profiles[0].Samples), fc.Profiles[0].EndValue)
	}
}
