package web

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"viewer/trace/export"
)

// The library's layout on disk:
//
//	DIR/traces/ID/trace       the uploaded trace, byte for byte; for an upload
//	                          wrapped in zip, gzip or zstd, the trace inside
//	DIR/traces/ID/info.json   Entry
//	DIR/traces/ID/stats.json  the index cache: export.Stats once indexed
//	DIR/tmp/                  uploads and deletions in progress
//
// A trace becomes visible by renaming its complete, fsynced directory from
// tmp/ into traces/, and disappears by renaming it back before removal, so
// a crash never leaves half a trace in the library. tmp/ is emptied when the
// library opens.
const (
	tracesDir = "traces"
	tmpDir    = "tmp"
	traceFile = "trace"
	infoFile  = "info.json"
	statsFile = "stats.json"
)

// ErrNotFound is returned for a trace id the library does not hold.
var ErrNotFound = errors.New("no such trace")

// Entry describes one stored trace.
type Entry struct {
	ID       uuid.UUID `json:"id"`
	Name     string    `json:"name"` // the uploaded file's name
	Size     int64     `json:"size"` // bytes of the stored trace
	Format   string    `json:"format"`
	SHA256   string    `json:"sha256"` // of the stored trace
	Uploaded time.Time `json:"uploaded"`
	// For a trace unwrapped from the upload: the wrapper ("zip", "gzip",
	// "zstd"), the zip entry and the upload's size.
	Wrapper     string `json:"wrapper,omitempty"`
	Member      string `json:"member,omitempty"`
	WrappedSize int64  `json:"wrapped_size,omitempty"`
	// Live says the trace is still being recorded (recording.go): it
	// grows, and Size and SHA256 are not known yet.
	Live bool `json:"live,omitempty"`
	// Path names the file of a trace referenced in place (inplace.go):
	// the library holds no copy. ModTime is the file's modification time
	// when it was added; SHA256 is then a sample hash ("sample:…").
	Path    string    `json:"path,omitempty"`
	ModTime time.Time `json:"mtime,omitzero"`
}

// Library is the trace store in a data directory. It is safe for
// concurrent use.
type Library struct {
	dir string
	log *slog.Logger

	// minFree is the disk space an upload must leave free to start.
	minFree int64

	mu      sync.Mutex
	entries map[uuid.UUID]Entry
	bySum   map[string]uuid.UUID
	live    map[uuid.UUID]*Recording
}

// OpenLibrary opens (creating if needed) the library in dir and loads its
// entries. Directories that do not hold a complete trace are skipped and
// logged.
func OpenLibrary(dir string, log *slog.Logger) (*Library, error) {
	for _, d := range []string{dir, filepath.Join(dir, tracesDir), filepath.Join(dir, tmpDir), filepath.Join(dir, liveDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	l := &Library{dir: dir, log: log, entries: map[uuid.UUID]Entry{}, bySum: map[string]uuid.UUID{}, live: map[uuid.UUID]*Recording{}}
	if err := l.clearTmp(); err != nil {
		return nil, err
	}
	if err := l.recoverLive(); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(filepath.Join(dir, tracesDir))
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		id, err := uuid.Parse(de.Name())
		if err != nil || id.String() != de.Name() {
			continue
		}
		l.clearStatsTemps(id)
		e, err := l.readEntry(id)
		if err != nil {
			log.Warn("skipping damaged library entry", "trace", de.Name(), "err", err)
			continue
		}
		l.entries[id] = e
		if e.Path == "" {
			l.bySum[e.SHA256] = id
		}
	}
	return l, nil
}

func (l *Library) clearTmp() error {
	des, err := os.ReadDir(filepath.Join(l.dir, tmpDir))
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(l.dir, tmpDir, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// clearStatsTemps removes the temporary files of SaveStats that a crash
// left in a trace's directory.
func (l *Library) clearStatsTemps(id uuid.UUID) {
	left, _ := filepath.Glob(filepath.Join(l.traceDir(id), ".stats-*"))
	for _, name := range left {
		if err := os.Remove(name); err != nil {
			l.log.Warn("removing a leftover index cache file", "trace", id, "err", err)
		}
	}
}

func (l *Library) traceDir(id uuid.UUID) string {
	return filepath.Join(l.dir, tracesDir, id.String())
}

func (l *Library) readEntry(id uuid.UUID) (Entry, error) {
	var e Entry
	b, err := os.ReadFile(filepath.Join(l.traceDir(id), infoFile))
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, err
	}
	if e.ID != id {
		return e, fmt.Errorf("%s names trace %s", infoFile, e.ID)
	}
	e.Name = cleanName(e.Name) // stored before names were sanitized
	if e.Path != "" {
		return e, nil // checked when opened
	}
	st, err := os.Stat(filepath.Join(l.traceDir(id), traceFile))
	if err != nil {
		return e, err
	}
	if st.Size() != e.Size {
		return e, fmt.Errorf("trace is %d bytes, %s says %d", st.Size(), infoFile, e.Size)
	}
	return e, nil
}

// List returns the library's entries, newest first.
func (l *Library) List() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Entry, 0, len(l.entries))
	for _, e := range l.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(b.Uploaded.Compare(a.Uploaded), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	return out
}

// Get returns the entry of a trace.
func (l *Library) Get(id uuid.UUID) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	return e, ok
}

