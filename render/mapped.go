package render

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"viewer/trace"
	"viewer/trace/span"
)

// An Index opened from its file (OpenFile) answers viewport queries,
// Tracks, Meta, Stats, markers and stacked-event walks at once, from the
// mapping. What needs the trace.Reader (Details, labels, stacks, field
// and text search, field histograms) and the derived tracks waits for
// Attach, which a background pass calls with a reader it has read the
// trace with; until then those methods return ErrLoading (Labels and
// Stack return nil, Spans nil).

// ErrLoading is returned by the methods of an Index opened from a file
// that need the trace's reader before Attach has given it one.
var ErrLoading = errors.New("render: the trace is still being read; try again shortly")

// attached is what Attach gives an Index opened from a file.
type attached struct {
	r          trace.Reader
	symbols    SymbolSource
	spans      *Spans
	deriveTime time.Duration
	deriveErr  error
}

// attachedState returns what Attach gave an Index opened from a file;
// nil before, and for an Index Build returned.
func (x *Index) attachedState() *attached {
	if x.late == nil {
		return nil
	}
	return x.late.Load()
}

// metaReader stands in for the reader of an Index opened from a file
// before Attach, for the matchers of filters that need only the tables.
type metaReader struct{ m *trace.Meta }

func (r metaReader) Meta() *trace.Meta                        { return r.m }
func (metaReader) ReadEvent() (trace.Event, error)            { return trace.Event{}, ErrLoading }
func (metaReader) Stack(trace.StackID) []uint64               { return nil }
func (metaReader) Labels(trace.LabelsID) []trace.Label        { return nil }
func (metaReader) Details(trace.Event) (trace.Details, error) { return trace.Details{}, ErrLoading }

// heapBytes is Bytes for an Index opened from a file: what it holds on
// the heap besides the mapping.
func (x *Index) heapBytes() int64 {
	n := int64(cap(x.tracks)) * 8
	for _, t := range append(slices.Clip(x.tracks), x.none) {
		if t == nil {
			continue
		}
		n += 200 + int64(cap(t.spill.runs))*24 + int64(cap(t.nodes))*32 + int64(cap(t.cells))*56
		n += int64(cap(t.times.chunks)+cap(t.types.chunks)+cap(t.stacked.chunks)+cap(t.stackedID.chunks)) * 24
		for i := range t.nodes {
			n += int64(cap(t.nodes[i].chunks)) * 24
		}
	}
	for _, m := range x.markers {
		n += int64(cap(m)) * 40
	}
	return n
}

// reader returns the trace's reader, or ErrLoading before Attach.
func (x *Index) reader() (trace.Reader, error) {
	if x.r != nil {
		return x.r, nil
	}
	if a := x.attachedState(); a != nil {
		return a.r, nil
	}
	return nil, ErrLoading
}

// symbolSource returns Options.Symbols (Attach's for an opened Index).
func (x *Index) symbolSource() SymbolSource {
	if a := x.attachedState(); a != nil {
		return a.symbols
	}
	return x.symbols
}

// Attached reports whether the Index has its trace's reader: always for
// an Index Build returned, after Attach for one OpenFile returned.
func (x *Index) Attached() bool {
	_, err := x.reader()
	return err == nil
}

// OpenFile opens an index file written by WriteFile for the trace and
// options key names. It checks the file (the header's and every
// section's CRC-32C, the directory's structure) before it trusts it,
// and fails with ErrStale (wrapped) when the file was written for
// another trace, with other options or by another version, or with
// another error when it is damaged; the caller then builds the index
// again. The Index uses the file's arrays in place in a read-only
// mapping (read into memory where mapping is not available) until Close.
//
// The spill records (a third of the file) are checked in the background
// after OpenFile returns, since only what needs the reader reads them:
// Event, Details and search wait for that check, Attach fails when it
// does, and so do they (see [Index.Attach]). Everything else is checked
// before OpenFile returns.
func OpenFile(name string, key FileKey) (*Index, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	x, later, err := openFile(f, name, key)
	if err != nil {
		f.Close()
		return nil, err
	}
	x.spill.checked = make(chan struct{})
	go func() { // the descriptor is the check's; the mapping outlives it
		defer f.Close()
		defer close(x.spill.checked)
		if err := verifySections(f, later); err != nil {
			x.spill.checkErr = fmt.Errorf("%w (%s)", err, name)
		}
	}()
	return x, nil
}

