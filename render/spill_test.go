package render

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"viewer/trace"
	"viewer/trace/cpel"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/synth"
)

// TestSpillReadOrders reads every event's spilled header back in several
// orders (forward, forward skipping, backward, random, one type at a
// time) with one runReader, as searches do, and checks each against the
// event read: the slot-based deltas and the lazy forward decoding give
// what was written. 70,000 types put some beyond the 16-bit type column
// (typeEscape) and make slots collide.
func TestSpillReadOrders(t *testing.T) {
	cfg := synth.Config{Events: 30000, Tracks: 5, Types: 70000, Seed: 8, MeanGap: 30}
	x := build(t, cfg)
	ref := synth.New(cfg)
	byTrack := map[trace.TrackID][]trace.Event{}
	for {
		e, err := ref.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		byTrack[e.Track] = append(byTrack[e.Track], e)
	}
	escaped := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for tr, evs := range byTrack {
		check := func(order string, idx []int) {
			rr := &runReader{s: x.spill}
			for _, i := range idx {
				got, err := x.event(rr, EventID{Track: tr, Index: int32(i)})
				want := evs[i]
				if err != nil || got != want {
					t.Fatalf("track %d %s: event %d is %+v, %v; want %+v", tr, order, i, got, err, want)
				}
			}
		}
		n := len(evs)
		var fwd, skip, back, random, oneType []int
		for i := range n {
			fwd = append(fwd, i)
			back = append(back, n-1-i)
			random = append(random, rng.IntN(n))
			if rng.IntN(7) == 0 {
				skip = append(skip, i)
			}
			if evs[i].Type == evs[0].Type || evs[i].Type%64 == evs[n/2].Type%64 {
				oneType = append(oneType, i)
			}
			if evs[i].Type >= typeEscape {
				escaped++
			}
		}
		check("forward", fwd)
		check("skipping", skip)
		check("backward", back)
		check("random", random)
		check("one slot", oneType)
	}
	if escaped == 0 {
		t.Error("no event has a type beyond the type column")
	}
}

// TestRunWriterRecords checks the spill writer's in-place encoding
// against appendRecord on the base the file comment defines (the slot's
// last record when of the same code, else the zero Event), over events
// whose fields take extreme values and whose codes collide in slots, and
// decodes each record back. Half the events come in stretches of a
// grouped batch's (appendBasedRun: one of two bases but for their types and
// payload offsets), between events of any fields.
func TestRunWriterRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(vals ...int64) int64 { return vals[rng.IntN(len(vals))] }
	small := func() int64 { return pick(0, 1, -1, 63, 64, 1<<20, -(1 << 40), 1<<62, -1<<63, 1<<63-1) }
	var w runWriter
	var sr slotRecords
	var b, want []byte
	bases := []trace.Event{
		{Capture: trace.NoTrack, CPU: trace.NoCPU, Payload: trace.Loc{Len: 4}},
		{Seq: 7, CPU: 3, Stack: 1, Labels: 2, Payload: trace.Loc{Len: 12}},
	}
	var based *trace.Event // the base of the stretch at hand; nil: any fields
	for i := range 20000 {
		if i%1000 == 0 { // a new run
			w.set, sr.set = 0, 0
		}
		if i%50 == 0 {
			based = nil
			if k := rng.IntN(4); k < len(bases) {
				based = &bases[k]
				w.setBase(based)
			}
		}
		e := trace.Event{
			Type:    trace.TypeID(pick(0, 1, 2, 64, 65, 65534, 65535, 70000, -1, 1<<31-1)),
			Seq:     uint32(small()),
			Capture: trace.TrackID(small()),
			CPU:     int32(small()),
			Stack:   trace.StackID(small()),
			Labels:  trace.LabelsID(small()),
			Payload: trace.Loc{Off: small(), Len: int32(small())},
		}
		if based != nil {
			ty, off := e.Type, e.Payload.Off
			e = *based
			e.Type, e.Payload.Off = ty, off
		}
		code := typeCode(e.Type)
		base := sr.base(code)
		want = appendRecord(slices.Grow(want[:0], maxRecordSize), &base, &e)
		at := len(b)
		if based != nil {
			// The offset less an origin within 4 GB below it (wrapping
			// where the offset is near the least int64).
			d := rng.Uint32()
			origin := *based
			origin.Payload.Off = e.Payload.Off - int64(d)
			b, _ = w.appendBasedRun(slices.Grow(b, maxRecordSize), 0, []trace.TypeID{e.Type}, []uint32{d}, &origin)
		} else {
			b = w.appendRecord(slices.Grow(b, maxRecordSize), code, &e)
		}
		if got := b[at:]; !bytes.Equal(got, want) {
			t.Fatalf("event %d %+v: record %x, want %x", i, e, got, want)
		}
		got := base
		if next, err := decodeRecord(&got, b, at); err != nil || next != len(b) || got != e {
			t.Fatalf("event %d: decoded %+v to %d (%v), want %+v to %d", i, got, next, err, e, len(b))
		}
		sr.put(code, &e)
	}
}

