package cpel

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/cpel/cpeltest"
	"viewer/trace/export"
	"viewer/trace/tracetest"
)

// benchEvents is the size of the generated benchmark file: the 8 M events
// g2 and cpeldump were measured on (NOTES.md §scale).
const benchEvents = 8_000_000

// writeBenchFile writes the 8 M-event file cpeltest.Generate makes.
func writeBenchFile(tb testing.TB, hz uint32) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bench.cpel")
	writeBench(tb, path, hz)
	return path
}

// TestWriteBenchFile writes the benchmark file to $CPEL_BENCH_FILE, for
// timing the real command (`viewer dump FILE`), and checks its count.
func TestWriteBenchFile(t *testing.T) {
	path := os.Getenv("CPEL_BENCH_FILE")
	if path == "" {
		t.Skip("CPEL_BENCH_FILE not set")
	}
	writeBench(t, path, 1e9)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	f, err := NewFile(fh, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.events[0].n; n != benchEvents {
		t.Errorf("%d events, want %d", n, benchEvents)
	}
}

func writeBench(tb testing.TB, path string, hz uint32) {
	fh, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	bw := bufio.NewWriterSize(fh, 1<<20)
	if err := cpeltest.Generate(bw, benchEvents, hz); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// openBench generates the benchmark file with ticks at hz and opens it.
func openBench(b *testing.B, hz uint32) (*os.File, int64) {
	fh, err := os.Open(writeBenchFile(b, hz))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fh.Close() })
	st, _ := fh.Stat()
	return fh, st.Size()
}