// openFile is OpenFile but for the spill records' sections, returned in
// later.
func openFile(f *os.File, name string, key FileKey) (x *Index, later []section, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	h, err := readHeader(f, size)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (%s)", err, name)
	}
	if h.key != key {
		return nil, nil, fmt.Errorf("%w: built for another trace or other options (%s)", ErrStale, name)
	}
	var now []section
	for _, s := range h.secs {
		if s.off >= h.spillOff && s.off+s.len <= h.spillOff+h.spillLn {
			later = append(later, s)
		} else {
			now = append(now, s)
		}
	}
	if err := verifySections(f, now); err != nil {
		return nil, nil, fmt.Errorf("%w (%s)", err, name)
	}
	data, unmap, err := mapFile(f, size)
	if err != nil {
		return nil, nil, fmt.Errorf("render: mapping the index file: %w", err)
	}
	x, err = assemble(data, h)
	if err != nil {
		unmap()
		return nil, nil, fmt.Errorf("%w (%s)", err, name)
	}
	adviseRandom(data)
	x.unmap, x.mapping = unmap, data
	return x, later, nil
}

// fileHeader is the decoded header.
type fileHeader struct {
	key               FileKey
	headOff, headLen  int64
	spillOff, spillLn int64
	bodyEnd           int64
	secs              []section
}

var errDamaged = errors.New("render: damaged index file")

func damaged(msg string) error { return fmt.Errorf("%w: %s", errDamaged, msg) }

// readHeader reads and checks the preamble, trailer and header.
func readHeader(f *os.File, size int64) (*fileHeader, error) {
	if size < preambleLen+trailerLen {
		return nil, damaged("too short")
	}
	var pre, tr [16]byte
	if _, err := f.ReadAt(pre[:], 0); err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(tr[:], size-trailerLen); err != nil {
		return nil, err
	}
	if string(pre[:8]) != fileMagic || string(tr[8:]) != fileMagic {
		return nil, damaged("no magic number")
	}
	if v, l := binary.LittleEndian.Uint32(pre[8:]), binary.LittleEndian.Uint32(pre[12:]); v != fileVersion || l != fileLayout {
		return nil, fmt.Errorf("%w: version %d layout %#x, want %d %#x", ErrStale, v, l, fileVersion, fileLayout)
	}
	hl := int64(binary.LittleEndian.Uint32(tr[0:]))
	if hl > maxHeader || hl > size-preambleLen-trailerLen {
		return nil, damaged("header length out of range")
	}
	hb := make([]byte, hl)
	if _, err := f.ReadAt(hb, size-trailerLen-hl); err != nil {
		return nil, err
	}
	if crc32.Checksum(hb, castagnoli) != binary.LittleEndian.Uint32(tr[4:]) {
		return nil, damaged("header checksum mismatch")
	}
	d := &decoder{b: hb}
	if v, l := d.uvarint(), d.uvarint(); v != fileVersion || l != fileLayout {
		return nil, damaged("header version differs from the preamble's")
	}
	h := &fileHeader{}
	h.key.Size = d.varint()
	copy(h.key.SHA256[:], d.raw(32))
	h.key.Options = d.str()
	h.headOff, h.headLen = d.varint(), d.varint()
	h.spillOff, h.spillLn = d.varint(), d.varint()
	h.bodyEnd = d.varint()
	n := d.count(3)
	h.secs = make([]section, n)
	at := int64(preambleLen)
	for i := range h.secs {
		s := section{off: d.varint(), len: d.varint(), crc: uint32(d.uvarint())}
		if s.off != at || s.len <= 0 || s.len > sectionMax {
			return nil, damaged("sections do not tile the body")
		}
		at += s.len
		h.secs[i] = s
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, damaged("trailing bytes in the header")
	}
	if at != h.bodyEnd || h.bodyEnd != size-trailerLen-hl {
		return nil, damaged("sections do not tile the body")
	}
	inBody := func(off, n int64) bool { return off >= preambleLen && n >= 0 && off <= h.bodyEnd && n <= h.bodyEnd-off }
	if !inBody(h.headOff, h.headLen) || !inBody(h.spillOff, h.spillLn) {
		return nil, damaged("head or spill outside the body")
	}
	return h, nil
}

