package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/wrap"
)

func runDump(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dump", stderr)
	var sel whereFlags
	sel.register(fs)
	name, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	f, err := wrap.OpenFile(ctx, name, commandFormats(), wrap.Limits{})
	if err != nil {
		return err
	}
	defer f.Close()
	r := f.Reader // the format's own reader, for its DetailsAppender or PayloadDecoder
	sym, err := learnSymbols(ctx, f)
	if err != nil {
		return err
	}
	if r, err = sel.filter(r); err != nil {
		return err
	}
	if pd, ok := r.(trace.PayloadDecoder); ok && sym == nil && runtime.GOMAXPROCS(0) > 1 {
		return dumpParallel(ctx, r, pd, runtime.GOMAXPROCS(0), dumpBatchEvents, stdout)
	}
	return dump(ctx, r, sym, stdout, stderr)
}

// learnSymbols reads the trace of f once more, before it is dumped, to
// learn what names its stack frames (a streaming dump meets a frame long
// before the rundown at the end of a .NET trace names its method). It
// returns nil for formats without a symbol source (see symbolSource).
// A damaged file teaches what its readable part does.
func learnSymbols(ctx context.Context, file *wrap.File) (render.Symbolizer, error) {
	if symbolSource(file.Reader) == nil {
		return nil, nil
	}
	f, err := file.Reopen()
	if err != nil {
		return nil, err
	}
	src := symbolSource(f)
	for n := 0; ; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e, err := f.ReadEvent()
		if err != nil {
			break
		}
		src.Observe(f, e)
	}
	src.Finish(f)
	return src.Symbolize, nil
}

// dumpBuffer is how much output dump gathers before each write.
const dumpBuffer = 1 << 20

// dump writes every event of r as one JSON object per line, stack frames
// named by sym when it is not nil. A damaged
// file's readable events are written, then the damage is reported on
// stderr and as the command's error. Lines are appended straight into one
// output buffer, which is written when it holds dumpBuffer bytes.
func dump(ctx context.Context, r trace.Reader, sym render.Symbolizer, stdout, stderr io.Writer) error {
	buf := make([]byte, 0, dumpBuffer+dumpBuffer/8)
	flush := func() error {
		_, err := stdout.Write(buf)
		buf = buf[:0]
		return err
	}
	enc := export.NewEncoder(r)
	if sym != nil {
		enc.Symbolize(sym)
	}
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
		buf = appendLine(enc, buf, e)
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

// appendLine appends e's JSON line; an event whose details cannot be
// decoded gets the error as its label.
func appendLine(enc *export.Encoder, buf []byte, e trace.Event) []byte {
	buf, err := enc.AppendEvent(buf, e)
	if err != nil {
		buf = enc.Append(buf, e, trace.Details{Label: "error: " + err.Error()}, nil)
	}
	return append(buf, '\n')
}

// dumpBatch is a run of events on its way through dumpParallel.
type dumpBatch struct {
	events   []trace.Event
	ends     []int         // end of each event's payload in payloads
	payloads []byte        // the events' payloads, back to back
	meta     trace.Meta    // the reader's tables once the batch was read
	err      error         // what ended reading after the batch, or nil
	out      []byte        // the batch's JSON lines
	done     chan struct{} // closed when out is complete
}

// dumpBatchEvents is the number of events per batch: large enough that
// handing batches between goroutines costs nothing per event, small
// enough that a batch's output stays in cache-friendly megabytes.
const dumpBatchEvents = 4096

// dumpParallel writes what dump writes, byte for byte, formatting on
// workers goroutines: one goroutine reads events and their payload bytes
// in batches of batch events, the workers decode details and encode JSON
// lines, and the caller's goroutine writes the batches' output in reading
// order. Memory stays bounded by the 2*workers+2 batches in flight.
func dumpParallel(ctx context.Context, r trace.Reader, pd trace.PayloadDecoder, workers, batch int, stdout io.Writer) error {
	inFlight := 2*workers + 2
	free := make(chan *dumpBatch, inFlight)
	for range inFlight {
		free <- &dumpBatch{}
	}
	work := make(chan *dumpBatch, inFlight)
	order := make(chan *dumpBatch, inFlight)
	stop := make(chan struct{})
	var wg sync.WaitGroup

	wg.Go(func() { // the reader
		defer close(work)
		defer close(order)
		for {
			var b *dumpBatch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.events, b.ends, b.payloads, b.err = b.events[:0], b.ends[:0], b.payloads[:0], nil
			for len(b.events) < batch {
				b.events = append(b.events, trace.Event{})
				p, err := pd.ReadEventPayload(&b.events[len(b.events)-1], b.payloads)
				if err != nil {
					b.events, b.err = b.events[:len(b.events)-1], err
					break
				}
				b.ends, b.payloads = append(b.ends, len(p)), p
			}
			if b.err == nil && ctx.Err() != nil {
				b.err = ctx.Err()
			}
			b.meta = *r.Meta()
			b.done = make(chan struct{})
			order <- b
			work <- b
			if b.err != nil {
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			v := &metaView{Reader: r}
			enc := export.NewEncoder(v)
			var fields []trace.Field
			var label []byte
			for b := range work {
				v.meta = b.meta
				out, start := b.out[:0], 0
				for i := range b.events {
					e := &b.events[i]
					var err error
					fields, label, err = pd.AppendPayloadDetails(fields[:0], label[:0], *e, b.payloads[start:b.ends[i]])
					start = b.ends[i]
					if err != nil {
						out = enc.Append(out, *e, trace.Details{Label: "error: " + err.Error()}, nil)
					} else {
						out = enc.AppendDecoded(out, e, fields, label)
					}
					out = append(out, '\n')
				}
				b.out = out
				close(b.done)
			}
		})
	}

	var err error
	for b := range order {
		<-b.done
		if _, werr := stdout.Write(b.out); werr != nil {
			if !errors.Is(werr, io.ErrClosedPipe) {
				err = fmt.Errorf("writing output: %w", werr)
			}
			break
		}
		if b.err != nil {
			if b.err != io.EOF {
				err = b.err
			}
			break
		}
		free <- b
	}
	close(stop)
	for range order { // let the reader finish the batch it may be sending
	}
	wg.Wait()
	return err
}

// metaView is the reader a dumpParallel worker encodes with: the reader,
// with the tables of the batch at hand.
type metaView struct {
	trace.Reader // for Stack and Labels
	meta         trace.Meta
}

func (v *metaView) Meta() *trace.Meta { return &v.meta }
