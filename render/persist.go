package render

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"unsafe"

	"viewer/trace"
	"viewer/trace/export"
)

// Index files: an Index written once Build ends and mapped when the trace
// is opened again (issue #21), so that the first frame after a restart
// comes from the file instead of from reading the trace.
//
// # Layout
//
// All integers are little-endian.
//
//	preamble  16 bytes: magic "viewerix", version (uint32), layout (uint32)
//	body      the arrays, the spill records, the head
//	header    the file's table of contents (encoded as the head is)
//	trailer   16 bytes: header length (uint32), its CRC-32C (uint32), magic
//
// The body holds, per track, the columns (times, types), the pyramid's
// node columns, the time cells, the stacked columns and the spill run
// table as plain arrays, each starting at a multiple of 8 bytes, so that
// an opened Index uses them in place in the mapping (columns of chunks
// that are slices of the mapped array); then the spill file's bytes, as
// they were (runs are located by the run tables); then the head: Meta,
// Stats, per-type counts, markers and the directory of every track's
// arrays, in a small varint encoding (encoder/decoder below; gob would
// lose the difference between a nil and an empty schema, which search
// relies on). The header names the trace the index was built from (size
// and SHA-256), the build options' fingerprint, where the head and the
// spill records lie, and the sections: the body cut into pieces of at
// most sectionMax bytes, each with its CRC-32C, tiling it with no gap, so
// that every byte of the file is covered by a checksum (the preamble and
// trailer are compared literally, the header by the trailer's CRC).
//
// OpenFile checks the sections' CRCs on every core, reading with pread
// rather than through the mapping (so that the check does not leave the
// file resident; CRC-32C itself runs at about 20 GB/s here), then maps
// the file and checks the directory's structure (every array inside the
// body, lengths consistent with the track's event count). The arrays'
// contents (sorted times, cell indexes) are trusted once their checksums
// match, as the file is written by the viewer itself. The sections that
// hold only spill records, a third of the file, are checked in the
// background after OpenFile returns: only Event, Details and search read
// them, and they wait for the check (as does Attach, which fails when it
// does). Checking everything first took 0.5 s for a 100M-event file
// (2.9 GB, in the page cache, on 2 busy cores) and up to 1.4 s under a
// load of 7; the arrays alone take 0.2–0.3 s.
//
// A file is written to a temporary name in its directory, synced,
// renamed over the final name and the directory synced, so that a crash
// leaves either the old file, the new one or a temporary one that is
// never opened.

