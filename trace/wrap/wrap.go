// Package wrap opens traces that arrive wrapped: in a zip archive (how
// PerfView's test inputs and many bug reports ship them), gzip-compressed
// or zstd-compressed. Wrappers are recognized by their magic bytes, never by
// the file name.
//
// The trace readers need an io.ReaderAt of known size, so a wrapped trace
// is decompressed, streaming, into a file (a temporary one for [OpenFile],
// the library's staging file for uploads) and opened from there; the
// decompressed trace is never held in memory. [Limits] bound what a
// wrapper may expand to, so that a zip bomb is refused with an error
// instead of filling the disk.
//
// One layer is unwrapped: a zip of gzip files or a .tar.gz is refused with
// a message saying so.
package wrap

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"viewer/trace"
)

// The wrappers this package opens, as [Detect] and [Info] name them.
const (
	Zip  = "zip"
	Gzip = "gzip"
	Zstd = "zstd"
)

// Limits on unwrapping, in the spirit of trace/perf's MaxDecompressed and
// MaxRatio for perf's own COMPRESSED records.
const (
	// MaxSize is the default cap on a trace's decompressed size.
	MaxSize int64 = 4 << 30
	// MaxRatio is the default cap on decompressed bytes per compressed
	// byte. Real traces compress 2 to 20 times (the 62 MB netperf in
	// PerfView's tests zips to 3.7 MB); deflate bombs reach 1032, zstd
	// bombs far more.
	MaxRatio = 256
	// RatioSlack is how many bytes any wrapper may expand to regardless
	// of the ratio, so that small, very regular files open.
	RatioSlack = 1 << 20
	// MaxWindow is the largest zstd window accepted: what zstd --long
	// (27) and --ultra -22 use; larger windows cost as much memory.
	MaxWindow = 128 << 20
	// MaxDirectory bounds the bytes of a zip's central directory read
	// into memory (about 200,000 entries), MaxEntries the entries whose
	// first bytes are examined.
	MaxDirectory = 16 << 20
	MaxEntries   = 10000
	// headLen is how many leading decompressed bytes are examined: enough
	// for every trace format's magic and a tar header's "ustar".
	headLen = 512
)

// ErrLimit is wrapped by the errors for a wrapper that expands beyond
// [Limits].
var ErrLimit = errors.New("over the unwrapping limit")

// kindError is an error with its own message that errors.Is kind.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func errorOf(kind error, format string, args ...any) error {
	return &kindError{fmt.Sprintf(format, args...), kind}
}

// ErrChoice is wrapped by the error for a zip that holds several traces
// when no member was named; the error is a [*ChoiceError].
var ErrChoice = errors.New("several traces")

// Limits bound the unwrapped trace. Zero fields take the defaults
// [MaxSize] and [MaxRatio].
type Limits struct {
	MaxSize  int64 // decompressed bytes
	MaxRatio int64 // decompressed bytes per compressed byte (plus RatioSlack)
}

func (l Limits) withDefaults() Limits {
	if l.MaxSize <= 0 {
		l.MaxSize = MaxSize
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = MaxRatio
	}
	return l
}

// Detect returns the wrapper whose magic bytes head starts with ([Zip],
// [Gzip] or [Zstd]), or "".
func Detect(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return Zip // a local file header; an empty archive's end record
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return Gzip
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd
	}
	return ""
}

// Info says what [Unwrap] found.
type Info struct {
	Wrapper string // Zip, Gzip or Zstd
	Member  string // the zip entry the trace came from
	Size    int64  // bytes of the unwrapped trace
}

// ChoiceError is the error for a zip that holds several traces.
type ChoiceError struct {
	Members []string // the entries that look like traces
}

func (e *ChoiceError) Error() string {
	return "the zip holds " + strconv.Itoa(len(e.Members)) + " traces (" + listNames(e.Members) + ")"
}

func (e *ChoiceError) Unwrap() error { return ErrChoice }

// Unwrap decompresses the trace inside the wrapper r (size bytes) into w
// and reports what it unwrapped. For a zip, member names the entry to
// unwrap; when it is empty, the one entry whose first bytes one of formats
// recognizes is taken, and several such entries are a [*ChoiceError]. For
// gzip and zstd, member must be empty. The first decompressed bytes must be
// a trace format of formats (errors.Is [trace.ErrUnknownFormat] when not);
// a trace larger than lim allows is refused (errors.Is [ErrLimit]) after
// at most the limit was written to w. ctx stops the work.
func Unwrap(ctx context.Context, r io.ReaderAt, size int64, member string, formats []trace.Format, lim Limits, w io.Writer) (Info, error) {
	lim = lim.withDefaults()
	head := make([]byte, min(size, headLen))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Info{}, err
	}
	kind := Detect(head)
	switch kind {
	case Zip:
		return unzip(ctx, r, size, member, formats, lim, w)
	case Gzip, Zstd:
		if member != "" {
			return Info{}, fmt.Errorf("%s: a %s file holds one trace, not entries like %q", kind, kind, member)
		}
		in := &countReader{r: io.NewSectionReader(r, 0, size)}
		var dec io.Reader
		if kind == Gzip {
			zr, err := gzip.NewReader(in)
			if err != nil {
				return Info{}, readError(kind, kind, err)
			}
			dec = zr
		} else {
			zr, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxWindow), zstd.WithDecoderMaxMemory(uint64(lim.MaxSize)))
			if err != nil {
				return Info{}, fmt.Errorf("zstd: %w", err)
			}
			defer zr.Close()
			dec = zr
		}
		n, err := copyTrace(ctx, kind, kind, dec, func() int64 { return in.n }, formats, lim, w)
		if err != nil {
			return Info{}, err
		}
		return Info{Wrapper: kind, Size: n}, nil
	}
	return Info{}, fmt.Errorf("%w (not a zip, gzip or zstd file either)", trace.ErrUnknownFormat)
}