// verifySections checks every section's CRC, reading the file (not the
// mapping, so that checking leaves nothing resident) on every core.
func verifySections(f *os.File, secs []section) error {
	var next atomic.Int64
	var bad atomic.Bool
	var werr error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(secs)) {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for i := next.Add(1) - 1; i < int64(len(secs)) && !bad.Load(); i = next.Add(1) - 1 {
				s := secs[i]
				crc := uint32(0)
				for at := s.off; at < s.off+s.len; {
					k := min(int64(len(buf)), s.off+s.len-at)
					if _, err := f.ReadAt(buf[:k], at); err != nil {
						once.Do(func() { werr = err })
						bad.Store(true)
						return
					}
					crc = crc32.Update(crc, castagnoli, buf[:k])
					at += k
				}
				if crc != s.crc {
					once.Do(func() { werr = damaged(fmt.Sprintf("checksum mismatch in the section at byte %d", s.off)) })
					bad.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return werr
}

// assemble builds the Index over the mapped file data.
func assemble(data []byte, h *fileHeader) (*Index, error) {
	d := &decoder{b: data[h.headOff : h.headOff+h.headLen]}
	x := &Index{none: &track{}, mapped: true, late: new(atomic.Pointer[attached])}
	x.meta = decodeMeta(d)
	st := decodeStats(d)
	x.stats = &st
	x.typeEvents = d.int64s()
	x.stackTypes = d.int64s()
	for k := range x.markers {
		n := d.count(4)
		if n == 0 {
			continue
		}
		ms := make([]Marker, n)
		for i := range ms {
			ms[i] = Marker{Kind: MarkerKind(k), Time: trace.Time(d.varint()), Track: trace.TrackID(d.int(math.MinInt32, math.MaxInt32)), Off: d.varint(), Count: d.varint()}
		}
		x.markers[k] = ms
	}
	x.events = d.varint()
	x.bytes = d.varint()
	x.first = trace.Time(d.varint())
	x.last = trace.Time(d.varint())
	x.clamped = d.varint()
	x.readErr = d.errorText()
	x.deriveErr = d.errorText()
	x.deriveTime = time.Duration(d.varint())
	if d.err != nil {
		return nil, d.err
	}
	body := data[:h.bodyEnd]
	records := data[h.spillOff : h.spillOff+h.spillLn]
	x.spill = &spill{}
	x.spill.mem.Store(&records)
	ntracks := d.count(8)
	var total int64
	for range ntracks {
		id := trace.TrackID(d.int(-1, int64(len(x.meta.Tracks))-1))
		t, err := decodeTrack(d, body, int64(len(records)))
		if err != nil {
			return nil, err
		}
		if d.err != nil {
			return nil, d.err
		}
		if id == trace.NoTrack {
			if x.none.times.len() > 0 {
				return nil, damaged("a track twice")
			}
			x.none = t
		} else {
			for int(id) >= len(x.tracks) {
				x.tracks = append(x.tracks, nil)
			}
			if x.tracks[id] != nil {
				return nil, damaged("a track twice")
			}
			x.tracks[id] = t
		}
		total += int64(t.times.len())
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, damaged("trailing bytes in the head")
	}
	if total != x.events {
		return nil, damaged("the tracks' events do not add up")
	}
	return x, nil
}

// decodeTrack decodes one track's directory entry and makes its columns
// over the body's arrays.
func decodeTrack(d *decoder, body []byte, spillLen int64) (*track, error) {
	n := d.size(MaxTrackEvents)
	t := &track{}
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	times, e := arrayOf[trace.Time](body, d.varint(), n)
	fail(e)
	types, e := arrayOf[uint16](body, d.varint(), n)
	fail(e)
	t.times, t.types = columnOf(times), columnOf(types)
	levels := d.count(2)
	for k := range levels {
		a := d.array()
		if a.n != n>>(k+minLevel) || a.n == 0 {
			fail(damaged("pyramid level of the wrong size"))
		}
		nodes, e := arrayOf[node](body, a.off, a.n)
		fail(e)
		t.nodes = append(t.nodes, columnOf(nodes))
	}
	if n>>(levels+minLevel) != 0 {
		fail(damaged("pyramid levels missing"))
	}
	t.cellBase = uint8(d.int(0, 63))
	for range d.count(4) {
		lv := cellLevel{origin: d.varint()}
		m := d.size(len(body) / 2)
		firsts, e := arrayOf[int32](body, d.varint(), m+1)
		fail(e)
		types, e := arrayOf[uint16](body, d.varint(), m)
		fail(e)
		lv.firsts, lv.types = firsts, types
		t.cells = append(t.cells, lv)
	}
	sa, sia := d.array(), d.array()
	if sia.n > n || (sa.n != 0 && sa.n != sia.n) {
		fail(damaged("stacked columns of the wrong size"))
	}
	stacked, e := arrayOf[int32](body, sa.off, sa.n)
	fail(e)
	stackedID, e := arrayOf[trace.StackID](body, sia.off, sia.n)
	fail(e)
	t.stacked, t.stackedID = columnOf(stacked), columnOf(stackedID)
	t.spill.n = d.size(MaxTrackEvents)
	ra := d.array()
	raw, e := arrayOf[int64](body, ra.off, 3*ra.n)
	fail(e)
	if t.spill.n != n {
		fail(damaged("spill records of the wrong number"))
	}
	if err != nil || d.err != nil {
		return nil, err
	}
	t.spill.runs = make([]run, ra.n)
	for i := range t.spill.runs {
		r := run{first: int(raw[3*i]), off: raw[3*i+1], size: int32(raw[3*i+2])}
		switch {
		case raw[3*i] < 0 || raw[3*i] >= int64(n) || (i == 0 && r.first != 0) || (i > 0 && r.first <= t.spill.runs[i-1].first):
			return nil, damaged("spill runs out of order")
		case r.off < 0 || raw[3*i+2] < 0 || raw[3*i+2] > math.MaxInt32 || r.off > spillLen || int64(r.size) > spillLen-r.off:
			return nil, damaged("spill run outside the records")
		}
		t.spill.runs[i] = r
	}
	if n > 0 && len(t.spill.runs) == 0 {
		return nil, damaged("no spill runs")
	}
	return t, nil
}

// arrayOf returns the n elements of type T at body[off:], in place where
// the machine is little-endian.
func arrayOf[T fixed](body []byte, off int64, n int) ([]T, error) {
	var z T
	size := int64(unsafe.Sizeof(z))
	if n < 0 || off < preambleLen || off%8 != 0 || off > int64(len(body)) || int64(n) > (int64(len(body))-off)/size {
		return nil, damaged("array outside the body")
	}
	if n == 0 {
		return nil, nil
	}
	b := body[off : off+int64(n)*size]
	if littleEndian() {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), nil
	}
	s := make([]T, n)
	for i := range s {
		switch size {
		case 2:
			s[i] = T(binary.LittleEndian.Uint16(b[2*i:]))
		case 4:
			s[i] = T(binary.LittleEndian.Uint32(b[4*i:]))
		default:
			s[i] = T(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return s, nil
}

// columnOf makes a column whose chunks are slices of s.
func columnOf[T any](s []T) column[T] {
	c := column[T]{n: len(s)}
	for lo := 0; lo < len(s); lo += chunkLen {
		hi := min(lo+chunkLen, len(s))
		c.chunks = append(c.chunks, s[lo:hi:hi])
	}
	return c
}

// Attach reads the trace with r, the reader of the trace an Index opened
// from a file was built from (a fresh one, not yet read), to its end,
// once the file's spill records have passed their check (it fails when
// they have not),
// showing every event to opts.Symbols and opts.Derive as Build does, and
// then gives the Index the reader, the symbol source and the derived
// tracks: Details, labels, stacks and search work from then on. It fails
// when the trace does not hold the events the index does, when ctx ends,
// or on a reader error Build did not meet. It is called once, from any
// goroutine, while the Index serves queries; other options are ignored.
func (x *Index) Attach(ctx context.Context, r trace.Reader, opts Options) (err error) {
	if x.r != nil || x.late == nil || x.late.Load() != nil {
		return errors.New("render: internal error: the index has a reader already")
	}
	if err := x.spill.verified(); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: the %s reader panicked: %v", x.meta.Format, p)
		}
	}()
	a := &attached{r: r, symbols: opts.Symbols}
	var drv *span.Driver
	if opts.Derive != nil {
		drv = span.NewDriver(r, opts.Derive)
	}
	br, _ := r.(batchReader)
	evs := make([]trace.Event, batchEvents)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, rerr := 0, error(nil)
		if br != nil {
			k, rerr = br.ReadEvents(evs)
			k = min(max(k, 0), len(evs))
		} else {
			for k < len(evs) {
				e, err := r.ReadEvent()
				if err != nil {
					rerr = err
					break
				}
				evs[k] = e
				k++
			}
		}
		tracks := trace.TrackID(len(r.Meta().Tracks))
		for i := range evs[:k] {
			e := &evs[i]
			if e.Track < 0 || e.Track >= tracks {
				e.Track = trace.NoTrack
			}
			if a.symbols != nil {
				a.symbols.Observe(r, *e)
			}
		}
		if drv != nil && a.deriveErr == nil {
			t0 := time.Now()
			a.deriveErr = observeAll(drv, evs[:k])
			a.deriveTime += time.Since(t0)
		}
		n += int64(k)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if _, ok := errors.AsType[*trace.FormatError](rerr); !ok || x.readErr == nil || rerr.Error() != x.readErr.Error() {
				return fmt.Errorf("render: reading the trace again: %w", rerr)
			}
			break
		}
	}
	if n != x.events {
		return fmt.Errorf("render: the trace holds %d events, its index file %d", n, x.events)
	}
	if a.symbols != nil {
		a.symbols.Finish(r)
	}
	if drv != nil && a.deriveErr == nil {
		t0 := time.Now()
		a.spans, a.deriveErr = finishAll(drv)
		a.deriveTime += time.Since(t0)
	}
	if !x.late.CompareAndSwap(nil, a) {
		return errors.New("render: internal error: Attach called twice")
	}
	return nil
}

// observeAll shows events to a deriver; a panic becomes the error that
// loses the derived tracks (as in Build).
func observeAll(drv *span.Driver, evs []trace.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: deriving slice tracks failed: %v", p)
		}
	}()
	for i := range evs {
		drv.Observe(evs[i])
	}
	return nil
}

func finishAll(drv *span.Driver) (s *Spans, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("internal error: deriving slice tracks failed: %v", p)
		}
	}()
	return NewSpans(drv.Finish()), nil
}
