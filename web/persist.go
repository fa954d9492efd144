package web

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"viewer/render"
)

// Persistent indexes (issue #21): once a stored trace is indexed, its
// index is written next to it (DIR/traces/ID/index, render.WriteFile) in
// the background, not delaying "ready". When the trace is opened again
// (after a restart, or after its index was evicted) buildStored first
// opens that file: the trace is ready at once, its viewport queries
// answered from the mapped file, while a background pass reads the trace
// once with its reader alone (render.Index.Attach: symbols, derived
// tracks) to make details and search work. A file that does not open
// (damaged, written for another trace or other options, or by another
// version) is logged, removed and the trace indexed as before; so is a
// file whose reader pass fails. The file is written to a temporary name
// and renamed: a crash while writing leaves a temporary file, removed
// the next time the trace is opened.

// indexFileName is the index file's name in a trace's directory.
const indexFileName = "index"

// persister tracks the background work on index files (writes and
// reader passes), so that the server waits for it when it closes.
type persister struct {
	wg sync.WaitGroup
	// passGate, when not nil (tests only), holds every reader pass of a
	// reopened index until it is closed.
	passGate chan struct{}
}

// wait waits for the background work started so far.
func (p *persister) wait() { p.wg.Wait() }

// indexFile returns where a trace's index file lives and the key it is
// written and opened with; ok is false for a trace without a known sum
// (a live one).
func (ix *indexer) indexFile(e Entry) (name string, key render.FileKey, ok bool) {
	sum, err := hex.DecodeString(e.SHA256)
	if e.Live || err != nil || len(sum) != len(key.SHA256) {
		return "", key, false
	}
	key.Size = e.Size
	copy(key.SHA256[:], sum)
	key.Options = fmt.Sprintf("symbols=%t derive=%t", ix.symbols != nil, ix.derive != nil)
	return filepath.Join(ix.lib.traceDir(e.ID), indexFileName), key, true
}

// openStored opens a stored trace's index file, when it has a good one,
// and starts the reader pass in the background; ok is false when the
// trace must be indexed from its file (the index file was missing,
// damaged or out of date, and is removed).
func (ix *indexer) openStored(ctx context.Context, j *job, e Entry) (idx *index, f *os.File, ok bool) {
	name, key, ok := ix.indexFile(e)
	if !ok {
		return nil, nil, false
	}
	// A crash while writing leaves temporary files (render.WriteFile).
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(name), ".index-*.tmp"))
	for _, t := range left {
		os.Remove(t)
	}
	x, err := render.OpenFile(name, key)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			ix.log.Warn("index file not used: indexing the trace again", "trace", e.ID, "err", err)
			os.Remove(name)
		}
		return nil, nil, false
	}
	f, err = ix.lib.Open(e.ID)
	if err != nil {
		x.Close()
		return nil, nil, false
	}
	format := formatByName(ix.formats, e.Format)
	if format == nil {
		x.Close()
		f.Close()
		return nil, nil, false
	}
	r, err := format.Open(f, e.Size)
	if err != nil {
		x.Close()
		f.Close()
		return nil, nil, false
	}
	closer, _ := r.(io.Closer)
	idx = &index{x: x, r: r, stats: capStats(x.Stats()), types: x.TypeEvents(), format: closer}
	// The pass holds the index in memory: closing it would fail the
	// pass, which then removes a good file.
	ix.mu.Lock()
	j.refs++
	ix.mu.Unlock()
	ix.persist.wg.Go(func() {
		defer ix.unref(j)
		if ix.persist.passGate != nil {
			<-ix.persist.passGate
		}
		if err := ix.acquireBuild(ctx); err != nil {
			return
		}
		defer func() { <-ix.sem }()
		err := x.Attach(ctx, r, ix.options(r))
		if err != nil && ctx.Err() == nil {
			ix.log.Warn("reading the trace of an index file failed; the index file is removed", "trace", e.ID, "err", err)
			os.Remove(name)
		}
	})
	ix.log.Info("index opened from its file", "trace", e.ID, "events", x.Events())
	return idx, f, true
}

// saveIndex writes job j's built index to the trace's index file in the
// background, holding the index meanwhile (eviction or a delete would
// close it under the writer). A trace the disk has no room for keeps no
// file.
func (ix *indexer) saveIndex(j *job, e Entry, x *render.Index) {
	name, key, ok := ix.indexFile(e)
	if !ok {
		return
	}
	// About 24 bytes per event (render's Layout comment): keep
	// --min-free on top.
	if err := checkFree(filepath.Dir(name), ix.minFree+32*x.Events()); err != nil {
		ix.log.Info("no index file written", "trace", e.ID, "err", err)
		return
	}
	ix.mu.Lock()
	j.refs++
	ix.mu.Unlock()
	ix.persist.wg.Go(func() {
		defer ix.unref(j)
		if err := x.WriteFile(name, key); err != nil {
			ix.log.Warn("writing the index file", "trace", e.ID, "err", err)
		}
	})
}
