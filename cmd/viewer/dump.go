package main

import (
	"bufio"
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
	return dump(ctx, f, stdout, stderr)
}

// dump writes every event of r as one JSON object per line. A damaged
// file's readable events are written, then the damage is reported on
// stderr and as the command's error.
func dump(ctx context.Context, r trace.Reader, stdout, stderr io.Writer) error {
	bw := bufio.NewWriterSize(stdout, 1<<16)
	var line []byte
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
			if ferr := bw.Flush(); ferr != nil {
				return ferr
			}
			return err
		}
		d, err := r.Details(e)
		if err != nil {
			d.Label = "error: " + err.Error()
		}
		line = enc.Append(line[:0], e, d, nil)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			if errors.Is(err, io.ErrClosedPipe) {
				return nil
			}
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
