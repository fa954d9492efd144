package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ErrUnknownFormat is returned by [Open] when no format recognizes the file.
var ErrUnknownFormat = errors.New("trace: not a trace format this viewer knows")

// ErrUnsupported is wrapped by errors for a recognized format whose version
// or feature is not supported.
var ErrUnsupported = errors.New("unsupported")

// ErrTruncated is wrapped by the [*FormatError] a reader returns when the
// file ends before the trace does.
var ErrTruncated = errors.New("truncated")

// FormatError reports damaged or unexpected input at a byte offset.
type FormatError struct {
	Format string // the format's name, e.g. "nettrace"
	Off    int64  // byte offset in the file
	Msg    string // what is wrong, naming the offending value where useful
	Err    error  // ErrTruncated, ErrUnsupported or nil
}

func (e *FormatError) Error() string {
	s := e.Format + ": "
	if errors.Is(e.Err, ErrTruncated) {
		s += "truncated at byte " + strconv.FormatInt(e.Off, 10)
		if e.Msg != "" {
			s += ": " + e.Msg
		}
		return s
	}
	s += e.Msg + " at byte " + strconv.FormatInt(e.Off, 10)
	if e.Err != nil && !errors.Is(e.Err, ErrTruncated) && e.Err != ErrUnsupported {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// Format is one file format the viewer reads. Implementations are small
// stateless values, one per format package.
type Format interface {
	// Name is the format's short name ("nettrace", "cpel", "elog", "perf").
	Name() string
	// Match reports whether head, the first bytes of a file (up to
	// SniffLen), look like this format.
	Match(head []byte) bool
	// Open returns a reader for the file. Errors for a file that Match
	// accepted wrap ErrUnsupported or are *FormatError.
	Open(r io.ReaderAt, size int64) (Reader, error)
}

// SniffLen is how many leading bytes [Sniff] looks at.
const SniffLen = 64

// Sniff returns the first format in formats that recognizes r's leading bytes.
func Sniff(r io.ReaderAt, size int64, formats []Format) (Format, error) {
	n := int64(SniffLen)
	if size < n {
		n = size
	}
	head := make([]byte, n)
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, err
	}
	for _, f := range formats {
		if f.Match(head) {
			return f, nil
		}
	}
	if size == 0 {
		return nil, fmt.Errorf("%w (the file is empty)", ErrUnknownFormat)
	}
	show := head
	if len(show) > 16 {
		show = show[:16]
	}
	return nil, fmt.Errorf("%w (first bytes % x)", ErrUnknownFormat, show)
}

// Open sniffs the format of r and opens it with the matching format.
func Open(r io.ReaderAt, size int64, formats []Format) (Reader, error) {
	f, err := Sniff(r, size, formats)
	if err != nil {
		return nil, err
	}
	return f.Open(r, size)
}

// File is a [Reader] over a named file that [OpenFile] opened.
type File struct {
	Reader
	f *os.File
}

// OpenFile opens the named file and its trace reader. The caller closes
// the File when done.
func OpenFile(name string, formats []Format) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := Open(f, st.Size(), formats)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &File{Reader: r, f: f}, nil
}

// Close closes the underlying file.
func (f *File) Close() error { return f.f.Close() }
