package wrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"viewer/trace"
)

// File is a [trace.Reader] over a named file that [OpenFile] opened: the
// trace itself, or the trace unwrapped from it into a temporary file.
type File struct {
	trace.Reader
	Info Info // what was unwrapped; Wrapper is "" for a plain trace

	f      *os.File
	size   int64        // of the trace in f
	format trace.Format // that reads it
	tmp    string       // the temporary file's name while it still has one
}

// Reopen returns a second reader of the same trace, from its start, for a
// pass of its own (e.g. learning symbols before a dump); it reads the
// file the File holds, so it is valid until Close.
func (f *File) Reopen() (trace.Reader, error) { return f.format.Open(f.f, f.size) }

// OpenFile opens a trace file, plain or wrapped. name may be ARCHIVE:MEMBER
// to pick a zip entry (see [SplitMember]). A wrapped trace is decompressed
// into a temporary file in the system's temporary directory ($TMPDIR),
// within lim, and that file is opened; Close removes it. Errors name the
// file as given.
func OpenFile(ctx context.Context, name string, formats []trace.Format, lim Limits) (*File, error) {
	path, member := SplitMember(name)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if member == "" {
		format, err := trace.Sniff(f, st.Size(), formats)
		if err == nil {
			r, err := format.Open(f, st.Size())
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return &File{Reader: r, f: f, size: st.Size(), format: format}, nil
		}
		if !errors.Is(err, trace.ErrUnknownFormat) {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		head := make([]byte, min(st.Size(), headLen))
		if _, rerr := f.ReadAt(head, 0); rerr != nil && rerr != io.EOF {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, rerr)
		}
		if Detect(head) == "" {
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	defer f.Close()
	out, err := unwrapToTemp(ctx, f, st.Size(), member, formats, lim)
	if err != nil {
		var ce *ChoiceError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%s: %w: name one, e.g. %s:%s", name, err, path, ce.Members[0])
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	format, err := trace.Sniff(out.f, out.Info.Size, formats)
	if err == nil {
		out.Reader, err = format.Open(out.f, out.Info.Size)
		out.size, out.format = out.Info.Size, format
	}
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("%s (unwrapped from %s): %w", name, out.Info.Wrapper, err)
	}
	return out, nil
}

// unwrapToTemp unwraps r into a new temporary file. The file's name is
// removed at once where the system allows it, so that nothing is left
// behind even if the process dies; otherwise Close removes it.
func unwrapToTemp(ctx context.Context, r io.ReaderAt, size int64, member string, formats []trace.Format, lim Limits) (*File, error) {
	tf, err := os.CreateTemp("", "viewer-unwrap-*")
	if err != nil {
		return nil, err
	}
	out := &File{f: tf, tmp: tf.Name()}
	if os.Remove(tf.Name()) == nil {
		out.tmp = ""
	}
	info, err := Unwrap(ctx, r, size, member, formats, lim, tf)
	if err != nil {
		out.Close()
		return nil, err
	}
	out.Info = info
	return out, nil
}

// Close closes the file and removes the temporary file, if any.
func (f *File) Close() error {
	err := f.f.Close()
	if f.tmp != "" {
		if rerr := os.Remove(f.tmp); err == nil {
			err = rerr
		}
		f.tmp = ""
	}
	return err
}
