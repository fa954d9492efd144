package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/span"
	"viewer/trace/synth"
	"viewer/trace/wrap"
)

// benchReport is the JSON object `viewer bench` prints.
type benchReport struct {
	Source          string  `json:"source"`
	Events          int64   `json:"events"`
	Tracks          int     `json:"tracks"`
	QueryTracks     int     `json:"query_tracks"`
	LoadSeconds     float64 `json:"load_seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	// LoadCPUSeconds is the CPU time of all the process's threads while
	// loading (reader, index, spill writer, GC): on a shared machine
	// events per CPU second is the figure that does not depend on the
	// neighbours.
	LoadCPUSeconds     float64 `json:"load_cpu_seconds,omitempty"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_second,omitempty"`
	// OpenCPUSeconds is the CPU time of opening FILE before the load
	// (the format's checks at open: CPEL's scan of the event sections'
	// order), and FirstViewCPUSeconds that of the first query after it:
	// the whole trace over the busiest tracks, as the page asks first.
	// A user's load is the three together.
	OpenCPUSeconds      float64 `json:"open_cpu_seconds,omitempty"`
	FirstViewCPUSeconds float64 `json:"first_view_cpu_seconds,omitempty"`
	BaseRSSBytes        int64   `json:"base_rss_bytes"` // VmRSS before loading
	PeakRSSBytes        int64   `json:"peak_rss_bytes"` // VmHWM after loading
	RSSBytes            int64   `json:"rss_bytes"`      // VmRSS after loading
	// RSSAnonBytes and RSSFileBytes are RSSBytes's heap and file-backed
	// (the index store's mapped pages) parts.
	RSSAnonBytes    int64        `json:"rss_anon_bytes"`
	RSSFileBytes    int64        `json:"rss_file_bytes"`
	PeakBytesPerEv  float64      `json:"peak_bytes_per_event"`
	RSSBytesPerEv   float64      `json:"rss_bytes_per_event"` // (VmRSS − base) / events
	IndexBytes      int64        `json:"index_bytes"`         // the index's own count of its resident memory
	IndexBytesPerEv float64      `json:"index_bytes_per_event"`
	ReadError       string       `json:"read_error,omitempty"`
	Levels          []benchLevel `json:"levels"`
	// Spans is the derived tracks' part (bench_spans.go); absent when
	// nothing was derived.
	Spans *benchSpans `json:"spans,omitempty"`
	// Warm is the index file's part (bench_persist.go): written, then
	// reopened to the first frame.
	Warm *benchWarm `json:"warm,omitempty"`
}

// benchLevel is the timing of the viewports of one zoom level.
type benchLevel struct {
	Level    int     `json:"level"`
	WindowNS int64   `json:"window_ns"`
	ResNS    int64   `json:"res_ns"`
	Queries  int     `json:"queries"`
	Items    float64 `json:"items_mean"` // items per reply
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
	// The same in CPU time of the process (all threads of a query that
	// runs on several cores), which waiting for a busy machine does not
	// inflate (absent where the clock is not available).
	CPUP50MS float64 `json:"cpu_p50_ms,omitempty"`
	CPUP99MS float64 `json:"cpu_p99_ms,omitempty"`
	CPUMaxMS float64 `json:"cpu_max_ms,omitempty"`
	// The same viewports queried a second time, right after the first:
	// what the first pass touched is in memory (for an index larger than
	// memory the first pass is its cold figure, this one its warm page
	// cache figure).
	AgainP50MS float64 `json:"again_p50_ms"`
	AgainP99MS float64 `json:"again_p99_ms"`
	AgainMaxMS float64 `json:"again_max_ms"`
}

const (
	benchWidth     = 2000
	benchMaxTracks = 50
	benchLevels    = 10 // zoom levels below the full view
	benchQueries   = 100
)

