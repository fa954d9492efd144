package perf

import (
	"bytes"
	"fmt"
	"testing"

	"viewer/trace"
	"viewer/trace/perf/perftest"
	"viewer/trace/span"
)

// TestHeldPayloads: the chunks hold the payload of every event not yet
// handed out, and once hold is called of every event handed out since
// the last release, in a recording whose rounds (4096 samples) span
// several chunks; past maxHeld they hold no more than that.
func TestHeldPayloads(t *testing.T) {
	f, open := pastMaxHeld(t)
	held := func(r *Reader, e trace.Event) bool {
		b, ok := r.buf.held(e.Payload)
		return ok && bytes.Equal(b, f[e.Payload.Off:e.Payload.Off+int64(e.Payload.Len)])
	}

	// Without hold: each event's payload is held when it is handed out.
	r := open()
	n := 0
	for {
		e, err := r.ReadEvent()
		if err != nil {
			break
		}
		if e.Payload.Len > 0 && !held(r, e) {
			t.Fatalf("event %d: payload at %d not held when handed out", n, e.Payload.Off)
		}
		n++
	}
	if n < 300000 {
		t.Fatalf("read %d events", n)
	}

	// With hold: a batch's payloads are held until release.
	r = open()
	r.hold(func() int64 { return noFrom })
	batch := make([]trace.Event, 0, 8192)
	for done := false; !done; {
		batch, done = readBatch(r, batch)
		for i, e := range batch {
			if e.Payload.Len > 0 && !held(r, e) {
				t.Fatalf("batch event %d: payload at %d not held before release", i, e.Payload.Off)
			}
		}
		r.release()
	}

	// With hold and no release: no more than maxHeld behind the current chunk.
	r = open()
	r.hold(func() int64 { return noFrom })
	most := 0
	for {
		if _, err := r.ReadEvent(); err != nil {
			break
		}
		k := 0
		for _, c := range r.buf.kept {
			k += len(c.b)
		}
		most = max(most, k)
	}
	if most > maxHeld+chunkSize || most < maxHeld-chunkSize {
		t.Errorf("kept at most %d bytes unreleased, want maxHeld (%d)", most, maxHeld)
	}
}

// TestSchedLateDerivations: batches of noted events derived from only after
// the whole recording (far more than maxHeld) has been read give the
// slices single events do: the chunks their payloads lie in are not
// reused while a batch may read them, even those the reader no longer
// keeps.
func TestSchedLateDerivations(t *testing.T) {
	_, open := pastMaxHeld(t)
	str := func(set *span.Set) string { return fmt.Sprint(set.Tracks, set.Names, set.All()) }

	r := open()
	s := NewSched(r)
	var late []func(*span.Builder)
	first := trace.Time(-1)
	batch := make([]trace.Event, 0, 8192)
	for done := false; !done; {
		batch, done = readBatch(r, batch)
		if first < 0 {
			first = batch[0].Time
		}
		s.NoteEvents(r, batch)
		late = append(late, s.Take())
	}
	b := span.NewBuilder()
	b.See(first)
	for _, f := range late {
		f(b)
	}
	last := batch[len(batch)-1].Time
	b.See(last)
	s.Finish(r, b)
	got := b.Finish()

	r = open()
	want := deriveOneByOne(r, NewSched(r))
	if g, w := str(got), str(want); g != w || got.Len() < 250000 {
		t.Errorf("late derivations: %d slices, single events %d; the same: %v", got.Len(), want.Len(), g == w)
	}
}

// pastMaxHeld returns a generated scheduler recording larger than
// maxHeld, and a function that opens a Reader of it.
func pastMaxHeld(t *testing.T) ([]byte, func() *Reader) {
	var f memFile
	if err := perftest.GenerateSched(&f, 330000, 4, 16); err != nil {
		t.Fatal(err)
	}
	if len(f.b) < maxHeld+2*chunkSize {
		t.Fatalf("the recording is %d bytes: too small to pass maxHeld", len(f.b))
	}
	return f.b, func() *Reader {
		r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// readBatch reads events into batch up to its capacity; done at the end
// of the events.
func readBatch(r *Reader, batch []trace.Event) ([]trace.Event, bool) {
	batch = batch[:0]
	for len(batch) < cap(batch) {
		e, err := r.ReadEvent()
		if err != nil {
			return batch, true
		}
		batch = append(batch, e)
	}
	return batch, false
}