// Open opens a stored trace file for reading.
func (l *Library) Open(id uuid.UUID) (*os.File, error) {
	e, ok := l.Get(id)
	if !ok {
		return nil, ErrNotFound
	}
	if e.Live {
		return os.Open(filepath.Join(l.dir, liveDir, id.String(), traceFile))
	}
	if e.Path != "" {
		return openInPlace(e)
	}
	return os.Open(filepath.Join(l.traceDir(id), traceFile))
}

// Upload is a complete upload, staged in the library's tmp directory,
// that a [Checker] inspects.
type Upload struct {
	File *os.File // the uploaded bytes
	Size int64

	stage string
	trace *os.File // the trace unwrapped from File by Replace
	size  int64
	sum   []byte
}

// Replace makes the library store, instead of the upload, the trace that
// write writes (the trace unwrapped from the upload), and returns that
// file and its size. The file is hashed as it is written: identical traces
// are stored once whatever they were wrapped in.
func (u *Upload) Replace(write func(w io.Writer) error) (*os.File, int64, error) {
	if u.trace != nil {
		return nil, 0, errors.New("the upload was already replaced")
	}
	f, err := os.OpenFile(filepath.Join(u.stage, unwrappedFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	if err := write(cw); err != nil {
		f.Close()
		return nil, 0, err
	}
	u.trace, u.size, u.sum = f, cw.n, h.Sum(nil)
	return f, cw.n, nil
}

// Checked is what a [Checker] found in an upload it accepts.
type Checked struct {
	Format  string // the trace format's name
	Wrapper string // with Upload.Replace: the wrapper the trace came in
	Member  string // the zip entry
}

// Checker inspects a complete upload before it is stored and says what it
// holds, or returns an error to refuse it. To store a trace unwrapped from
// the upload instead of the upload, it calls [Upload.Replace].
type Checker func(u *Upload) (Checked, error)

const unwrappedFile = "unwrapped"

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Add streams body into the library under name. check decides whether the
// file is kept, and may replace it with the trace unwrapped from it. A
// trace whose content the library already holds is not stored again: Add
// returns the existing entry and existing = true. On any error nothing is
// stored.
//
// Add refuses to start when the disk has less than the library's minimum
// free space, and its errors name a full disk as such (errDiskFull).
func (l *Library) Add(body io.Reader, name string, check Checker) (e Entry, existing bool, err error) {
	defer func() {
		if err != nil && diskFull(err) && !errors.Is(err, errDiskFull) {
			err = fmt.Errorf("%w: %w", errDiskFull, err)
		}
	}()
	if err := checkFree(filepath.Join(l.dir, tmpDir), l.minFree); err != nil {
		return Entry{}, false, err
	}
	stage, err := os.MkdirTemp(filepath.Join(l.dir, tmpDir), "upload-")
	if err != nil {
		return Entry{}, false, err
	}
	defer func() {
		if stage != "" {
			os.RemoveAll(stage)
		}
	}()
	f, err := os.OpenFile(filepath.Join(stage, traceFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Entry{}, false, err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), body)
	if err != nil {
		return Entry{}, false, err
	}
	u := &Upload{File: f, Size: size, stage: stage}
	defer func() {
		if u.trace != nil {
			u.trace.Close()
		}
	}()
	c, err := check(u)
	if err != nil {
		return Entry{}, false, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	e = Entry{
		ID:       uuid.New(),
		Name:     cleanName(name),
		Size:     size,
		Format:   c.Format,
		SHA256:   sum,
		Uploaded: time.Now().UTC().Truncate(time.Millisecond),
	}
	if u.trace != nil {
		e.Wrapper, e.Member, e.WrappedSize = c.Wrapper, c.Member, size
		e.Size, e.SHA256 = u.size, hex.EncodeToString(u.sum)
	}
	if e, ok := l.bySumLocked(e.SHA256); ok {
		return e, true, nil
	}
	if u.trace == nil {
		err = f.Sync()
	} else { // store the unwrapped trace in the upload's place
		err = u.trace.Sync()
		if cerr := u.trace.Close(); err == nil {
			err = cerr
		}
		u.trace = nil
		f.Close()
		if err == nil {
			err = os.Rename(filepath.Join(stage, unwrappedFile), filepath.Join(stage, traceFile))
		}
	}
	if err != nil {
		return Entry{}, false, err
	}
	info, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return Entry{}, false, err
	}
	if err := writeFileSync(filepath.Join(stage, infoFile), info); err != nil {
		return Entry{}, false, err
	}
	if err := syncDir(stage); err != nil {
		return Entry{}, false, err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.bySum[e.SHA256]; ok { // a twin finished while we wrote
		return l.entries[id], true, nil
	}
	if err := os.Rename(stage, l.traceDir(e.ID)); err != nil {
		return Entry{}, false, err
	}
	stage = ""
	if err := syncDir(filepath.Join(l.dir, tracesDir)); err != nil {
		return Entry{}, false, err
	}
	l.entries[e.ID] = e
	l.bySum[e.SHA256] = e.ID
	return e, false, nil
}

func (l *Library) bySumLocked(sum string) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.bySum[sum]
	if !ok {
		return Entry{}, false
	}
	return l.entries[id], true
}

// Delete removes a trace from the library.
func (l *Library) Delete(id uuid.UUID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	if !ok {
		return ErrNotFound
	}
	if e.Live {
		return ErrLive
	}
	grave := filepath.Join(l.dir, tmpDir, "deleted-"+id.String())
	if err := os.Rename(l.traceDir(id), grave); err != nil {
		return err
	}
	delete(l.entries, id)
	delete(l.bySum, e.SHA256)
	if err := syncDir(filepath.Join(l.dir, tracesDir)); err != nil {
		l.log.Warn("sync after delete", "trace", id, "err", err)
	}
	return os.RemoveAll(grave)
}

// SaveStats stores the index cache of a trace.
func (l *Library) SaveStats(id uuid.UUID, st export.Stats) error {
	if _, ok := l.Get(id); !ok {
		return ErrNotFound
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := l.traceDir(id)
	tmp, err := os.CreateTemp(dir, ".stats-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, statsFile)); err != nil {
		return err
	}
	return syncDir(dir)
}

// Stats returns the cached statistics of a trace, if it was indexed.
func (l *Library) Stats(id uuid.UUID) (export.Stats, bool) {
	var st export.Stats
	b, err := os.ReadFile(filepath.Join(l.traceDir(id), statsFile))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("reading index cache", "trace", id, "err", err)
		}
		return st, false
	}
	if err := json.Unmarshal(b, &st); err != nil {
		l.log.Warn("damaged index cache", "trace", id, "err", err)
		return st, false
	}
	return st, true
}

// MaxNameLen bounds the stored original file name.
const MaxNameLen = 255

// cleanName keeps the base name of an uploaded file, valid UTF-8, short,
// and without control or bidirectional override characters.
func cleanName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if len(name) > MaxNameLen {
		name = name[:MaxNameLen]
	}
	name = sanitizeName(strings.ToValidUTF8(name, "\uFFFD"))
	if name == "" || name == "." || name == ".." {
		name = "upload"
	}
	return name
}

func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