// benchRead opens and reads the benchmark file b.N times, calling each for
// every event, and reports the meter's figures.
func benchRead(b *testing.B, each func(r *Reader, e trace.Event) error) {
	fh, size := openBench(b, 1e9)
	m := startMeter(b)
	n := 0
	for range b.N {
		tr, err := Format{}.Open(fh, size)
		if err != nil {
			b.Fatal(err)
		}
		r := tr.(*Reader)
		for {
			e, err := r.ReadEvent()
			if err == io.EOF {
				break
			}
			if err == nil {
				err = each(r, e)
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	m.report(b, n)
}

// BenchmarkIndex opens the file and reads every event (located, typed,
// placed on its track; datum not formatted). It reports events/s and the
// heap allocated per event.
func BenchmarkIndex(b *testing.B) {
	for _, hz := range []uint32{1e9, 2.4e9} {
		b.Run(strconv.Itoa(int(hz/1e6))+"MHz", func(b *testing.B) {
			// Its own loop, which keeps no event: only the reader is timed.
			fh, size := openBench(b, hz)
			m := startMeter(b)
			n := 0
			for range b.N {
				r, err := Format{}.Open(fh, size)
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := r.ReadEvent()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
			m.report(b, n)
		})
	}
}

// BenchmarkOpen opens the benchmark file: its event section scanned once
// for its order (File.scan), what `viewer bench` reports as the open's
// CPU time.
func BenchmarkOpen(b *testing.B) {
	fh, fsize := openBench(b, 1e9)
	m := startMeter(b)
	n := 0
	for range b.N {
		r, err := Format{}.Open(fh, fsize)
		if err != nil {
			b.Fatal(err)
		}
		for _, es := range r.(*Reader).f.events {
			n += es.n
		}
	}
	m.report(b, n)
}

// BenchmarkBatches reads the file in batches of 8192 events as the index
// does: through ReadEvents, and through ReadEventsByTrack (grouped by
// track, each event's time, type and payload offset).
func BenchmarkBatches(b *testing.B) {
	const size = 8192
	fh, fsize := openBench(b, 1e9)
	dst := make([]trace.Event, size)
	times, types, offs := make([]trace.Time, size), make([]trace.TypeID, size), make([]uint32, size)
	var tracks []trace.TrackID
	var counts []int32
	for _, read := range []struct {
		name  string
		batch func(*Reader) (int, error)
	}{
		{"ReadEvents", func(r *Reader) (int, error) { return r.ReadEvents(dst) }},
		{"ReadEventsByTrack", func(r *Reader) (k int, err error) {
			k, tracks, counts, err = r.ReadEventsByTrack(times, types, offs, tracks[:0], counts[:0])
			return k, err
		}},
	} {
		b.Run(read.name, func(b *testing.B) {
			m := startMeter(b)
			n := 0
			for range b.N {
				r, _ := Format{}.Open(fh, fsize)
				for {
					k, err := read.batch(r.(*Reader))
					n += k
					if err != nil {
						break
					}
				}
			}
			m.report(b, n)
		})
	}
}

// BenchmarkGrouping times readRecords alone, the reading goroutine's
// part of a load (ReadEventsByTrack without the file's pages): the
// records of 2^18 events held in memory, grouped in batches of 32768
// as the index reads them, over 100 tracks (cpeltest.Generate's) and
// over 5000.
func BenchmarkGrouping(b *testing.B) {
	const total, size = 1 << 18, 32768
	for _, tracks := range []uint32{100, 1000, 3000, 5000} {
		b.Run(strconv.Itoa(int(tracks))+"tracks", func(b *testing.B) {
			var buf bytes.Buffer
			if tracks == 100 {
				if err := cpeltest.Generate(&buf, total, 1e9); err != nil {
					b.Fatal(err)
				}
			} else {
				w := cpeltest.Writer{}
				tab := w.StringTable("FileStrtab")
				w.Events(tab, 1e9, total, func(i int) cpeltest.Record {
					x := uint32(i) * 2654435761
					return cpeltest.Record{Ticks: uint64(i), Track: x % tracks, Code: x >> 7 % 10}
				})
				if _, err := w.WriteTo(&buf); err != nil {
					b.Fatal(err)
				}
			}
			data := buf.Bytes()
			tr, err := Format{}.Open(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			r := tr.(*Reader)
			c := r.single
			recs := data[c.es.dataOff : c.es.dataOff+int64(c.es.n)*recordSize]
			times, types, offs := make([]trace.Time, size), make([]trace.TypeID, size), make([]uint32, size)
			var gtracks []trace.TrackID
			var counts []int32
			b.ResetTimer()
			for range b.N {
				for c.i = 0; c.i < c.es.n; {
					_, gtracks, counts, _ = r.readRecords(c, recs[c.i*recordSize:], times, types, offs, gtracks[:0], counts[:0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/total, "ns/event")
		})
	}
}

// BenchmarkDump does what `viewer dump` does per event on one goroutine:
// read it, decode its details (datum, formatted label) and append its JSON
// line, through AppendEvent (the allocation-free path `viewer dump` takes)
// and through Details and Append (what the web API does per event).
// BenchmarkDumpCPEL in cmd/viewer times the command itself.
func BenchmarkDump(b *testing.B) {
	for _, viaDetails := range []bool{false, true} {
		name := "AppendEvent"
		if viaDetails {
			name = "Details"
		}
		b.Run(name, func(b *testing.B) {
			var enc *export.Encoder
			var encFor *Reader // one encoder per opening: it keeps the reader's Meta
			line := make([]byte, 0, 1<<20)
			benchRead(b, func(r *Reader, e trace.Event) (err error) {
				if encFor != r {
					enc, encFor = export.NewEncoder(r), r
				}
				if viaDetails {
					d, err := r.Details(e)
					if err != nil {
						return err
					}
					line = enc.Append(line, e, d, nil)
				} else if line, err = enc.AppendEvent(line, e); err != nil {
					return err
				}
				line = append(line, '\n')
				if len(line) >= 1<<20 {
					line = line[:0]
				}
				return nil
			})
		})
	}
}

// BenchmarkLabels reads every event and decodes its details, without JSON.
func BenchmarkLabels(b *testing.B) {
	benchRead(b, func(r *Reader, e trace.Event) error {
		_, err := r.Details(e)
		return err
	})
}

// BenchmarkText formats every event as cpeldump does its work: read it
// and append its label text to a reused buffer (AppendLabel), no JSON.
func BenchmarkText(b *testing.B) {
	var line []byte
	benchRead(b, func(r *Reader, e trace.Event) (err error) {
		line, err = r.AppendLabel(line[:0], e)
		return err
	})
}

// meter measures a benchmark from startMeter to report: events per second
// of wall and of CPU time, and heap bytes allocated per event.
type meter struct {
	start time.Time
	cpu0  time.Duration
	alloc uint64
}

func startMeter(b *testing.B) meter {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	return meter{time.Now(), tracetest.CPUTime(), ms.TotalAlloc}
}

func (m meter) report(b *testing.B, events int) {
	el, cpu := time.Since(m.start), tracetest.CPUTime()-m.cpu0
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(events)/el.Seconds()/1e6, "Mevents/s")
	b.ReportMetric(float64(events)/cpu.Seconds()/1e6, "Mevents/cpu-s")
	b.ReportMetric(float64(ms.TotalAlloc-m.alloc)/float64(events), "heapB/event")
}

// TestReadEventsAsReadEvent checks that ReadEvents returns the events and
// the error of ReadEvent called one by one, for batches of several sizes,
// on a generated file (whole and cut, which ends in damage) and on every
// real file.
func TestReadEventsAsReadEvent(t *testing.T) {
	for name, data := range batchInputs(t) {
		want, wantErr, ok := readOneByOne(data)
		if !ok {
			continue // refused files have nothing to read
		}
		for _, size := range []int{1, 3, 1000, 100_000} {
			r, _ := Format{}.Open(bytes.NewReader(data), int64(len(data)))
			br := r.(*Reader)
			var got []trace.Event
			dst := make([]trace.Event, size)
			var err error
			for err == nil {
				var n int
				n, err = br.ReadEvents(dst)
				got = append(got, dst[:n]...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, batches of %d: %d events differ from ReadEvent's %d", name, size, len(got), len(want))
			}
			if err.Error() != wantErr.Error() {
				t.Errorf("%s, batches of %d: error %v, want %v", name, size, err, wantErr)
			}
		}
	}
}

// batchInputs returns the files the batch readers are checked on: a
// generated file, whole and cut (which ends in damage), and every real
// file.
func batchInputs(t *testing.T) map[string][]byte {
	var buf bytes.Buffer
	if err := cpeltest.Generate(&buf, 50_000, 1e9); err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"generated":                buf.Bytes(),
		"cut":                      buf.Bytes()[:buf.Len()*3/5],
		"shifting":                 shiftingFile(t, false, 1e9),
		"shifting, little, 2.4GHz": shiftingFile(t, true, 2_400_000_000),
	}
	if _, err := os.Stat("../../../shared/realdata/cpel"); err == nil || os.Getenv("CI") != "" {
		real, _ := filepath.Glob(filepath.Join(tracetest.RealData(t, "cpel"), "*.cpel"))
		for _, p := range real {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			inputs[filepath.Base(p)] = b
		}
	}
	return inputs
}

// shiftingFile returns a file whose tracks shift as ReadEventsByTrack's
// one pass over a batch (readRecords) does not expect: 100 tracks at
// even rates; then bursts of one track; then 3000 tracks not defined,
// each in turn (more groups than the scratch has room for, so the rest
// of a batch is grouped in two passes), some with ids above maxDenseID,
// with event codes not defined appearing among them; then many new
// tracks and one of them often; then a few tracks again, the last
// records' times past the largest Time.
func shiftingFile(t *testing.T, little bool, hz uint32) []byte {
	w := cpeltest.Writer{Little: little}
	tab := w.StringTable("FileStrtab")
	var defs []cpeltest.EventDef
	for c := range 10 {
		defs = append(defs, cpeltest.EventDef{Code: uint32(c), Name: "e" + strconv.Itoa(c), Format: "%d"})
	}
	w.EventDefs(tab, defs)
	var tracks []cpeltest.TrackDef
	for i := range 100 {
		tracks = append(tracks, cpeltest.TrackDef{ID: uint32(i), Format: "t %d"})
	}
	w.TrackDefs(tab, tracks)
	const n = 50_000
	w.Events(tab, hz, n, func(i int) cpeltest.Record {
		x := uint32(i) * 2654435761
		rec := cpeltest.Record{Ticks: uint64(i) * 3, Track: x % 100, Code: x >> 7 % 10, Datum: x}
		switch {
		case i < 15_000:
		case i < 25_000:
			rec.Track = uint32(i/2000) % 5
		case i < 40_000:
			rec.Track = 1000 + uint32(i)%3000
			if i%7 == 0 {
				rec.Track = maxDenseID + uint32(i)%11
			}
			if i%5 == 0 {
				rec.Code = 100 + uint32(i-25_000)/300
			}
		case i < 46_000:
			// Blocks of 120 new tracks, then the block's first: its
			// span grows until the scratch runs out (batches of 1000).
			k, blk := uint32(i-40_000)%1000, uint32(i-40_000)/1000
			rec.Track = 10_000 + blk*120
			if k < 120 {
				rec.Track += k
			}
		default:
			rec.Track = x % 3
			if i >= n-10 {
				rec.Ticks = 1<<63 + uint64(i)
			}
		}
		return rec
	})
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readOneByOne returns the events ReadEvent returns one by one from the
// file data and the error that ends them; false when the file is refused.
func readOneByOne(data []byte) ([]trace.Event, error, bool) {
	r, err := Format{}.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, false
	}
	var evs []trace.Event
	for {
		e, err := r.ReadEvent()
		if err != nil {
			return evs, err, true
		}
		evs = append(evs, e)
	}
}

// TestReadEventsByTrack checks that ReadEventsByTrack returns, batch by
// batch, the events of ReadEvent called one by one grouped by track
// (groups in the order of their first events, each in reading order),
// and the same error, on the files of TestReadEventsAsReadEvent: one
// event section read from its chunks, several merged (features.cpel),
// and damage.
func TestReadEventsByTrack(t *testing.T) {
	for name, data := range batchInputs(t) {
		want, wantErr, ok := readOneByOne(data)
		if !ok {
			continue
		}
		for _, size := range []int{1, 3, 1000, 100_000} {
			if msg := checkByTrack(openBytesReader(data), size, want, wantErr); msg != "" {
				t.Errorf("%s, batches of %d: %s", name, size, msg)
			}
		}
	}
}

// openBytesReader returns what opens the file data with ReadAt.
func openBytesReader(data []byte) func() (*Reader, error) {
	return func() (*Reader, error) {
		r, err := Format{}.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		return r.(*Reader), nil
	}
}

// checkByTrack reads the file open opens with ReadEventsByTrack in
// batches of size and says how it differs from want and wantErr, the
// events and the error of ReadEvent, grouped by brute force; "" when it
// does not.
func checkByTrack(open func() (*Reader, error), size int, want []trace.Event, wantErr error) string {
	br, err := open()
	if err != nil {
		return err.Error()
	}
	// Short batches only where a chunk of the file or a window ends.
	per := chunkBytes / recordSize
	if br.win != nil {
		per = min(per, (br.win.size-os.Getpagesize())/recordSize)
	}
	times, types, offs := make([]trace.Time, size), make([]trace.TypeID, size), make([]uint32, size)
	dst := make([]trace.Event, size)
	at, batches := 0, 0
	for err == nil {
		var n int
		var tracks []trace.TrackID
		var counts []int32
		n, tracks, counts, err = br.ReadEventsByTrack(times, types, offs, tracks, counts)
		// The events, from their fields and EventBase.
		p := 0
		for k, c := range counts {
			for range c {
				if p >= n {
					return fmt.Sprintf("groups of more than %d events", n)
				}
				e := br.EventBase()
				e.Time, e.Track, e.Type, e.Payload.Off = times[p], tracks[k], types[p], e.Payload.Off+int64(offs[p])
				dst[p] = e
				p++
			}
		}
		if n == 0 && err == nil {
			return fmt.Sprintf("no events and no error at event %d", at)
		}
		if at+n > len(want) {
			return fmt.Sprintf("%d events, more than ReadEvent's %d", at+n, len(want))
		}
		var wantTracks []trace.TrackID
		var wantCounts []int32
		var grouped []trace.Event
		for _, e := range want[at : at+n] {
			if !slices.Contains(wantTracks, e.Track) {
				wantTracks = append(wantTracks, e.Track)
				wantCounts = append(wantCounts, 0)
				for _, f := range want[at : at+n] {
					if f.Track == e.Track {
						grouped = append(grouped, f)
					}
				}
			}
			wantCounts[slices.Index(wantTracks, e.Track)]++
		}
		if !slices.Equal(tracks, wantTracks) || !slices.Equal(counts, wantCounts) || !slices.Equal(dst[:n], grouped) {
			return fmt.Sprintf("the batch at event %d is not ReadEvent's %d events grouped by track", at, n)
		}
		at += n
		batches++
	}
	if at != len(want) {
		return fmt.Sprintf("%d events, want %d", at, len(want))
	}
	if err.Error() != wantErr.Error() {
		return fmt.Sprintf("error %v, want %v", err, wantErr)
	}
	if batches > (len(want)+size-1)/size+(len(want)+per-1)/per+1 {
		return fmt.Sprintf("%d batches for %d events", batches, len(want))
	}
	return ""
}

// TestByTrackFarApart checks that ReadEventsByTrack ends a batch where
// the merging path meets an event whose payload lies 4 GB or more from
// another's (its offsets are 32 bits from EventBase's), and there only:
// two event sections, the second's events after the first's in time,
// with 8 GB of unknown sections between them (read as zeros, never
// stored).
func TestByTrackFarApart(t *testing.T) {
	var w cpeltest.Writer
	tab := w.StringTable("FileStrtab")
	w.EventDefs(tab, []cpeltest.EventDef{{Code: 1, Name: "e", Format: "%d"}})
	w.TrackDefs(tab, []cpeltest.TrackDef{{ID: 1, Format: "a"}, {ID: 2, Format: "b"}})
	recs := func(track uint32) []cpeltest.Record {
		var rs []cpeltest.Record
		for i := range 50 {
			rs = append(rs, cpeltest.Record{Ticks: uint64(i) + 50*uint64(track), Track: track, Code: 1, Datum: uint32(i)})
		}
		return rs
	}
	w.EventList(tab, 1e9, recs(1))
	const gap = 0xF000_0000
	marker := []byte("gap:gap:")
	w.Raw(99, marker)
	w.Raw(99, marker)
	w.EventList(tab, 1e9, recs(2))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	f := spliced{data: data}
	for i := 0; ; {
		k := bytes.Index(data[i:], marker)
		if k < 0 {
			break
		}
		i += k + len(marker)
		binary.BigEndian.PutUint32(data[i-len(marker)-4:], uint32(len(marker)+gap))
		f.at = append(f.at, int64(i))
	}
	f.gap = gap
	size := int64(len(data)) + int64(len(f.at))*gap
	open := func() (*Reader, error) {
		r, err := Format{}.Open(f, size)
		if err != nil {
			return nil, err
		}
		return r.(*Reader), nil
	}
	r, err := open()
	if err != nil {
		t.Fatal(err)
	}
	var want []trace.Event
	for {
		e, err := r.ReadEvent()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		want = append(want, e)
	}
	if len(want) != 100 || want[50].Payload.Off-want[49].Payload.Off < 1<<32 {
		t.Fatalf("%d events: not the file meant", len(want))
	}
	if msg := checkByTrack(open, 1000, want, io.EOF); msg != "" {
		t.Error(msg)
	}
}

// spliced is a file of data with gap zero bytes inserted at each offset
// of data in at (ascending).
type spliced struct {
	data []byte
	at   []int64
	gap  int64
}

func (s spliced) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		o, zero := off+int64(i), false // o: in the file, then in data
		for _, a := range s.at {
			if o < a {
				break
			}
			if o < a+s.gap {
				zero = true
				break
			}
			o -= s.gap
		}
		switch {
		case zero:
			p[i] = 0
		case o >= int64(len(s.data)):
			return i, io.EOF
		default:
			p[i] = s.data[o]
		}
	}
	return len(p), nil
}
