package web

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// Bounds on what clients can make the server hold (issue 17).
const (
	// DefaultMaxUploads is the default Config.MaxUploads.
	DefaultMaxUploads = 50
	// DefaultUploadIdle is the default Config.UploadIdle.
	DefaultUploadIdle = 30 * time.Second
	// DefaultMinFreeDisk is the default Config.MinFreeDisk.
	DefaultMinFreeDisk = 64 << 20
	// uploadProgress is how many body bytes renew an upload's idle
	// deadline: a client that sends a byte now and then does not.
	uploadProgress = 16 << 10
)

// errDiskFull is the cause of a job or upload refused for want of disk
// space. Its message is what clients see.
var errDiskFull = errors.New("disk full: the server's data directory has no space left")

// freeBytes returns the bytes available to the server on dir's file
// system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// checkFree returns errDiskFull when dir's file system has less than
// need bytes available. A file system that cannot say passes.
func checkFree(dir string, need int64) error {
	free, err := freeBytes(dir)
	if err != nil || free >= need {
		return nil
	}
	return fmt.Errorf("%w (%s free, %s wanted)", errDiskFull, formatBytes(free), formatBytes(need))
}

// diskFull reports whether err says the disk (or the user's quota) is full.
func diskFull(err error) bool {
	return errors.Is(err, errDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// transient reports whether a failed index build may succeed when tried
// again without a change to the trace: the disk was full, the system was
// out of files or memory, an I/O error. A trace the reader refuses stays
// failed.
func transient(err error) bool {
	if diskFull(err) {
		return true
	}
	for _, e := range []error{syscall.EIO, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// publicError is the message of err for clients: a full disk is named as
// such, and file system errors lose their paths, which are the server's
// business.
func publicError(err error) string {
	if err == nil {
		return ""
	}
	if diskFull(err) {
		if errors.Is(err, errDiskFull) {
			return err.Error()
		}
		return errDiskFull.Error()
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Op + ": " + pe.Err.Error()
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}

// acquireUpload takes one of the upload slots, or writes 429 and returns
// false when all are taken.
func (s *Server) acquireUpload(w http.ResponseWriter, r *http.Request, page bool) (release func(), ok bool) {
	select {
	case s.uploads <- struct{}{}:
		return func() { <-s.uploads }, true
	default:
	}
	msg := fmt.Sprintf("the server is receiving %d uploads already; try again when one has finished", cap(s.uploads))
	w.Header().Set("Retry-After", "5")
	if page {
		s.errorPage(w, r, http.StatusTooManyRequests, msg)
	} else {
		writeError(w, http.StatusTooManyRequests, msg)
	}
	return nil, false
}

// errUploadStalled ends an upload whose body stopped arriving.
var errUploadStalled = errors.New("the upload stalled")

// idleBody reads a request body under an idle deadline: each time
// uploadProgress more bytes have arrived, the connection's read deadline
// moves idle into the future, so a stalled or trickling client is cut
// off while a slow but steady one is not.
type idleBody struct {
	r       io.Reader
	rc      *http.ResponseController
	idle    time.Duration
	pending int64 // bytes since the deadline was last renewed
	stalled bool
}

func newIdleBody(w http.ResponseWriter, r io.Reader, idle time.Duration) *idleBody {
	b := &idleBody{r: r, rc: http.NewResponseController(w), idle: idle}
	b.renew()
	return b
}

func (b *idleBody) renew() {
	b.pending = 0
	b.rc.SetReadDeadline(time.Now().Add(b.idle))
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.pending += int64(n)
	if b.pending >= uploadProgress {
		b.renew()
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.stalled = true
		err = errUploadStalled
	}
	return n, err
}

// done clears the deadline for the rest of the request.
func (b *idleBody) done() { b.rc.SetReadDeadline(time.Time{}) }

// sanitizeName replaces the characters of a file name that would mislead
// when shown: control characters and the bidirectional overrides and
// isolates that reorder text (a "gpj.exe" shown as "exe.jpg").
func sanitizeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r),
			r >= '\u202A' && r <= '\u202E', // LRE RLE PDF LRO RLO
			r >= '\u2066' && r <= '\u2069', // LRI RLI FSI PDI
			r == '\u200E', r == '\u200F', r == '\u061C':
			return '\uFFFD'
		}
		return r
	}, name)
}