// unzip unwraps one entry of a zip archive.
func unzip(ctx context.Context, r io.ReaderAt, size int64, member string, formats []trace.Format, lim Limits, w io.Writer) (Info, error) {
	// The central directory is read into memory whole: bound it.
	br := &budgetReaderAt{r: r, left: MaxDirectory + 64<<10}
	zr, err := zip.NewReader(br, size)
	if errors.Is(err, errBudget) {
		return Info{}, errorOf(ErrLimit, "zip: the archive's directory is larger than %s; extract the trace yourself", formatBytes(MaxDirectory))
	}
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are only compared, never used as paths
		return Info{}, fmt.Errorf("zip: %w", err)
	}
	br.left = -1                                       // entries are read through it without a budget
	zr.RegisterDecompressor(93, zstdDecompressor(lim)) // zip's zstd method
	var files []*zip.File
	for _, f := range zr.File {
		if !f.Mode().IsDir() && !strings.HasSuffix(f.Name, "/") {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return Info{}, errorOf(trace.ErrUnknownFormat, "zip: the archive holds no files")
	}
	if len(files) > MaxEntries {
		return Info{}, errorOf(ErrLimit, "zip: the archive holds %d files; at most %d are examined: extract the trace yourself", len(files), MaxEntries)
	}
	var pick *zip.File
	if member != "" {
		for _, f := range files {
			if f.Name == member {
				pick = f
				break
			}
		}
		if pick == nil {
			return Info{}, fmt.Errorf("zip: no entry %q; the archive holds %s", member, listNames(names(files)))
		}
	} else {
		var traces []*zip.File
		var other []string
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return Info{}, err
			}
			ok, why := looksLikeTrace(f, formats)
			if ok {
				traces = append(traces, f)
			} else {
				other = append(other, strconv.Quote(f.Name)+" "+why)
			}
		}
		switch len(traces) {
		case 0:
			return Info{}, errorOf(trace.ErrUnknownFormat, "zip: no entry is a trace format this viewer knows: %s", listOf(other))
		case 1:
			pick = traces[0]
		default:
			return Info{}, &ChoiceError{Members: names(traces)}
		}
	}
	what := "zip entry " + strconv.Quote(pick.Name)
	if pick.Flags&1 != 0 {
		return Info{}, fmt.Errorf("%s is encrypted", what)
	}
	if pick.UncompressedSize64 > uint64(lim.MaxSize) {
		return Info{}, errorOf(ErrLimit, "%s is %s decompressed, more than the unwrapping limit of %s; extract it yourself", what, formatBytes(int64(min(pick.UncompressedSize64, 1<<62))), formatBytes(lim.MaxSize))
	}
	rc, err := pick.Open()
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", what, zipOpenError(pick, err))
	}
	defer rc.Close()
	// archive/zip reads at most CompressedSize64 bytes for the entry, and
	// no more than the file holds whatever the directory claims.
	compressed := min(int64(min(pick.CompressedSize64, 1<<62)), size)
	n, err := copyTrace(ctx, Zip, what, rc, func() int64 { return compressed }, formats, lim, w)
	if err != nil {
		return Info{}, err
	}
	return Info{Wrapper: Zip, Member: pick.Name, Size: n}, nil
}

// looksLikeTrace reports whether a zip entry's first bytes are a trace
// format, and if not, a parenthesized word on what it is.
func looksLikeTrace(f *zip.File, formats []trace.Format) (bool, string) {
	if f.Flags&1 != 0 {
		return false, "(encrypted)"
	}
	rc, err := f.Open()
	if err != nil {
		return false, "(" + zipOpenError(f, err).Error() + ")"
	}
	defer rc.Close()
	head := make([]byte, headLen)
	n, err := io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, "(unreadable: " + err.Error() + ")"
	}
	head = head[:n]
	if _, err := trace.Sniff(bytes.NewReader(head), int64(n), formats); err != nil {
		return false, "(" + kindOf(head) + ")"
	}
	return true, ""
}

func zipOpenError(f *zip.File, err error) error {
	if errors.Is(err, zip.ErrAlgorithm) {
		m := "compression method " + strconv.Itoa(int(f.Method))
		if f.Method == 9 {
			m += " (Deflate64)"
		}
		return errors.New(m + " is not supported; re-zip it with Deflate or extract the trace yourself")
	}
	return err
}