// appendRecord appends e's record based on prev; b must have room for
// maxRecordSize more bytes. It is the encoding written plainly, the reference
// that runWriter.appendRecord writes out in place (TestRunWriterRecords).
func appendRecord(b []byte, prev, e *trace.Event) []byte {
	p, f := fieldsOf(prev), fieldsOf(e)
	return appendDeltas(b, &p, &f)
}

// appendDeltas appends the record of fields f based on base; b must have
// room for maxRecordSize more bytes.
func appendDeltas(b []byte, base, f *recordFields) []byte {
	n := len(b)
	b = b[:n+maxRecordSize]
	i, m := n+1, byte(0)
	for k := range f {
		if d := f[k] - base[k]; d != 0 {
			m |= 1 << k
			i = putVarint(b, i, d)
		}
	}
	b[n] = m
	return b[:i]
}

func fieldsOf(e *trace.Event) recordFields {
	return recordFields{int64(e.Type), int64(e.Seq), int64(e.Capture), int64(e.CPU), int64(e.Stack), int64(e.Labels), e.Payload.Off, int64(e.Payload.Len)}
}

// TestAppendBasedRun checks that appendBasedRun encodes a grouped
// batch's events as appendRecord does the whole events one by one, block
// table included,
// over stretches of types that collide in slots, escaped types, and
// offsets up to 4 GB apart, up and down, with the base and the offsets'
// origin changing between stretches (which lie far apart).
func TestAppendBasedRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	bases := []trace.Event{
		{Capture: trace.NoTrack, CPU: trace.NoCPU, Payload: trace.Loc{Len: 4}},
		{Seq: 7, CPU: 3, Stack: 1, Labels: 2, Payload: trace.Loc{Len: 12}},
	}
	var one, run runWriter
	var b1, b2 []byte
	k1, k2 := 0, 0
	off := int64(0)
	for stretch := range 400 {
		if stretch%7 == 0 { // a new run
			one.set, run.set, b1, b2, k1, k2 = 0, 0, b1[:0], b2[:0], 0, 0
		}
		base := bases[rng.IntN(len(bases))]
		off += int64(rng.IntN(1 << uint(rng.IntN(40))))
		if rng.IntN(5) == 0 {
			off = -off
		}
		base.Payload.Off = off - 1<<31 // the origin: the offsets of the stretch lie in [origin, origin+4 GB)
		n := rng.IntN(60) + 1
		types, offs := make([]trace.TypeID, n), make([]uint32, n)
		for i := range types {
			types[i] = trace.TypeID([]int64{0, 1, 64, 65, 128, 65534, 65535, 70000, 1<<31 - 1}[rng.IntN(9)])
			d := int64(rng.IntN(1 << uint(rng.IntN(26))))
			if rng.IntN(10) == 0 {
				d = -min(d, off-base.Payload.Off)
			}
			off += d
			offs[i] = uint32(off - base.Payload.Off)
		}
		for i, ty := range types {
			if k1 > 0 && k1%spillBlock == 0 {
				one.blocks[k1/spillBlock-1] = uint16(len(b1))
			}
			e := base
			e.Type, e.Payload.Off = ty, base.Payload.Off+int64(offs[i])
			b1 = one.appendRecord(slices.Grow(b1, maxRecordSize), typeCode(ty), &e)
			k1++
		}
		run.setBase(&base)
		b2, k2 = run.appendBasedRun(slices.Grow(b2, n*maxRecordSize), k2, types, offs, &base)
		if !bytes.Equal(b1, b2) || k1 != k2 || one.blocks != run.blocks {
			t.Fatalf("stretch %d: appendBasedRun wrote %d records %x, appendRecord %d %x", stretch, k2, b2, k1, b1)
		}
	}
}

