package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"viewer/trace"
)

func runDump(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dump", stderr)
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	f, err := trace.OpenFile(name, formats())
	if err != nil {
		return err
	}
	defer f.Close()
	return dump(ctx, f.Reader, stdout, stderr) // the format's own reader, for its DetailsAppender
}

// dumpBuffer is how much output dump gathers before each write.
const dumpBuffer = 1 << 20

// dump writes every event of r as one JSON object per line. A damaged
// file's readable events are written, then the damage is reported on
// stderr and as the command's error. Lines are appended straight into one
// output buffer, which is written when it holds dumpBuffer bytes.
func dump(ctx context.Context, r trace.Reader, stdout, stderr io.Writer) error {
	buf := make([]byte, 0, dumpBuffer+dumpBuffer/8)
	flush := func() error {
		_, err := stdout.Write(buf)
		buf = buf[:0]
		return err
	}
	enc := trace.NewJSONEncoder(r)
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			return err
		}
		if buf, err = enc.AppendEvent(buf, e); err != nil {
			buf = enc.Append(buf, e, trace.Details{Label: "error: " + err.Error()}, nil)
		}
		buf = append(buf, '\n')
		if len(buf) >= dumpBuffer {
			if err := flush(); err != nil {
				if errors.Is(err, io.ErrClosedPipe) {
					return nil
				}
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
