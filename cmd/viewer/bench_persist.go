package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"viewer/render"
	"viewer/trace"
)

// benchWarm is the index file's part of `viewer bench`'s report: writing
// the built index to its file, then reopening it (a restart's warm open)
// to the first frame, with the resident memory at each step.
type benchWarm struct {
	IndexFile      string  `json:"index_file"`
	WriteSeconds   float64 `json:"write_seconds,omitempty"` // render.Index.WriteFile (0: the file was there)
	FileBytes      int64   `json:"file_bytes"`
	FileBytesPerEv float64 `json:"file_bytes_per_event"`
	// RSSBeforeBytes is VmRSS once the built index is closed and its
	// memory returned to the system (the process's base without one).
	RSSBeforeBytes     int64 `json:"rss_before_open_bytes"`
	RSSAnonBeforeBytes int64 `json:"rss_anon_before_open_bytes"`
	RSSFileBeforeBytes int64 `json:"rss_file_before_open_bytes"`
	// OpenSeconds is render.OpenFile: header, the CRC of every section,
	// the mapping and the directory; FirstFrameSeconds adds one query
	// of the whole trace over the query tracks.
	OpenSeconds       float64 `json:"open_seconds"`
	FirstFrameSeconds float64 `json:"first_frame_seconds"`
	// RSS after OpenFile and after the first frame: VmRSS, (VmRSS −
	// RSSBeforeBytes) per event, and its anonymous (heap) and
	// file-backed (mapped index pages, which the system maps by folios
	// of up to 1 MB) parts.
	RSSOpenBytes      int64   `json:"rss_after_open_bytes"`
	RSSOpenPerEv      float64 `json:"rss_after_open_bytes_per_event"`
	RSSAnonOpenBytes  int64   `json:"rss_anon_after_open_bytes"`
	RSSFileOpenBytes  int64   `json:"rss_file_after_open_bytes"`
	RSSFrameBytes     int64   `json:"rss_after_first_frame_bytes"`
	RSSFramePerEv     float64 `json:"rss_after_first_frame_bytes_per_event"`
	RSSAnonFrameBytes int64   `json:"rss_anon_after_first_frame_bytes"`
	RSSFileFrameBytes int64   `json:"rss_file_after_first_frame_bytes"`
	// After the sweep of Levels (what the views touched).
	RSSSweepBytes int64        `json:"rss_after_sweep_bytes"`
	RSSSweepPerEv float64      `json:"rss_after_sweep_bytes_per_event"`
	IndexBytes    int64        `json:"index_heap_bytes"` // render.Index.Bytes of the opened index
	Levels        []benchLevel `json:"levels"`
}

// benchIndexKey is the key of bench's index files: the source stands
// for the trace.
func benchIndexKey(source string) render.FileKey { return render.FileKey{Options: "bench " + source} }

// benchWriteAndReopen writes *px to name (a temporary file in dir when
// name is ""; removed afterwards), closes it, drops it (*px = nil, so
// that its memory is freed before the reopen is measured) and reopens
// the file.
func benchWriteAndReopen(ctx context.Context, px **render.Index, name, dir, source string, seed uint64) (*benchWarm, error) {
	x := *px
	keep := name != ""
	if !keep {
		f, err := os.CreateTemp(dir, "viewer-bench-*.index")
		if err != nil {
			return nil, err
		}
		f.Close()
		name = f.Name()
		defer os.Remove(name)
	}
	t0 := time.Now()
	if err := x.WriteFile(name, benchIndexKey(source)); err != nil {
		return nil, err
	}
	write := time.Since(t0).Seconds()
	x.Close()
	x, *px = nil, nil
	w, err := benchReopen(ctx, name, source, seed)
	if w != nil {
		w.WriteSeconds = write
	}
	return w, err
}

// benchReopen opens the index file name to the first frame and sweeps
// the zoom levels over it.
func benchReopen(ctx context.Context, name, source string, seed uint64) (*benchWarm, error) {
	runtime.GC()
	debug.FreeOSMemory()
	st := procStatus()
	w := &benchWarm{IndexFile: name, RSSBeforeBytes: st["VmRSS"], RSSAnonBeforeBytes: st["RssAnon"], RSSFileBeforeBytes: st["RssFile"]}
	if abs, err := filepath.Abs(name); err == nil {
		w.IndexFile = abs
	}
	if fi, err := os.Stat(name); err == nil {
		w.FileBytes = fi.Size()
	}
	t0 := time.Now()
	y, err := render.OpenFile(name, benchIndexKey(source))
	if err != nil {
		return nil, err
	}
	defer y.Close()
	w.OpenSeconds = time.Since(t0).Seconds()
	st = procStatus()
	w.RSSOpenBytes, w.RSSAnonOpenBytes, w.RSSFileOpenBytes = st["VmRSS"], st["RssAnon"], st["RssFile"]
	ids := busiest(y)
	first, last := y.Span()
	var s render.Slice
	if y.Events() > 0 {
		if err := y.QueryInto(ctx, render.Viewport{Start: first, End: last + 1, Width: benchWidth, Tracks: ids}, &s); err != nil {
			return nil, err
		}
	}
	w.FirstFrameSeconds = time.Since(t0).Seconds()
	st = procStatus()
	w.RSSFrameBytes, w.RSSAnonFrameBytes, w.RSSFileFrameBytes = st["VmRSS"], st["RssAnon"], st["RssFile"]
	w.IndexBytes = y.Bytes()
	n := float64(max(y.Events(), 1))
	w.FileBytesPerEv = float64(w.FileBytes) / n
	w.RSSOpenPerEv = float64(w.RSSOpenBytes-w.RSSBeforeBytes) / n
	w.RSSFramePerEv = float64(w.RSSFrameBytes-w.RSSBeforeBytes) / n
	if y.Events() > 0 {
		if w.Levels, err = sweep(ctx, y, ids, seed); err != nil {
			return nil, err
		}
	}
	w.RSSSweepBytes = procStatus()["VmRSS"]
	w.RSSSweepPerEv = float64(w.RSSSweepBytes-w.RSSBeforeBytes) / n
	return w, nil
}

// busiest returns the ids of the benchMaxTracks tracks with the most
// events, as a user would look at first.
func busiest(x *render.Index) []trace.TrackID {
	ids := x.Tracks()
	slices.SortStableFunc(ids, func(a, b trace.TrackID) int { return x.TrackEvents(b) - x.TrackEvents(a) })
	return ids[:min(len(ids), benchMaxTracks)]
}
