package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"viewer/trace"
)

// Traces referenced in place (`viewer serve --in-place FILE`): the
// library keeps only the entry (DIR/traces/ID/info.json, whose Path names
// the file), not a copy, so that a file of many gigabytes is not copied.
// The file is checked whenever it is opened: its size, modification time
// and a sample of its content (sampleHash) must be what they were when it
// was added, else it is refused as changed.

// ErrChanged is returned when a trace referenced in place has changed
// since it was added.
var ErrChanged = errors.New("the file changed since it was added to the library")

// sampleBytes is how much of each end of a file sampleHash reads.
const sampleBytes = 1 << 20

// sampleHash returns the SHA-256 of a file's size, its first and its
// last MiB: cheap for any size, and a change to the file's length or ends
// (where appends and rewrites show) changes it. A change only in the
// middle that keeps the size and the modification time goes unseen.
func sampleHash(f io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", size)
	for _, off := range []int64{0, max(0, size-sampleBytes)} {
		if _, err := io.Copy(h, io.NewSectionReader(f, off, min(sampleBytes, size-off))); err != nil {
			return "", err
		}
	}
	return "sample:" + hex.EncodeToString(h.Sum(nil)), nil
}

// AddInPlace adds the trace file name to the library without copying
// it: the entry refers to the file where it is.
func (l *Library) AddInPlace(name, format string) (Entry, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return Entry{}, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if !st.Mode().IsRegular() {
		return Entry{}, fmt.Errorf("%s is not a regular file", name)
	}
	sum, err := sampleHash(f, st.Size())
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		ID: uuid.New(), Name: cleanName(abs), Size: st.Size(), Format: format, SHA256: sum,
		Uploaded: time.Now().UTC().Truncate(time.Millisecond), Path: abs, ModTime: st.ModTime().UTC(),
	}
	stage, err := os.MkdirTemp(filepath.Join(l.dir, tmpDir), "inplace-")
	if err != nil {
		return Entry{}, err
	}
	defer func() {
		if stage != "" {
			os.RemoveAll(stage)
		}
	}()
	info, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return Entry{}, err
	}
	if err := writeFileSync(filepath.Join(stage, infoFile), info); err != nil {
		return Entry{}, err
	}
	if err := syncDir(stage); err != nil {
		return Entry{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.Rename(stage, l.traceDir(e.ID)); err != nil {
		return Entry{}, err
	}
	stage = ""
	if err := syncDir(filepath.Join(l.dir, tracesDir)); err != nil {
		return Entry{}, err
	}
	l.entries[e.ID] = e
	return e, nil
}

// openInPlace opens the file of an entry referenced in place, after
// checking that it has not changed.
func openInPlace(e Entry) (*os.File, error) {
	f, err := os.Open(e.Path)
	if err != nil {
		return nil, fmt.Errorf("the trace is read from %s: %w", e.Path, err)
	}
	st, err := f.Stat()
	if err == nil {
		var sum string
		switch {
		case st.Size() != e.Size:
			err = fmt.Errorf("%w: %s is %d bytes, it was %d; add it again", ErrChanged, e.Path, st.Size(), e.Size)
		case !st.ModTime().Equal(e.ModTime):
			err = fmt.Errorf("%w: %s was modified at %s; add it again", ErrChanged, e.Path, st.ModTime().UTC().Format(time.RFC3339))
		default:
			if sum, err = sampleHash(f, st.Size()); err == nil && sum != e.SHA256 {
				err = fmt.Errorf("%w: %s has other content; add it again", ErrChanged, e.Path)
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// AddInPlace adds a trace file to the library without copying it (see
// Library.AddInPlace) and starts indexing it. The file must be a trace
// as it is, not wrapped in zip, gzip or zstd.
func (s *Server) AddInPlace(name string) (Entry, error) {
	f, err := os.Open(name)
	if err != nil {
		return Entry{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return Entry{}, err
	}
	format, err := trace.Sniff(f, st.Size(), s.cfg.Formats)
	f.Close()
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w (a trace is opened in place only as it is: unwrap it first)", name, err)
	}
	e, err := s.lib.AddInPlace(name, format.Name())
	if err != nil {
		return Entry{}, err
	}
	s.ix.get(e)
	return e, nil
}