// runBench loads and indexes a trace (a file, or a generated one), then
// times a fixed sweep of viewports and prints a JSON report.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	generate := fs.Int64("generate", 0, "index a synthetic trace of `N` events instead of a FILE")
	tracks := fs.Int("tracks", 64, "tracks of the synthetic trace")
	seed := fs.Uint64("seed", 1, "seed of the synthetic trace and of the viewport sweep")
	spillDir := fs.String("spill", "", "directory of the index spill file (default: the system's temporary directory)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load (reading and indexing) to `FILE`")
	generateSchedN := fs.Int64("generate-sched", 0, "index a generated perf.data scheduler recording of `N` events (written to a temporary file) instead of a FILE")
	noDerive := fs.Bool("no-derive", false, "do not derive slice tracks (to compare load times)")
	indexFile := fs.String("index-file", "", "write the index file to `PATH` and keep it; when PATH holds one for the same source, only reopen it (a warm start in a fresh process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var r trace.Reader
	var source string
	var derive span.Deriver
	var openCPU float64
	if *generateSchedN > 0 && *generate == 0 && fs.NArg() == 0 {
		name, err := generateSched(*spillDir, *generateSchedN)
		if err != nil {
			return err
		}
		defer os.Remove(name)
		fs.Parse([]string{name})
		source = "generate-sched " + strconv.FormatInt(*generateSchedN, 10)
	}
	switch {
	case *generate > 0 && fs.NArg() == 0:
		r = synth.New(synth.Config{Events: *generate, Tracks: *tracks, Seed: *seed})
		source = "generate " + strconv.FormatInt(*generate, 10)
	case *generate == 0 && fs.NArg() == 1:
		cpu0, cpuOK := processCPU()
		f, err := wrap.OpenFile(ctx, fs.Arg(0), formats(), wrap.Limits{})
		if err != nil {
			return err
		}
		if cpu1, ok := processCPU(); ok && cpuOK {
			openCPU = (cpu1 - cpu0).Seconds()
		}
		defer f.Close()
		r = f.Reader // the format's own: render reads in batches when it can
		if source == "" {
			source = fs.Arg(0)
		}
		if !*noDerive {
			derive = deriver(f.Reader)
		}
	default:
		fs.Usage()
		return fmt.Errorf("bench takes one FILE or --generate N")
	}
	rep := benchReport{Source: source, OpenCPUSeconds: openCPU}
	if *indexFile != "" {
		if _, err := os.Stat(*indexFile); err == nil {
			w, err := benchReopen(ctx, *indexFile, source, *seed)
			if err != nil {
				return err
			}
			rep.Warm = w
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}
	}
	status := procStatus()
	rep.BaseRSSBytes = status["VmRSS"]
	cpu0, cpuOK := processCPU()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	start := time.Now()
	x, err := render.Build(ctx, r, render.Options{SpillDir: *spillDir, Derive: derive})
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	defer func() {
		if x != nil { // benchWriteAndReopen closes it earlier
			x.Close()
		}
	}()
	rep.LoadSeconds = time.Since(start).Seconds()
	if cpu1, ok := processCPU(); ok && cpuOK {
		rep.LoadCPUSeconds = (cpu1 - cpu0).Seconds()
	}
	rep.Events = x.Events()
	if x.ReadErr() != nil {
		rep.ReadError = x.ReadErr().Error()
	}
	status = procStatus()
	rep.PeakRSSBytes, rep.RSSBytes = status["VmHWM"], status["VmRSS"]
	rep.RSSAnonBytes, rep.RSSFileBytes = status["RssAnon"], status["RssFile"]
	rep.IndexBytes = x.Bytes()
	if rep.Events > 0 {
		rep.EventsPerSecond = float64(rep.Events) / rep.LoadSeconds
		if rep.LoadCPUSeconds > 0 {
			rep.EventsPerCPUSecond = float64(rep.Events) / rep.LoadCPUSeconds
		}
		rep.PeakBytesPerEv = float64(rep.PeakRSSBytes) / float64(rep.Events)
		rep.RSSBytesPerEv = float64(rep.RSSBytes-rep.BaseRSSBytes) / float64(rep.Events)
		rep.IndexBytesPerEv = float64(rep.IndexBytes) / float64(rep.Events)
	}
	ids := x.Tracks()
	rep.Tracks = len(ids)
	// The busiest tracks, as a user would look at first.
	slices.SortStableFunc(ids, func(a, b trace.TrackID) int { return x.TrackEvents(b) - x.TrackEvents(a) })
	ids = ids[:min(len(ids), benchMaxTracks)]
	rep.QueryTracks = len(ids)
	if rep.Events > 0 {
		first, last := x.Span()
		var s render.Slice
		c0, ok0 := processCPU()
		if err := x.QueryInto(ctx, render.Viewport{Start: first, End: last + 1, Width: benchWidth, Tracks: ids}, &s); err != nil {
			return err
		}
		if c1, ok := processCPU(); ok && ok0 {
			rep.FirstViewCPUSeconds = (c1 - c0).Seconds()
		}
		if rep.Levels, err = sweep(ctx, x, ids, *seed); err != nil {
			return err
		}
	}
	if rep.Spans, err = sweepSpans(ctx, x, rep.LoadSeconds, *seed); err != nil {
		return err
	}
	if rep.Warm, err = benchWriteAndReopen(ctx, &x, *indexFile, *spillDir, source, *seed); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// sweep times benchQueries viewports per zoom level: level 0 is the whole
// trace, level benchLevels a window holding about one event per pixel
// over all tracks, the levels between are geometric steps, each viewport
// placed at a random position.
func sweep(ctx context.Context, x *render.Index, ids []trace.TrackID, seed uint64) ([]benchLevel, error) {
	first, last := x.Span()
	var s render.Slice
	levels, err := sweepLevels(first, last, x.Events(), seed, 0x6265, func(start, end trace.Time) (int64, int, error) {
		if err := x.QueryInto(ctx, render.Viewport{Start: start, End: end, Width: benchWidth, Tracks: ids}, &s); err != nil {
			return 0, 0, err
		}
		items := 0
		for _, ts := range s.Tracks {
			items += len(ts.Items)
		}
		return s.Res, items, nil
	})
	runtime.KeepAlive(x)
	return levels, err
}

// sweepLevels times benchQueries viewports [start, end) of [first, last]
// per zoom level with query, which returns the reply's resolution and
// item count: level 0 is the whole range, level benchLevels a window
// holding about one of n items per pixel (at least benchWidth ns), the
// levels between geometric steps, each viewport at a random position
// (rng streams seed, stream).
func sweepLevels(first, last trace.Time, n int64, seed, stream uint64, query func(start, end trace.Time) (res int64, items int, err error)) ([]benchLevel, error) {
	extent := float64(last-first) + 1
	minWin := max(extent*benchWidth/float64(n), benchWidth)
	ratio := math.Pow(minWin/extent, 1.0/benchLevels)
	rng := rand.New(rand.NewPCG(seed, stream))
	var levels []benchLevel
	for lv := 0; lv <= benchLevels; lv++ {
		win := int64(math.Max(1, extent*math.Pow(ratio, float64(lv))))
		l := benchLevel{Level: lv, WindowNS: win, Queries: benchQueries}
		times := make([]float64, 0, benchQueries)
		cpu := make([]float64, 0, benchQueries)
		starts := make([]trace.Time, 0, benchQueries)
		items := 0
		for range benchQueries {
			start := first
			if room := int64(last-first) + 1 - win; room > 0 {
				start += trace.Time(rng.Int64N(room + 1))
			}
			starts = append(starts, start)
			c0, cok := processCPU()
			t0 := time.Now()
			res, k, err := query(start, start+trace.Time(win))
			if err != nil {
				return nil, err
			}
			times = append(times, float64(time.Since(t0).Nanoseconds())/1e6)
			if c1, ok := processCPU(); ok && cok {
				cpu = append(cpu, float64((c1-c0).Nanoseconds())/1e6)
			}
			items += k
			l.ResNS = res
		}
		l.Items = float64(items) / benchQueries
		l.P50MS, l.P99MS, l.MaxMS = percentiles(times)
		if len(cpu) == len(times) {
			l.CPUP50MS, l.CPUP99MS, l.CPUMaxMS = percentiles(cpu)
		}
		times = times[:0]
		for _, start := range starts {
			t0 := time.Now()
			if _, _, err := query(start, start+trace.Time(win)); err != nil {
				return nil, err
			}
			times = append(times, float64(time.Since(t0).Nanoseconds())/1e6)
		}
		l.AgainP50MS, l.AgainP99MS, l.AgainMaxMS = percentiles(times)
		levels = append(levels, l)
	}
	return levels, nil
}

// percentiles returns the median, 99th percentile and maximum of ms.
func percentiles(ms []float64) (p50, p99, max float64) {
	slices.Sort(ms)
	return ms[len(ms)/2], ms[(len(ms)*99+99)/100-1], ms[len(ms)-1]
}

// procStatus returns the kB fields of /proc/self/status in bytes (empty
// where the file does not exist).
func procStatus() map[string]int64 {
	m := map[string]int64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return m
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 2 && string(f[1]) == "kB" {
			if n, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
				m[string(k)] = n << 10
			}
		}
	}
	return m
}