// BenchmarkRecords times the spill writer's encoding alone (runWriter,
// no file) over the events of a synthetic trace and of a CPEL file, each
// track's events in a row as the indexers take them, and over the CPEL
// file's as a grouped batch holds them (appendBasedRun).
func BenchmarkRecords(b *testing.B) {
	cpelFile := filepath.Join(b.TempDir(), "b.cpel")
	var buf bytes.Buffer
	if err := cpeltest.Generate(&buf, 200_000, 1e9); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cpelFile, buf.Bytes(), 0o666); err != nil {
		b.Fatal(err)
	}
	for _, src := range []struct {
		name string
		open func() trace.Reader
	}{
		{"synth", func() trace.Reader { return synth.New(synth.Config{Events: 200_000, Tracks: 64, Seed: 1}) }},
		{"cpel", func() trace.Reader {
			r, err := cpel.Format{}.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				b.Fatal(err)
			}
			return r
		}},
	} {
		b.Run(src.name, func(b *testing.B) {
			evs := inTrackOrder(src.open())
			rec := make([]byte, 0, runBuffer)
			var w runWriter
			size := 0
			for b.Loop() {
				size = 0
				for i := range evs {
					if i%runRecords == 0 {
						size += len(rec)
						rec, w.set = rec[:0], 0
					}
					rec = w.appendRecord(rec, typeCode(evs[i].Type), &evs[i])
				}
				size += len(rec)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			b.ReportMetric(float64(size)/float64(len(evs)), "bytes/event")
		})
	}
	// The CPEL events as a grouped batch hands them over: the base and
	// each event's type and payload offset (appendBasedRun).
	b.Run("cpel-based", func(b *testing.B) {
		r, err := cpel.Format{}.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			b.Fatal(err)
		}
		base := r.(trackOrderReader).EventBase()
		var types []trace.TypeID
		var offs []uint32
		for _, e := range inTrackOrder(r) {
			types, offs = append(types, e.Type), append(offs, uint32(e.Payload.Off-base.Payload.Off))
		}
		rec := make([]byte, 0, runBuffer)
		var w runWriter
		w.setBase(&base)
		for b.Loop() {
			for i := 0; i < len(types); i += runRecords {
				rec, w.set = rec[:0], 0
				j := min(i+runRecords, len(types))
				rec, _ = w.appendBasedRun(rec, 0, types[i:j], offs[i:j], &base)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(types)), "ns/event")
	})
}

// TestSpillDropBehind: a build whose spill and store drop their pages
// from the page cache as they go (past a tiny keep, in tiny steps; the
// store only its cold arrays) writes the same index file as one that
// keeps them, its spilled records and queries read back the same, and,
// where the system drops pages, most of the spill and the cold part of
// the store are not resident once built.
func TestSpillDropBehind(t *testing.T) {
	cfg := synth.Config{Events: 1_000_000, Tracks: 9, Seed: 6}
	var files [][]byte
	var xs []*Index
	for _, keep := range []int64{0, 64 << 10} {
		x, err := Build(context.Background(), synth.New(cfg), Options{SpillDir: t.TempDir(), Derive: newGaps(), spillKeep: keep})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if keep > 0 && dropsPages {
			// The cold arrays (pyramid nodes, stacked events, time
			// cells) are a large part of the store; the times and types
			// stay cached, read back by the time cells' pass.
			x.store.mu.Lock()
			size := x.store.off
			x.store.mu.Unlock()
			if res := x.store.resident(); res > size*9/10 {
				t.Errorf("%d of the store's %d bytes resident after the build, want its cold arrays dropped", res, size)
			}
			m := *x.spill.mem.Load()
			// At most the kept bytes, the last two shipments (each
			// drops up to the one before) and a step's rounding.
			if res, most := residentBytes(m), 2*keep+2*shipSize; res > most || len(m) < 3*int(most) {
				t.Errorf("%d of the spill's %d bytes resident after the build, want at most %d", res, len(m), most)
			}
		}
		name := filepath.Join(t.TempDir(), "index")
		if err := x.WriteFile(name, testKey); err != nil {
			t.Fatal(err)
		}
		files = append(files, fileBody(t, name))
		xs = append(xs, x)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("the index files with and without drop-behind differ (%d and %d bytes)", len(files[0]), len(files[1]))
	}
	compareIndexes(t, xs[1], xs[0], rand.New(rand.NewPCG(6, 1)))
}

// inTrackOrder reads r's events and returns them by track, each track's
// in reading order, as the indexers spill them.
func inTrackOrder(r trace.Reader) []trace.Event {
	byTrack := map[trace.TrackID][]trace.Event{}
	for {
		e, err := r.ReadEvent()
		if err != nil {
			break
		}
		byTrack[e.Track] = append(byTrack[e.Track], e)
	}
	var evs []trace.Event
	for _, t := range slices.Sorted(maps.Keys(byTrack)) {
		evs = append(evs, byTrack[t]...)
	}
	return evs
}