const (
	fileMagic = "viewerix"
	// fileVersion 2: spill records begin with a mask of the fields that
	// differ from their base (spill.go).
	fileVersion = 2
	// fileLayout records the constants the arrays' meaning depends on;
	// a file written with other values is rebuilt.
	fileLayout = chunkBits | minLevel<<8 | nSlots<<16 | spillBlock<<24
	// sectionMax is the most bytes of one checksummed section.
	sectionMax  = 32 << 20
	preambleLen = 16
	trailerLen  = 16
	// maxHeader bounds the header a file may claim (the sections of a
	// 1 TB file take a few hundred KB).
	maxHeader = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileKey identifies what an index file was built from: the trace (its
// size and SHA-256) and a fingerprint of the build options that change
// what the index holds (e.g. whether stacks are symbolized). A file with
// another key is not opened.
type FileKey struct {
	Size    int64
	SHA256  [32]byte
	Options string
}

// ErrStale is returned by OpenFile for an index file built by another
// version of the viewer, from another trace or with other options.
var ErrStale = errors.New("render: the index file is out of date")

// WriteFile writes x to the index file name (see the Layout comment),
// atomically: to a temporary file in the same directory, synced and
// renamed. x must be an Index Build returned (or OpenFile opened), not a
// snapshot. It may run while x serves queries; two WriteFile calls on
// one Index must not run at once.
func (x *Index) WriteFile(name string, key FileKey) error {
	return x.writeFile(name, key, sectionMax)
}

// writeFile is WriteFile with sections of at most secMax bytes (tests
// make them small).
func (x *Index) writeFile(name string, key FileKey, secMax int64) (err error) {
	if x.growing {
		return errors.New("render: internal error: writing a snapshot")
	}
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".index-*.tmp")
	if err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	fw := &fileWriter{w: bufio.NewWriterSize(f, 1<<20), key: key, secMax: secMax, store: x.store}
	if err := x.writeBody(fw); err != nil {
		return err
	}
	if err := fw.w.Flush(); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// fileWriter writes the body, cutting it into checksummed sections.
type fileWriter struct {
	w    *bufio.Writer
	off  int64 // bytes written, from the file's start
	secs []section
	cur  section
	err  error
	key  FileKey
	buf  []byte // scratch
	// secMax is the most bytes of a section (sectionMax).
	secMax int64
	// store is the Index's store (nil for none): what lies in it is
	// read from its file, so that writing does not map the whole index
	// (see load); sbuf holds it.
	store *store
	sbuf  []byte
}

// section is a checksummed piece of the body.
type section struct {
	off, len int64
	crc      uint32
}

func (fw *fileWriter) write(p []byte) {
	if fw.err != nil {
		return
	}
	if _, err := fw.w.Write(p); err != nil {
		fw.err = fmt.Errorf("render: writing the index file: %w", err)
		return
	}
	if fw.off < preambleLen { // the preamble is not in a section
		fw.off += int64(len(p))
		fw.cur.off = fw.off
		return
	}
	for len(p) > 0 {
		k := min(int64(len(p)), fw.secMax-fw.cur.len)
		fw.cur.crc = crc32.Update(fw.cur.crc, castagnoli, p[:k])
		fw.cur.len += k
		fw.off += k
		p = p[k:]
		if fw.cur.len == fw.secMax {
			fw.endSection()
		}
	}
}

func (fw *fileWriter) endSection() {
	if fw.cur.len > 0 {
		fw.secs = append(fw.secs, fw.cur)
	}
	fw.cur = section{off: fw.off}
}

// align pads the body to a multiple of 8 bytes.
func (fw *fileWriter) align() {
	var zero [8]byte
	if r := fw.off % 8; r != 0 {
		fw.write(zero[:8-r])
	}
}

// fixed is the element types of the index's arrays.
type fixed interface {
	~int32 | ~int64 | ~uint16 | ~uint64
}

// littleEndian reports whether the machine stores integers as the file
// does, so that arrays are used in place.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// writeArray writes s at the next multiple of 8 and returns its offset.
func writeArray[T fixed](fw *fileWriter, s []T) int64 {
	fw.align()
	off := fw.off
	writeElems(fw, s)
	return off
}

// writeElems writes s where the body is.
func writeElems[T fixed](fw *fileWriter, s []T) {
	if len(s) == 0 {
		return
	}
	size := int(unsafe.Sizeof(s[0]))
	if littleEndian() {
		b := bytesOf(s)
		for len(b) > 0 {
			k := min(len(b), 1<<20)
			fw.write(load(fw.store, b[:k], &fw.sbuf))
			b = b[k:]
		}
		return
	}
	b := fw.buf[:0]
	for _, v := range s {
		switch size {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	fw.write(b)
	fw.buf = b
}

// writeColumn writes a column's elements as one array.
func writeColumn[T fixed](fw *fileWriter, c *column[T]) int64 {
	fw.align()
	off := fw.off
	for k := range c.chunks {
		if k<<chunkBits >= c.n {
			break
		}
		writeElems(fw, c.chunk(k))
	}
	return off
}

// fileTrack is the directory entry of one track's arrays.
type fileTrack struct {
	id           trace.TrackID
	n            int
	times, types int64
	nodes        []fileArray // per level: count, offset
	cellBase     uint8
	cells        []fileCells
	stacked      fileArray
	stackedID    fileArray
	spillN       int
	runs         fileArray // 3 int64 per run: first, offset, size
}

type fileArray struct {
	n   int
	off int64
}

type fileCells struct {
	origin int64
	m      int // cells (types); firsts has m+1
	firsts int64
	types  int64
}

// writeBody writes the preamble and body; the header and trailer follow.
func (x *Index) writeBody(fw *fileWriter) error {
	var pre [preambleLen]byte
	copy(pre[:], fileMagic)
	binary.LittleEndian.PutUint32(pre[8:], fileVersion)
	binary.LittleEndian.PutUint32(pre[12:], fileLayout)
	fw.write(pre[:])
	// Per track its large arrays; then the time cells of every track,
	// coarsest level first, and the run tables of every track: what
	// opening the file and drawing a zoomed-out frame read lies
	// together, so that the pages they map (the system maps a file by
	// folios of up to a few hundred KB) are few.
	var dir []fileTrack
	var tracks []*track
	add := func(id trace.TrackID, t *track) {
		if t == nil || t.times.len() == 0 {
			return
		}
		ft := fileTrack{id: id, n: t.times.len(), cellBase: t.cellBase, spillN: t.spill.n}
		ft.times = writeColumn(fw, &t.times)
		ft.types = writeColumn(fw, &t.types)
		for k := range t.nodes {
			ft.nodes = append(ft.nodes, fileArray{n: t.nodes[k].len(), off: writeColumn(fw, &t.nodes[k])})
		}
		ft.stacked = fileArray{n: t.stacked.len(), off: writeColumn(fw, &t.stacked)}
		ft.stackedID = fileArray{n: t.stackedID.len(), off: writeColumn(fw, &t.stackedID)}
		ft.cells = make([]fileCells, len(t.cells))
		dir = append(dir, ft)
		tracks = append(tracks, t)
	}
	add(trace.NoTrack, x.none)
	for i, t := range x.tracks {
		add(trace.TrackID(i), t)
	}
	for level := 63; level >= 0; level-- {
		for i, t := range tracks {
			k := level - int(t.cellBase)
			if k < 0 || k >= len(t.cells) {
				continue
			}
			c := &t.cells[k]
			fc := fileCells{origin: c.origin, m: len(c.types)}
			fc.firsts = writeArray(fw, c.firsts)
			fc.types = writeArray(fw, c.types)
			dir[i].cells[k] = fc
		}
	}
	for i, t := range tracks {
		runs := make([]int64, 0, 3*len(t.spill.runs))
		for _, r := range t.spill.runs {
			runs = append(runs, int64(r.first), r.off, int64(r.size))
		}
		dir[i].runs = fileArray{n: len(t.spill.runs), off: writeArray(fw, runs)}
	}
	// The spill records, as the spill file holds them.
	fw.align()
	spillOff := fw.off
	spillLen := x.spill.size()
	buf := make([]byte, 1<<20)
	for at := int64(0); at < spillLen && fw.err == nil; {
		k := min(int64(len(buf)), spillLen-at)
		if err := x.spill.readAt(buf[:k], at); err != nil {
			return fmt.Errorf("render: reading the index spill file: %w", err)
		}
		fw.write(buf[:k])
		at += k
	}
	headOff := fw.off
	var e encoder
	x.encodeHead(&e, dir)
	fw.write(e.b)
	return fw.finish(headOff, fw.off-headOff, spillOff, spillLen)
}

// finish ends the body and writes the header and trailer.
func (fw *fileWriter) finish(headOff, headLen, spillOff, spillLen int64) error {
	fw.endSection()
	bodyEnd := fw.off
	var h encoder
	h.uvarint(fileVersion)
	h.uvarint(fileLayout)
	h.varint(fw.key.Size)
	h.raw(fw.key.SHA256[:])
	h.str(fw.key.Options)
	h.varint(headOff)
	h.varint(headLen)
	h.varint(spillOff)
	h.varint(spillLen)
	h.varint(bodyEnd)
	h.uvarint(uint64(len(fw.secs)))
	for _, s := range fw.secs {
		h.varint(s.off)
		h.varint(s.len)
		h.uvarint(uint64(s.crc))
	}
	var tr [trailerLen]byte
	binary.LittleEndian.PutUint32(tr[0:], uint32(len(h.b)))
	binary.LittleEndian.PutUint32(tr[4:], crc32.Checksum(h.b, castagnoli))
	copy(tr[8:], fileMagic)
	if fw.err != nil {
		return fw.err
	}
	if _, err := fw.w.Write(h.b); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	if _, err := fw.w.Write(tr[:]); err != nil {
		return fmt.Errorf("render: writing the index file: %w", err)
	}
	return nil
}

// encodeHead encodes what the Index holds besides the arrays.
func (x *Index) encodeHead(e *encoder, dir []fileTrack) {
	encodeMeta(e, x.meta)
	st := x.Stats()
	encodeStats(e, &st)
	e.int64s(x.TypeEvents())
	e.int64s(x.stackTypes)
	for k := range x.markers {
		ms := x.markers[k]
		e.uvarint(uint64(len(ms)))
		for _, m := range ms {
			e.varint(int64(m.Time))
			e.varint(int64(m.Track))
			e.varint(m.Off)
			e.varint(m.Count)
		}
	}
	e.varint(x.events)
	e.varint(x.bytes)
	e.varint(int64(x.first))
	e.varint(int64(x.last))
	e.varint(x.clamped)
	e.errorText(x.readErr)
	e.errorText(x.DeriveErr())
	e.varint(int64(x.DeriveTime()))
	e.uvarint(uint64(len(dir)))
	for _, t := range dir {
		e.varint(int64(t.id))
		e.uvarint(uint64(t.n))
		e.varint(t.times)
		e.varint(t.types)
		e.uvarint(uint64(len(t.nodes)))
		for _, a := range t.nodes {
			e.array(a)
		}
		e.varint(int64(t.cellBase))
		e.uvarint(uint64(len(t.cells)))
		for _, c := range t.cells {
			e.varint(c.origin)
			e.uvarint(uint64(c.m))
			e.varint(c.firsts)
			e.varint(c.types)
		}
		e.array(t.stacked)
		e.array(t.stackedID)
		e.uvarint(uint64(t.spillN))
		e.array(t.runs)
	}
}

// encoder is the head's and header's encoding: varints, strings with
// their length, slices with their length + 1 (0: nil).
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) raw(p []byte)     { e.b = append(e.b, p...) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) array(a fileArray) {
	e.uvarint(uint64(a.n))
	e.varint(a.off)
}

// length encodes a slice's length, keeping nil apart from empty.
func (e *encoder) length(n int, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

func (e *encoder) strs(s []string) {
	e.length(len(s), s == nil)
	for _, v := range s {
		e.str(v)
	}
}

func (e *encoder) int64s(s []int64) {
	e.length(len(s), s == nil)
	for _, v := range s {
		e.varint(v)
	}
}

func (e *encoder) errorText(err error) {
	if err == nil {
		e.uvarint(0)
		return
	}
	e.uvarint(1)
	e.str(err.Error())
}

func encodeMeta(e *encoder, m *trace.Meta) {
	e.str(m.Format)
	e.varint(int64(m.Version))
	e.varint(int64(m.PointerSize))
	e.uvarint(m.Clock.TicksPerSecond)
	e.varint(m.Clock.OriginTicks)
	wall, _ := m.Clock.Wall.MarshalBinary() // fails only for offsets of fractional minutes
	e.str(string(wall))
	e.length(len(m.Info), m.Info == nil)
	for _, kv := range m.Info {
		e.str(kv.Key)
		e.str(kv.Value)
	}
	e.length(len(m.Tracks), m.Tracks == nil)
	for _, t := range m.Tracks {
		e.varint(int64(t.Kind))
		e.str(t.Name)
		e.varint(t.PID)
		e.varint(t.TID)
		e.varint(int64(t.CPU))
		e.varint(int64(t.Parent))
		e.varint(t.Code)
		e.strs(t.Names)
	}
	e.length(len(m.Types), m.Types == nil)
	for _, t := range m.Types {
		e.str(t.Provider)
		e.str(t.Name)
		e.varint(t.ID)
		e.varint(int64(t.Version))
		e.varint(int64(t.Level))
		e.varint(int64(t.Opcode))
		e.uvarint(t.Keywords)
		encodeFields(e, t.Fields)
		e.str(t.Message)
	}
	e.length(len(m.Lost), m.Lost == nil)
	for _, g := range m.Lost {
		e.varint(int64(g.Time))
		e.varint(int64(g.Track))
		e.varint(g.Count)
	}
	e.length(len(m.Markers), m.Markers == nil)
	for _, mk := range m.Markers {
		e.varint(int64(mk.Kind))
		e.varint(int64(mk.Time))
		e.varint(mk.Off)
	}
	e.strs(m.Notices)
	e.uvarint(uint64(m.Has))
}

func encodeFields(e *encoder, fs []trace.FieldSpec) {
	e.length(len(fs), fs == nil)
	for _, f := range fs {
		e.str(f.Name)
		e.str(f.Type)
		encodeFields(e, f.Fields)
	}
}

func encodeStats(e *encoder, s *export.Stats) {
	e.str(s.Format)
	e.varint(int64(s.Version))
	e.varint(int64(s.PointerSize))
	e.varint(s.Events)
	e.uvarint(b2u(s.Truncated))
	e.varint(s.TruncatedAt)
	e.str(s.Error)
	e.varint(s.LostEvents)
	e.varint(s.FirstNS)
	e.varint(s.LastNS)
	e.varint(int64(s.Tracks))
	e.length(len(s.Counts), s.Counts == nil)
	for _, c := range s.Counts {
		e.str(c.Provider)
		e.str(c.Event)
		e.varint(c.ID)
		e.varint(int64(c.Version))
		e.varint(c.Count)
	}
	if s.Frames == nil {
		e.uvarint(0)
	} else {
		e.uvarint(1)
		e.varint(s.Frames.Total)
		e.varint(s.Frames.Resolved)
	}
	e.strs(s.Notices)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// decoder reads what encoder wrote, with a sticky error: every length is
// checked against the bytes left before anything is allocated.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New("render: damaged index file: " + msg)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int decodes a varint that must fit an int (and an int32 where lim says).
func (d *decoder) int(lo, hi int64) int64 {
	v := d.varint()
	if v < lo || v > hi {
		d.fail("value out of range")
		return 0
	}
	return v
}

// count decodes a count of items of at least min bytes each.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if v > uint64(len(d.b))/uint64(max(min, 1)) {
		d.fail("count beyond the data")
		return 0
	}
	return int(v)
}

// size decodes a uvarint of at most hi.
func (d *decoder) size(hi int) int {
	v := d.uvarint()
	if v > uint64(hi) {
		d.fail("size out of range")
		return 0
	}
	return int(v)
}

// length decodes a slice length written by encoder.length; isNil for 0.
func (d *decoder) length(min int) (n int, isNil bool) {
	v := d.uvarint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b))/uint64(max(min, 1)) {
		d.fail("length beyond the data")
		return 0, true
	}
	return int(v - 1), false
}

func (d *decoder) raw(n int) []byte {
	if n > len(d.b) {
		d.fail("short")
		return make([]byte, n)
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string {
	n := d.count(1)
	return string(d.raw(n))
}

// decodeList decodes a list written by its length (nil for a nil list)
// and elements that take at least minBytes bytes each, each by elem.
func decodeList[T any](d *decoder, minBytes int, elem func(*T)) []T {
	n, isNil := d.length(minBytes)
	if isNil {
		return nil
	}
	s := make([]T, n)
	for i := range s {
		elem(&s[i])
	}
	return s
}

func (d *decoder) strs() []string {
	return decodeList(d, 1, func(s *string) { *s = d.str() })
}

func (d *decoder) int64s() []int64 {
	return decodeList(d, 1, func(v *int64) { *v = d.varint() })
}

func (d *decoder) array() fileArray {
	n := d.uvarint()
	off := d.varint()
	if n > math.MaxInt32 {
		d.fail("array too long")
	}
	return fileArray{n: int(n), off: off}
}

func (d *decoder) errorText() error {
	if d.uvarint() == 0 {
		return nil
	}
	return errors.New(d.str())
}

func decodeMeta(d *decoder) *trace.Meta {
	m := &trace.Meta{}
	m.Format = d.str()
	m.Version = int(d.int(math.MinInt32, math.MaxInt32))
	m.PointerSize = int(d.int(math.MinInt32, math.MaxInt32))
	m.Clock.TicksPerSecond = d.uvarint()
	m.Clock.OriginTicks = d.varint()
	if err := m.Clock.Wall.UnmarshalBinary(d.raw(d.count(1))); err != nil {
		d.fail("bad wall time")
	}
	m.Info = decodeList(d, 2, func(kv *trace.KeyValue) { *kv = trace.KeyValue{Key: d.str(), Value: d.str()} })
	m.Tracks = decodeList(d, 8, func(t *trace.Track) {
		t.Kind = trace.TrackKind(d.int(0, math.MaxUint8))
		t.Name = d.str()
		t.PID = d.varint()
		t.TID = d.varint()
		t.CPU = int32(d.int(math.MinInt32, math.MaxInt32))
		t.Parent = trace.TrackID(d.int(math.MinInt32, math.MaxInt32))
		t.Code = d.varint()
		t.Names = d.strs()
	})
	m.Types = decodeList(d, 10, func(t *trace.EventType) {
		t.Provider = d.str()
		t.Name = d.str()
		t.ID = d.varint()
		t.Version = int(d.int(math.MinInt32, math.MaxInt32))
		t.Level = int(d.int(math.MinInt32, math.MaxInt32))
		t.Opcode = int(d.int(math.MinInt32, math.MaxInt32))
		t.Keywords = d.uvarint()
		t.Fields = decodeFields(d, 0)
		t.Message = d.str()
	})
	m.Lost = decodeList(d, 3, func(g *trace.Gap) {
		*g = trace.Gap{Time: trace.Time(d.varint()), Track: trace.TrackID(d.int(math.MinInt32, math.MaxInt32)), Count: d.varint()}
	})
	m.Markers = decodeList(d, 3, func(mk *trace.Marker) {
		*mk = trace.Marker{Kind: trace.MarkerKind(d.int(0, math.MaxUint8)), Time: trace.Time(d.varint()), Off: d.varint()}
	})
	m.Notices = d.strs()
	m.Has = trace.Header(d.uvarint())
	return m
}

// maxFieldDepth bounds the nesting of field schemas decoded.
const maxFieldDepth = 64

func decodeFields(d *decoder, depth int) []trace.FieldSpec {
	return decodeList(d, 3, func(f *trace.FieldSpec) {
		if depth > maxFieldDepth { // a non-empty list this deep
			d.fail("field schemas nested too deep")
			return
		}
		f.Name = d.str()
		f.Type = d.str()
		f.Fields = decodeFields(d, depth+1)
	})
}

func decodeStats(d *decoder) export.Stats {
	var s export.Stats
	s.Format = d.str()
	s.Version = int(d.int(math.MinInt32, math.MaxInt32))
	s.PointerSize = int(d.int(math.MinInt32, math.MaxInt32))
	s.Events = d.varint()
	s.Truncated = d.uvarint() != 0
	s.TruncatedAt = d.varint()
	s.Error = d.str()
	s.LostEvents = d.varint()
	s.FirstNS = d.varint()
	s.LastNS = d.varint()
	s.Tracks = int(d.int(0, math.MaxInt32))
	s.Counts = decodeList(d, 5, func(c *export.TypeCount) {
		c.Provider = d.str()
		c.Event = d.str()
		c.ID = d.varint()
		c.Version = int(d.int(math.MinInt32, math.MaxInt32))
		c.Count = d.varint()
	})
	if d.uvarint() != 0 {
		s.Frames = &export.FrameCount{Total: d.varint(), Resolved: d.varint()}
	}
	s.Notices = d.strs()
	return s
}
