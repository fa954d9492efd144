package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/trace/follow"
)

// A live trace is recorded into DIR/live/ID/ (trace and info.json, the
// Entry with Live set) while it grows, and moved into DIR/traces/ID/ when
// its source ends. A crash leaves the directory in live/: the library
// stores what it holds when it next opens, as a trace cut short.
const liveDir = "live"

// ErrLive is returned for an operation a live trace refuses until its
// source has ended.
var ErrLive = errors.New("the trace is live: stop it first")

// Recording is a trace being streamed into the library: listed, opened
// and indexed while it grows, and an ordinary stored trace once
// [Recording.Finish] has been called. Write and Finish are called from
// one goroutine; the other methods from any.
type Recording struct {
	l   *Library
	id  uuid.UUID
	dir string
	f   *os.File
	w   *follow.Writer
	h   hash.Hash

	detect func(r io.ReaderAt, size int64) string

	mu       sync.Mutex
	finished bool
}

// Record starts a live trace named name that may grow to limit bytes;
// detect, when not nil, names the format of a recording whose format was
// not set when it finishes (a short stream can end before its index
// looked at it).
func (l *Library) Record(name string, limit int64, detect func(r io.ReaderAt, size int64) string) (*Recording, error) {
	if err := checkFree(filepath.Join(l.dir, tmpDir), l.minFree); err != nil {
		return nil, err
	}
	e := Entry{ID: uuid.New(), Name: cleanName(name), Live: true, Uploaded: time.Now().UTC().Truncate(time.Millisecond)}
	dir := filepath.Join(l.dir, liveDir, e.ID.String())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, traceFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Recording{l: l, id: e.ID, dir: dir, f: f, w: follow.NewWriter(f, limit), h: sha256.New(), detect: detect}
	if err := r.writeInfo(e); err != nil {
		f.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	l.mu.Lock()
	l.entries[e.ID] = e
	l.live[e.ID] = r
	l.mu.Unlock()
	return r, nil
}

// ID returns the trace's id.
func (r *Recording) ID() uuid.UUID { return r.id }

// File returns the growing view of the bytes recorded so far, read
// through rf (the trace opened with Library.Open: the recording closes
// its own file when it is stored).
func (r *Recording) File(rf io.ReaderAt) *follow.File { return r.w.File().On(rf) }

// Write appends p to the trace.
func (r *Recording) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	r.h.Write(p[:n])
	return n, err
}

// SetFormat records the trace's format once its first bytes told it.
func (r *Recording) SetFormat(format string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return nil // stored already, its format detected by Finish
	}
	r.l.mu.Lock()
	e := r.l.entries[r.id]
	e.Format = format
	r.l.entries[r.id] = e
	r.l.mu.Unlock()
	return r.writeInfo(e)
}

// writeInfo replaces the recording's info.json (temp file, fsync, rename).
func (r *Recording) writeInfo(e Entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(r.dir, ".info")
	os.Remove(tmp)
	if err := writeFileSync(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, infoFile)); err != nil {
		return err
	}
	return syncDir(r.dir)
}

// Finish ends the recording (cause, when not nil, says why its source
// stopped early) and stores it as an ordinary trace under the same id. A
// recording of no bytes, or of bytes in no known format, is discarded:
// Finish then returns ErrNotFound.
func (r *Recording) Finish(cause error) (Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		e, ok := r.l.Get(r.id)
		if !ok {
			return e, ErrNotFound
		}
		return e, nil
	}
	r.finished = true
	r.w.File().End(cause)
	e, _ := r.l.Get(r.id)
	e.Live, e.Size, e.SHA256 = false, r.w.Size(), hex.EncodeToString(r.h.Sum(nil))
	if e.Format == "" && e.Size > 0 && r.detect != nil {
		e.Format = r.detect(r.f, e.Size)
	}
	err := r.f.Sync()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && (e.Size == 0 || e.Format == "") {
		r.l.mu.Lock()
		delete(r.l.entries, r.id)
		delete(r.l.live, r.id)
		r.l.mu.Unlock()
		os.RemoveAll(r.dir)
		return Entry{}, ErrNotFound
	}
	if err == nil {
		err = r.l.store(r.dir, e)
	}
	return e, err
}

// store moves a finished recording's directory into the library under
// its entry's id, with the entry as its info.json.
func (l *Library) store(dir string, e Entry) error {
	info, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".info")
	os.Remove(tmp)
	if err := writeFileSync(tmp, info); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, infoFile)); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.Rename(dir, l.traceDir(e.ID)); err != nil {
		return err
	}
	if err := syncDir(filepath.Join(l.dir, tracesDir)); err != nil {
		return err
	}
	l.entries[e.ID] = e
	delete(l.live, e.ID)
	if _, ok := l.bySum[e.SHA256]; !ok {
		l.bySum[e.SHA256] = e.ID
	}
	return nil
}

// recover stores the recordings a crash left in live/: what they hold,
// as traces cut short. Those of no bytes or no known format are removed.
func (l *Library) recoverLive() error {
	des, err := os.ReadDir(filepath.Join(l.dir, liveDir))
	if err != nil {
		return err
	}
	for _, de := range des {
		dir := filepath.Join(l.dir, liveDir, de.Name())
		if err := l.recoverOne(dir); err != nil {
			l.log.Warn("discarding an interrupted live trace", "dir", dir, "err", err)
			os.RemoveAll(dir)
		}
	}
	return nil
}

func (l *Library) recoverOne(dir string) error {
	var e Entry
	b, err := os.ReadFile(filepath.Join(dir, infoFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	if e.ID.String() != filepath.Base(dir) {
		return errors.New("info.json names another trace")
	}
	f, err := os.Open(filepath.Join(dir, traceFile))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n == 0 || e.Format == "" {
		return errors.New("nothing was recorded")
	}
	e.Live, e.Size, e.SHA256 = false, n, hex.EncodeToString(h.Sum(nil))
	e.Name = cleanName(e.Name)
	l.log.Info("storing a live trace interrupted by a restart", "trace", e.ID, "bytes", n)
	return l.store(dir, e)
}

// recording returns the Recording of a live trace.
func (l *Library) recording(id uuid.UUID) (*Recording, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.live[id]
	return r, ok
}