// kindOf names the kind of file whose first bytes are head, for errors.
func kindOf(head []byte) string {
	switch {
	case len(head) == 0:
		return "empty"
	case Detect(head) != "":
		return "a " + Detect(head) + " file: only one layer of compression is unwrapped"
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return "a tar archive: extract the trace from it first"
	}
	show := head[:min(len(head), 16)]
	return fmt.Sprintf("first bytes % x", show)
}

// copyTrace checks that the first bytes of dec are a trace, then copies
// dec to w within lim. in returns the compressed bytes consumed so far.
func copyTrace(ctx context.Context, kind, what string, dec io.Reader, in func() int64, formats []trace.Format, lim Limits, w io.Writer) (int64, error) {
	br := bufio.NewReaderSize(dec, 64<<10)
	head, err := br.Peek(headLen)
	if err != nil && err != io.EOF { // io.EOF: a file shorter than headLen
		return 0, readError(kind, what, err)
	}
	if _, err := trace.Sniff(bytes.NewReader(head), int64(len(head)), formats); err != nil {
		if errors.Is(err, trace.ErrUnknownFormat) {
			return 0, errorOf(trace.ErrUnknownFormat, "%s: the file inside is not a trace format this viewer knows (%s)", what, kindOf(head))
		}
		return 0, err
	}
	lw := &limitWriter{ctx: ctx, w: w, in: in, lim: lim, what: what}
	buf := make([]byte, 1<<20)
	n, err := io.CopyBuffer(lw, br, buf)
	if err != nil {
		if lw.err != nil {
			return n, lw.err
		}
		if werr := lw.werr; werr != nil {
			return n, werr
		}
		return n, readError(kind, what, err)
	}
	return n, nil
}

func readError(kind, what string, err error) error {
	switch {
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return errorOf(ErrLimit, "%s: the file needs a zstd window larger than %s; recompress it without --long=28 or more", what, formatBytes(MaxWindow))
	case err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%s: the compressed data is cut short", what)
	}
	// what names the wrapper already: drop the decompressor's own prefix.
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), kind+": "), "flate: ")
	return &kindError{what + ": " + msg, err}
}

// limitWriter passes writes to w until the total exceeds lim, and checks
// ctx between writes.
type limitWriter struct {
	ctx  context.Context
	w    io.Writer
	in   func() int64
	lim  Limits
	what string
	n    int64
	err  error // a limit or cancellation
	werr error // from w
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		l.err = err
		return 0, err
	}
	n := l.n + int64(len(p))
	switch in := l.in(); {
	case n > l.lim.MaxSize:
		l.err = errorOf(ErrLimit, "%s: the trace inside is larger than %s, the unwrapping limit; extract it yourself", l.what, formatBytes(l.lim.MaxSize))
	case n > l.lim.MaxRatio*in+RatioSlack:
		l.err = errorOf(ErrLimit, "%s: it expands more than %d times (to over %d bytes from %d), refused as a likely decompression bomb", l.what, l.lim.MaxRatio, n, in)
	}
	if l.err != nil {
		return 0, l.err
	}
	m, err := l.w.Write(p)
	l.n += int64(m)
	if err != nil {
		l.werr = err
	}
	return m, err
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

var errBudget = errors.New("read budget exhausted")

// budgetReaderAt fails reads once left bytes were read; left < 0 is no
// budget.
type budgetReaderAt struct {
	r    io.ReaderAt
	left int64
}

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if b.left >= 0 {
		if int64(len(p)) > b.left {
			return 0, errBudget
		}
		b.left -= int64(len(p))
	}
	return b.r.ReadAt(p, off)
}

// zstdDecompressor decompresses zip entries of method 93 with the same
// bounds as a .zst file.
func zstdDecompressor(lim Limits) zip.Decompressor {
	return func(r io.Reader) io.ReadCloser {
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxWindow), zstd.WithDecoderMaxMemory(uint64(lim.MaxSize)))
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return d.IOReadCloser()
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func names(files []*zip.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

// listNames quotes up to ten names.
func listNames(ns []string) string {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = strconv.Quote(n)
	}
	return listOf(q)
}

func listOf(items []string) string {
	const most = 10
	if len(items) > most {
		return strings.Join(items[:most], ", ") + " and " + strconv.Itoa(len(items)-most) + " more"
	}
	return strings.Join(items, ", ")
}

// formatBytes writes n in the largest binary unit it reaches.
func formatBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	f, u := float64(n)/1024, 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10) + " " + units[u]
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[u]
}

// SplitMember splits a command-line FILE argument of the form
// ARCHIVE:MEMBER into the file and the zip entry. A name that exists as a
// file is returned whole; otherwise the longest prefix before a ':' that
// exists is the file.
func SplitMember(name string) (file, member string) {
	if _, err := os.Stat(name); err == nil {
		return name, ""
	}
	for i := len(name) - 1; i > 0; i-- {
		if name[i] != ':' {
			continue
		}
		if st, err := os.Stat(name[:i]); err == nil && st.Mode().IsRegular() {
			return name[:i], name[i+1:]
		}
	}
	return name, ""
}
