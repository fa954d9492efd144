package main

import (
	"context"
	"fmt"
	"io"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

// runExport writes a trace, or the events --where, --from and --to
// select, in another tool's format: `--format chrome` the JSON
// trace-event format of chrome://tracing and Perfetto's UI
// (export.ChromeWriter), `--format jsonl` the lines of `viewer dump`.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stderr)
	format := fs.String("format", "chrome", "the output: chrome (JSON trace events) or jsonl (viewer dump's lines)")
	var sel whereFlags
	sel.register(fs)
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	switch *format {
	case "jsonl":
		return runDump(ctx, []string{"--where", sel.where, "--from", fmt.Sprint(sel.from), "--to", fmt.Sprint(sel.to), name}, stdout, stderr)
	case "chrome":
	default:
		return fmt.Errorf("--format %q: chrome or jsonl", *format)
	}
	if err := regularFile(name); err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, commandFormats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := sel.filter(f.Reader)
	if err != nil {
		return err
	}
	return exportChrome(ctx, r, stdout)
}

// exportChrome writes every event of r as Chrome trace events. A damaged
// trace's readable events are written, the document is finished, and the
// damage is the error.
func exportChrome(ctx context.Context, r trace.Reader, stdout io.Writer) error {
	cw := export.NewChromeWriter(stdout, r)
	var readErr error
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		e, err := r.ReadEvent()
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		d, err := r.Details(e)
		if err != nil {
			d = trace.Details{Label: "error: " + err.Error()}
		}
		if err := cw.Write(e, d); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	if err := cw.Close(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return readErr
}
