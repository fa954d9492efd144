// Package follow reads a trace while it is still being written: a [File]
// is an io.ReaderAt over bytes that keep arriving (a recording streamed
// into the library, or a file another program appends to), whose reads
// past the end wait for more instead of failing, until the source ends.
//
// The readers in trace/ need no change to read a growing file, with two
// courtesies: a reader that reads ahead asks [Available] first, so that it
// does not wait for bytes it does not need yet, and whoever consumes the
// events can hook the wait ([File.OnWait]) to publish what it has before
// the reading goroutine blocks.
package follow

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// ErrLimit ends a source that grew past its File's limit.
var ErrLimit = errors.New("the trace grew past the size limit")

// File is a growing io.ReaderAt. The zero value is not usable; see [New].
// It is safe for concurrent use.
type File struct {
	r    io.ReaderAt
	hook func(wait func()) // guarded by state.mu
	*state
}

// state is what the Files over one source share.
type state struct {
	limit int64

	mu      sync.Mutex
	size    int64         // bytes readable now
	ended   bool          // no more bytes will come
	err     error         // why the source ended; nil for a clean end
	changed chan struct{} // closed and replaced when size or ended change
}

// New returns a File over r, of which size bytes are readable now. The
// source may grow to limit bytes; growing further ends it with ErrLimit.
func New(r io.ReaderAt, size, limit int64) *File {
	return &File{r: r, state: &state{size: size, limit: limit, changed: make(chan struct{})}}
}

// On returns a File that reads the same source through r (another open
// file of the same bytes, which its user may close independently), with
// no wait hook of its own.
func (f *File) On(r io.ReaderAt) *File {
	return &File{r: r, state: f.state}
}

// Limit returns the most bytes the source may grow to: what a reader
// should take as the file's size.
func (f *File) Limit() int64 { return f.limit }

// Available returns how many bytes can be read now without waiting.
func (f *File) Available() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size
}

// Ended reports whether the source has ended, and the error that ended
// it (nil for a clean end).
func (f *File) Ended() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended, f.err
}

// Changed returns a channel closed when more bytes arrive or the source
// ends.
func (f *File) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Grow says that the first size bytes are readable. Sizes never shrink;
// a size past the limit ends the source with ErrLimit.
func (f *File) Grow(size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || size <= f.size {
		return
	}
	if size > f.limit {
		size, f.ended, f.err = f.limit, true, ErrLimit
	}
	f.size = size
	f.notifyLocked()
}

// End says that no more bytes will come; err, when not nil, says why the
// source stopped early. Reads past the end then return io.EOF.
func (f *File) End(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.ended, f.err = true, err
	f.notifyLocked()
}

func (f *File) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// OnWait sets the function a read calls, on the reading goroutine, when
// it must wait for bytes: hook calls wait, which returns when more bytes
// have arrived or the source has ended. Without a hook a read just waits.
func (f *File) OnWait(hook func(wait func())) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// ReadAt reads len(p) bytes at off, waiting until they have been written
// or the source has ended; past the end it returns the bytes there are
// and io.EOF.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("follow: negative offset")
	}
	end := off + int64(len(p))
	for {
		f.mu.Lock()
		size, ended, changed, hook := f.size, f.ended, f.changed, f.hook
		f.mu.Unlock()
		if end <= size {
			return f.r.ReadAt(p, off)
		}
		if ended {
			if off >= size {
				return 0, io.EOF
			}
			n, err := f.r.ReadAt(p[:size-off], off)
			if err == nil {
				err = io.EOF
			}
			return n, err
		}
		wait := func() { <-changed }
		if hook != nil {
			hook(wait)
		} else {
			wait()
		}
	}
}

// Writer appends a stream to a file and grows the File that reads it:
// the library's side of a recording streamed into it.
type Writer struct {
	w    *os.File
	n    int64
	file *File
}

// NewWriter returns a Writer appending to w (empty), read back through a
// File of the given limit.
func NewWriter(w *os.File, limit int64) *Writer {
	return &Writer{w: w, file: New(w, 0, limit)}
}

// File returns the growing view of the bytes written.
func (w *Writer) File() *File { return w.file }

// Write appends p and makes it readable. Past the limit it writes nothing
// and returns ErrLimit.
func (w *Writer) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.file.limit {
		w.file.End(ErrLimit)
		return 0, ErrLimit
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	w.file.Grow(w.n)
	return n, err
}

// Size returns the bytes written.
func (w *Writer) Size() int64 { return w.n }

// Poll follows a file another program appends to: it grows f to the
// file's size every interval until ctx ends, then ends f (cleanly: the
// user stopped following). A file that shrinks or disappears ends f with
// an error.
func Poll(ctx context.Context, name string, f *File, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fi, err := os.Stat(name)
		if err != nil {
			f.End(err)
			return
		}
		if fi.Size() < f.Available() {
			f.End(errors.New("follow: " + name + " shrank: it was rewritten, not appended to"))
			return
		}
		f.Grow(fi.Size())
		if done, _ := f.Ended(); done {
			return
		}
		select {
		case <-ctx.Done():
			f.End(nil)
			return
		case <-t.C:
		}
	}
}

// Reader returns a reader of f's bytes from the start. Unlike ReadAt, its
// Read returns the bytes that have arrived as soon as there are any; it
// waits only when there are none, and returns io.EOF at the end (or the
// error that ended the source).
func (f *File) Reader() io.Reader { return &reader{f: f} }

type reader struct {
	f   *File
	off int64
}

func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		r.f.mu.Lock()
		size, ended, err, changed := r.f.size, r.f.ended, r.f.err, r.f.changed
		r.f.mu.Unlock()
		if size > r.off {
			n, rerr := r.f.r.ReadAt(p[:min(int64(len(p)), size-r.off)], r.off)
			r.off += int64(n)
			if rerr == io.EOF && n > 0 {
				rerr = nil
			}
			return n, rerr
		}
		if ended {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		<-changed
	}
}
