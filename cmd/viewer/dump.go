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
	offsets := offsetFlags{}
	fs.Var(offsets, "offset", "with several files: move FILE's events by DURATION on the aligned clock (`FILE=+1.5ms`; repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return dumpMerged(ctx, fs.Args(), &sel, offsets, stdout, stderr)
	}
	if len(offsets) > 0 {
		return errors.New("--offset needs several files")
	}
	name, err := oneFile(fs, fs.Args())
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
	if pd, ok := r.(trace.PayloadDecoder); ok && runtime.GOMAXPROCS(0) > 1 {
		return dumpParallel(ctx, r, pd, sym, runtime.GOMAXPROCS(0), dumpBatchEvents, stdout)
	}
	return dump(ctx, r, sym, stdout, stderr)
}

// learnSymbols reads the trace of f once more, before it is dumped, to
// learn what names its stack frames (a streaming dump meets a frame long
// before the rundown at the end of a .NET trace names its method). It
// returns nil for formats without a symbol source (see symbolSource).
// A damaged file teaches what its readable part does. The symbolizer
// returned is safe for concurrent use; calls wait until the source has
// finished learning, which goes on while the caller starts dumping.
func learnSymbols(ctx context.Context, file *wrap.File) (render.Symbolizer, error) {
	if symbolSource(file.Reader) == nil {
		return nil, nil
	}
	if s, ok := file.Reader.(interface{ Stackless() bool }); ok && s.Stackless() {
		return nil, nil // no stack to name (perf.data without call chains)
	}
	f, err := file.Reopen()
	if err != nil {
		return nil, err
	}
	src := symbolSource(f)
	if c, ok := src.(interface{ NoCount() }); ok {
		c.NoCount() // the frame counts Finish returns are not printed
	}
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
	// Finish (sorting the method map) runs while the dump starts reading;
	// the first frame to name waits for it.
	ready := make(chan struct{})
	go func() {
		src.Finish(f)
		close(ready)
	}()
	return func(pid int64, t trace.Time, addr uint64) (trace.Frame, bool) {
		<-ready
		return src.Symbolize(pid, t, addr)
	}, nil
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
	ends     []int           // end of each event's payload in payloads
	payloads []byte          // the events' payloads, back to back
	stacks   [][]uint64      // each event's stack addresses, as r.Stack gave them
	labels   [][]trace.Label // each event's labels, as r.Labels gave them
	// metas are the reader's tables as they were when the events from
	// metaFrom[i] on were read (a new one whenever the tables changed).
	metas    []trace.Meta
	metaFrom []int
	err      error         // what ended reading after the batch, or nil
	out      []byte        // the batch's JSON lines
	done     chan struct{} // closed when out is complete
}

// sameTables reports whether two copies of a reader's Meta hold the same
// tracks and event types: the same arrays, as long (readers only append
// to them, or copy them to change an entry).
func sameTables(a, b *trace.Meta) bool {
	return len(a.Tracks) == len(b.Tracks) && len(a.Types) == len(b.Types) &&
		(len(a.Tracks) == 0 || &a.Tracks[0] == &b.Tracks[0]) && (len(a.Types) == 0 || &a.Types[0] == &b.Types[0])
}

// dumpBatchEvents is the number of events per batch: large enough that
// handing batches between goroutines costs nothing per event, small
// enough that a batch's output stays in cache-friendly megabytes.
const dumpBatchEvents = 4096

// dumpBatchBytes ends a batch early once its payloads hold this many
// bytes: events of a few hundred bytes (.NET method events) make lines
// of a kilobyte, and a batch's output should stay about a megabyte.
const dumpBatchBytes = 256 << 10

// dumpParallel writes what dump writes, byte for byte, formatting on
// workers goroutines: one goroutine reads events and their payload bytes
// in batches of batch events, the workers decode details and encode JSON
// lines, and the caller's goroutine writes the batches' output in reading
// order. Memory stays bounded by the 2*workers+2 batches in flight. The
// workers see the reader's tables, stacks and labels as they were when
// each event was read, as dump does; sym, when not nil, names stack
// frames (it is safe for concurrent use once learnt).
func dumpParallel(ctx context.Context, r trace.Reader, pd trace.PayloadDecoder, sym render.Symbolizer, workers, batch int, stdout io.Writer) error {
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
			b.stacks, b.labels = b.stacks[:0], b.labels[:0]
			b.metas, b.metaFrom = append(b.metas[:0], *r.Meta()), append(b.metaFrom[:0], 0)
			for len(b.events) < batch && len(b.payloads) < dumpBatchBytes {
				b.events = append(b.events, trace.Event{})
				e := &b.events[len(b.events)-1]
				p, err := pd.ReadEventPayload(e, b.payloads)
				if err != nil {
					b.events, b.err = b.events[:len(b.events)-1], err
					break
				}
				b.ends, b.payloads = append(b.ends, len(p)), p
				var stack []uint64
				var labels []trace.Label
				if e.Stack != trace.NoStack {
					stack = r.Stack(e.Stack)
				}
				if e.Labels != trace.NoLabels {
					labels = r.Labels(e.Labels)
				}
				b.stacks, b.labels = append(b.stacks, stack), append(b.labels, labels)
				if m := r.Meta(); !sameTables(m, &b.metas[len(b.metas)-1]) {
					b.metas, b.metaFrom = append(b.metas, *m), append(b.metaFrom, len(b.events)-1)
				}
			}
			if b.err == nil && ctx.Err() != nil {
				b.err = ctx.Err()
			}
			b.metas[len(b.metas)-1] = *r.Meta() // what else grew (lost events, notices) is not encoded
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
			if sym != nil {
				enc.Symbolize(sym)
			}
			var fields []trace.Field
			var label []byte
			for b := range work {
				out, start, seg := b.out[:0], 0, 0
				if want := 4*len(b.payloads) + 512*len(b.events); cap(out) < want { // lines are about this long: grown once, with room to spare
					out = make([]byte, 0, want+want/2)
				}
				v.meta = b.metas[0]
				for i := range b.events {
					if seg+1 < len(b.metaFrom) && b.metaFrom[seg+1] == i {
						seg++
						v.meta = b.metas[seg]
					}
					e := &b.events[i]
					v.stack, v.labels = b.stacks[i], b.labels[i]
					payload := b.payloads[start:b.ends[i]]
					start = b.ends[i]
					var err error
					fields, label, err = pd.AppendPayloadDetails(fields[:0], label[:0], *e, payload)
					if err != nil {
						out = enc.Append(out, *e, trace.Details{Label: "error: " + err.Error()}, nil)
					} else {
						out = enc.AppendPayloadDecoded(out, e, fields, label, payload)
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

// metaView is the reader a dumpParallel worker encodes with: the tables,
// stack and labels of the event at hand as they were when it was read.
type metaView struct {
	trace.Reader
	meta   trace.Meta
	stack  []uint64
	labels []trace.Label
}

func (v *metaView) Meta() *trace.Meta { return &v.meta }

// Stack returns the stack of the event at hand (the encoder asks for no
// other).
func (v *metaView) Stack(trace.StackID) []uint64 { return v.stack }

// Labels returns the labels of the event at hand.
func (v *metaView) Labels(trace.LabelsID) []trace.Label { return v.labels }
