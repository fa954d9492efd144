package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/tracetest"
)

// traceInputs are the file extensions of trace inputs in ../shared/realdata;
// everything else there is an expected output or documentation.
var traceInputs = map[string]bool{".nettrace": true, ".netperf": true, ".cpel": true, ".elog": true, ".data": true}

// readAll opens data with every registered format and reads it to the
// end, decoding the details of every 16th event. It reports a panic or a
// reader error that is not a *trace.FormatError as a failure.
func readAll(data []byte) (events int, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			err = fmt.Errorf("panic: %v\n%s", p, buf)
		}
	}()
	r, err := trace.Open(bytes.NewReader(data), int64(len(data)), formats())
	if err != nil {
		return 0, nil // refused cleanly
	}
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			if _, ok := errors.AsType[*trace.FormatError](err); !ok {
				return events, fmt.Errorf("error is not a *trace.FormatError: %v", err)
			}
			return events, nil
		}
		if events%16 == 0 {
			r.Details(e)
			r.Stack(e.Stack)
			r.Labels(e.Labels)
		}
		events++
	}
}

// checkInput reads one damaged input under a time bound.
func checkInput(t *testing.T, what string, data []byte) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := readAll(data)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no result after 20 s (hang)", what)
	}
}

// TestCorruptRealData cuts every real trace at many offsets and mutates
// bytes and bits at seeded random places: every damaged copy must give
// its events and/or a clear error, without panicking or hanging. Every
// trace input there must be recognized by a registered format: a format
// dropped from formats() fails here rather than skipping.
//
// With tracetest.Exhaustive it cuts each file at 64 places (8 in the
// headers, 56 spread evenly) and makes 200 mutations; otherwise at the 8
// header places and 8 of the others picked with a fixed seed, and the
// first 32 of the same 200 mutations.
func TestCorruptRealData(t *testing.T) {
	t.Parallel()
	root := tracetest.RealData(t, "")
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && traceInputs[filepath.Ext(p)] {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no trace inputs (%v) under %s", slices.Sorted(maps.Keys(traceInputs)), root)
	}
	const cuts = 64
	mutations := 200
	if !tracetest.Exhaustive() {
		mutations = 32
	}
	for _, name := range files {
		rel, _ := filepath.Rel(root, name)
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := trace.Sniff(bytes.NewReader(data), int64(len(data)), formats()); err != nil {
				t.Fatalf("no registered format reads it: %v", err)
			}
			rng := rand.New(rand.NewPCG(uint64(len(data)), 7))
			tried := 0
			var at []int
			for i := range cuts {
				n := len(data) * i / cuts
				if i < 8 {
					n = i * 7 // the headers
				}
				at = append(at, n)
			}
			at = tracetest.Sample(at, 8, 8, uint64(len(data)))
			for _, n := range at {
				checkInput(t, fmt.Sprintf("cut at %d", n), data[:min(n, len(data))])
				tried++
			}
			buf := make([]byte, len(data))
			for i := range mutations {
				copy(buf, data)
				desc := ""
				for range 1 + rng.IntN(4) {
					off := rng.IntN(len(buf))
					if i%2 == 0 {
						bit := byte(1) << rng.IntN(8)
						buf[off] ^= bit
						desc += fmt.Sprintf(" bit %#x at %d", bit, off)
					} else {
						v := byte(rng.IntN(256))
						buf[off] = v
						desc += fmt.Sprintf(" byte %#x at %d", v, off)
					}
				}
				checkInput(t, "mutation"+desc, buf)
				tried++
			}
			t.Logf("%s: %d damaged copies read (%d cuts, %d mutations)", rel, tried, len(at), mutations)
		})
	}
}
