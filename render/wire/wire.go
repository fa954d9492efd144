// Package wire encodes viewport replies and session tables as compact
// binary frames for the browser, and decodes them again (for tests and Go
// clients). FORMAT.md beside this file is the specification the
// JavaScript decoder follows.
//
// Frames are little-endian, every field is 4 bytes wide (or a pair of
// them) and every array starts at a multiple of 4 bytes, so a browser
// reads columns with typed arrays (Float32Array, Uint32Array, Int32Array)
// over the frame's ArrayBuffer without copying. Times inside a reply are
// float32 offsets from the reply's start in units of its bucket width, so
// JavaScript never handles absolute nanoseconds as a Number.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"viewer/render"
	"viewer/trace"
)

// Version is the format version in every frame header.
const Version = 1

// Kind says what a frame holds. The set may grow.
type Kind uint8

const (
	KindBad    Kind = iota
	KindTables      // the session's event-type and track name tables
	KindReply       // the answer to one viewport request
)

// HeaderSize is the size of the frame header.
const HeaderSize = 16

// MaxFrame is the largest frame Decode accepts.
const MaxFrame = 1 << 30

// Frame is one decoded frame: exactly one of Tables and Reply is set,
// as Kind says.
type Frame struct {
	Kind   Kind
	Seq    uint32 // the request's sequence number, echoed
	Tables *Tables
	Reply  *Reply
}

// Tables are the names a session's replies refer to by index: event types
// by trace.TypeID (Types[id]) and tracks by trace.TrackID.
type Tables struct {
	Types  []string
	Tracks []TrackName
}

// TrackName is one track of the tables.
type TrackName struct {
	ID     int32 // trace.TrackID; -1 for events without a track
	Parent int32 // the process track of a thread, or -1
	Name   string
}

// Reply is a viewport reply: the wire form of a render.Slice.
type Reply struct {
	Start   int64  // time of bucket 0 in ns (read as a BigInt in JavaScript)
	Res     int64  // bucket width in ns, a power of two
	Buckets uint32 // number of buckets
	Micros  uint32 // server time spent answering, in microseconds
	Tracks  []TrackItems
	Markers Markers
}

// TrackItems is one track's items as columns of equal length.
type TrackItems struct {
	Track int32
	X     []float32 // position from Start in buckets: the bucket index for an aggregate, the exact offset for an event
	Count []uint32  // events in the bucket; 1 for an individual event
	First []uint32  // track index of the bucket's first event
	Type  []int32   // event type, or the bucket's dominant type; -1 when unknown
}

// Markers are the reply's markers as columns of equal length.
type Markers struct {
	X     []float32 // position from Start in buckets
	Kind  []uint32  // render.MarkerKind
	Track []int32   // track of a lost-event gap, else -1
	Count []uint32  // markers of this kind merged into the bucket
	Lost  []uint32  // events lost (MarkerLost; saturates at 2^32-1), else 0
}

// NewReply converts a slice; took is the time the query took.
func NewReply(s *render.Slice, took time.Duration) *Reply {
	r := &Reply{
		Start:   int64(s.Start),
		Res:     s.Res,
		Buckets: uint32(s.Buckets),
		Micros:  uint32(min(took.Microseconds(), math.MaxUint32)),
		Tracks:  make([]TrackItems, len(s.Tracks)),
	}
	res := float64(s.Res)
	for k, ts := range s.Tracks {
		n := len(ts.Items)
		t := TrackItems{Track: int32(ts.Track), X: make([]float32, n), Count: make([]uint32, n), First: make([]uint32, n), Type: make([]int32, n)}
		for i, it := range ts.Items {
			t.X[i] = float32(float64(it.Bucket))
			if it.Count == 1 {
				t.X[i] = float32(float64(it.Time-s.Start) / res)
			}
			t.Count[i] = uint32(it.Count)
			t.First[i] = uint32(it.First)
			t.Type[i] = int32(it.Type)
		}
		r.Tracks[k] = t
	}
	n := len(s.Markers)
	m := Markers{X: make([]float32, n), Kind: make([]uint32, n), Track: make([]int32, n), Count: make([]uint32, n), Lost: make([]uint32, n)}
	for i, mi := range s.Markers {
		m.X[i] = float32(float64(mi.Marker.Time-s.Start) / res)
		m.Kind[i] = uint32(mi.Marker.Kind)
		m.Track[i] = int32(mi.Marker.Track)
		m.Count[i] = uint32(mi.Count)
		m.Lost[i] = uint32(max(0, min(mi.Marker.Count, math.MaxUint32)))
	}
	r.Markers = m
	return r
}

// NewTables returns the tables of a trace: every event type, and the
// given tracks.
func NewTables(m *trace.Meta, tracks []trace.TrackID) *Tables {
	t := &Tables{Types: make([]string, len(m.Types))}
	for i, et := range m.Types {
		name := et.Name
		if name == "" {
			name = "#" + strconv.FormatInt(et.ID, 10)
		}
		if et.Provider != "" {
			name = et.Provider + "/" + name
		}
		t.Types[i] = name
	}
	for _, id := range tracks {
		tn := TrackName{ID: int32(id), Parent: -1, Name: "(no track)"}
		if id >= 0 && int(id) < len(m.Tracks) {
			tr := m.Tracks[id]
			tn.Parent, tn.Name = int32(tr.Parent), tr.Name
			if tn.Name == "" {
				tn.Name = tr.Kind.String() + " " + strconv.Itoa(int(id))
			}
		}
		t.Tracks = append(t.Tracks, tn)
	}
	return t
}

var le = binary.LittleEndian

func appendHeader(dst []byte, k Kind, seq uint32) []byte {
	dst = append(dst, 'V', 'W', Version, byte(k))
	dst = le.AppendUint32(dst, seq)
	return le.AppendUint32(le.AppendUint32(dst, 0), 0) // body length, reserved
}

// finish writes the body length into the header at h.
func finish(dst []byte, h int) []byte {
	le.PutUint32(dst[h+8:], uint32(len(dst)-h-HeaderSize))
	return dst
}

// AppendTables appends a tables frame.
func AppendTables(dst []byte, seq uint32, t *Tables) []byte {
	h := len(dst)
	dst = appendHeader(dst, KindTables, seq)
	dst = appendStrings(dst, t.Types)
	dst = le.AppendUint32(dst, uint32(len(t.Tracks)))
	names := make([]string, len(t.Tracks))
	for i, tr := range t.Tracks {
		dst = le.AppendUint32(dst, uint32(tr.ID))
		names[i] = tr.Name
	}
	for _, tr := range t.Tracks {
		dst = le.AppendUint32(dst, uint32(tr.Parent))
	}
	dst = appendStrings(dst, names)
	return finish(dst, h)
}

// appendStrings appends u32 count, u32 byte lengths, the bytes, and zero
// padding to a multiple of 4.
func appendStrings(dst []byte, ss []string) []byte {
	dst = le.AppendUint32(dst, uint32(len(ss)))
	for _, s := range ss {
		dst = le.AppendUint32(dst, uint32(len(s)))
	}
	n := 0
	for _, s := range ss {
		dst = append(dst, s...)
		n += len(s)
	}
	for ; n%4 != 0; n++ {
		dst = append(dst, 0)
	}
	return dst
}

// AppendReply appends a reply frame.
func AppendReply(dst []byte, seq uint32, r *Reply) []byte {
	h := len(dst)
	dst = appendHeader(dst, KindReply, seq)
	dst = le.AppendUint64(dst, uint64(r.Start))
	dst = le.AppendUint64(dst, uint64(r.Res))
	dst = le.AppendUint32(dst, r.Buckets)
	dst = le.AppendUint32(dst, r.Micros)
	dst = le.AppendUint32(dst, uint32(len(r.Tracks)))
	dst = le.AppendUint32(dst, uint32(len(r.Markers.X)))
	for _, t := range r.Tracks {
		dst = le.AppendUint32(dst, uint32(t.Track))
		dst = le.AppendUint32(dst, uint32(len(t.X)))
		dst = appendFloats(dst, t.X)
		dst = appendU32(dst, t.Count)
		dst = appendU32(dst, t.First)
		dst = appendI32(dst, t.Type)
	}
	m := &r.Markers
	dst = appendFloats(dst, m.X)
	dst = appendU32(dst, m.Kind)
	dst = appendI32(dst, m.Track)
	dst = appendU32(dst, m.Count)
	dst = appendU32(dst, m.Lost)
	return finish(dst, h)
}

func appendFloats(dst []byte, v []float32) []byte {
	for _, f := range v {
		dst = le.AppendUint32(dst, math.Float32bits(f))
	}
	return dst
}

func appendU32(dst []byte, v []uint32) []byte {
	for _, x := range v {
		dst = le.AppendUint32(dst, x)
	}
	return dst
}

func appendI32(dst []byte, v []int32) []byte {
	for _, x := range v {
		dst = le.AppendUint32(dst, uint32(x))
	}
	return dst
}

// ErrFormat is wrapped by every Decode error.
var ErrFormat = errors.New("wire: malformed frame")

// DecodeError reports a malformed frame at a byte offset.
type DecodeError struct {
	Off int
	Msg string
}

func (e *DecodeError) Error() string {
	return "wire: " + e.Msg + " at byte " + strconv.Itoa(e.Off)
}

func (e *DecodeError) Unwrap() error { return ErrFormat }

// decoder is a cursor with a sticky error.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = &DecodeError{Off: d.off, Msg: msg}
	}
}

func (d *decoder) u32() uint32 {
	if d.err != nil || len(d.b)-d.off < 4 {
		d.fail("short frame")
		return 0
	}
	v := le.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64() uint64 {
	lo := d.u32()
	return uint64(d.u32())<<32 | uint64(lo)
}

// count reads a count of items of size bytes each (per-item total) and
// checks that many fit in what remains.
func (d *decoder) count(size int, what string) int {
	n := d.u32()
	if d.err == nil && uint64(n)*uint64(size) > uint64(len(d.b)-d.off) {
		d.off -= 4
		d.fail(fmt.Sprintf("%s count %d does not fit the frame", what, n))
		return 0
	}
	return int(n)
}

func (d *decoder) u32s(n int) []uint32 {
	v := make([]uint32, n)
	for i := range v {
		v[i] = d.u32()
	}
	return v
}

func (d *decoder) i32s(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(d.u32())
	}
	return v
}

func (d *decoder) floats(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(d.u32())
	}
	return v
}

func (d *decoder) strings() []string {
	n := d.count(4, "string")
	lens := d.u32s(n)
	if d.err != nil {
		return nil
	}
	total := uint64(0)
	for _, l := range lens {
		total += uint64(l)
	}
	if total > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("strings of %d bytes do not fit the frame", total))
		return nil
	}
	ss := make([]string, n)
	for i, l := range lens {
		ss[i] = string(d.b[d.off : d.off+int(l)])
		d.off += int(l)
	}
	for ; total%4 != 0; total++ {
		if d.off >= len(d.b) || d.b[d.off] != 0 {
			d.fail("bad string padding")
			return nil
		}
		d.off++
	}
	return ss
}

// Decode decodes one frame. It checks every count against the bytes that
// remain before allocating, and rejects trailing bytes.
func Decode(b []byte) (Frame, error) {
	if len(b) < HeaderSize {
		return Frame{}, &DecodeError{Off: 0, Msg: "frame shorter than its header"}
	}
	if len(b) > MaxFrame {
		return Frame{}, &DecodeError{Off: 0, Msg: fmt.Sprintf("frame of %d bytes exceeds %d", len(b), MaxFrame)}
	}
	if b[0] != 'V' || b[1] != 'W' {
		return Frame{}, &DecodeError{Off: 0, Msg: "bad magic"}
	}
	if b[2] != Version {
		return Frame{}, &DecodeError{Off: 2, Msg: fmt.Sprintf("unsupported version %d", b[2])}
	}
	f := Frame{Kind: Kind(b[3]), Seq: le.Uint32(b[4:])}
	if n := le.Uint32(b[8:]); uint64(n) != uint64(len(b)-HeaderSize) {
		return Frame{}, &DecodeError{Off: 8, Msg: fmt.Sprintf("body length %d, frame has %d", n, len(b)-HeaderSize)}
	}
	if le.Uint32(b[12:]) != 0 {
		return Frame{}, &DecodeError{Off: 12, Msg: "reserved header word not zero"}
	}
	d := &decoder{b: b, off: HeaderSize}
	switch f.Kind {
	case KindTables:
		t := &Tables{Types: d.strings()}
		n := d.count(12, "track")
		ids := d.i32s(n)
		parents := d.i32s(n)
		names := d.strings()
		if d.err == nil && len(names) != n {
			d.fail(fmt.Sprintf("%d track names for %d tracks", len(names), n))
		}
		if d.err == nil {
			t.Tracks = make([]TrackName, n)
			for i := range n {
				t.Tracks[i] = TrackName{ID: ids[i], Parent: parents[i], Name: names[i]}
			}
		}
		f.Tables = t
	case KindReply:
		r := &Reply{Start: int64(d.u64()), Res: int64(d.u64()), Buckets: d.u32(), Micros: d.u32()}
		nt := d.count(8, "track")
		nm := d.count(20, "marker")
		if d.err == nil {
			r.Tracks = make([]TrackItems, nt)
		}
		for k := 0; k < nt && d.err == nil; k++ {
			t := &r.Tracks[k]
			t.Track = int32(d.u32())
			n := d.count(16, "item")
			t.X, t.Count, t.First, t.Type = d.floats(n), d.u32s(n), d.u32s(n), d.i32s(n)
		}
		if d.err == nil && uint64(nm)*20 > uint64(len(b)-d.off) {
			d.fail(fmt.Sprintf("marker count %d does not fit the frame", nm))
		}
		if d.err == nil {
			m := &r.Markers
			m.X, m.Kind, m.Track, m.Count, m.Lost = d.floats(nm), d.u32s(nm), d.i32s(nm), d.u32s(nm), d.u32s(nm)
		}
		f.Reply = r
	default:
		return Frame{}, &DecodeError{Off: 3, Msg: fmt.Sprintf("unknown frame kind %d", b[3])}
	}
	if d.err != nil {
		return Frame{}, d.err
	}
	if d.off != len(b) {
		return Frame{}, &DecodeError{Off: d.off, Msg: fmt.Sprintf("%d trailing bytes", len(b)-d.off)}
	}
	return f, nil
}

// AppendSlice appends the reply frame of a slice, as
// AppendReply(dst, seq, NewReply(s, took)) does but without the Reply's
// columns and growing dst once to the frame's size: a server answering
// large viewports allocates nothing per reply when it reuses dst. Item
// types above maxType are written as maxType (a server that names only
// the first types folds the rest into one; math.MaxInt32 folds none).
func AppendSlice(dst []byte, seq uint32, s *render.Slice, took time.Duration, maxType int32) []byte {
	size := HeaderSize + 32 + 20*len(s.Markers)
	for _, ts := range s.Tracks {
		size += 8 + 16*len(ts.Items)
	}
	dst = slices.Grow(dst, size)
	h := len(dst)
	dst = appendHeader(dst, KindReply, seq)
	dst = le.AppendUint64(dst, uint64(s.Start))
	dst = le.AppendUint64(dst, uint64(s.Res))
	dst = le.AppendUint32(dst, uint32(s.Buckets))
	dst = le.AppendUint32(dst, uint32(min(took.Microseconds(), math.MaxUint32)))
	dst = le.AppendUint32(dst, uint32(len(s.Tracks)))
	dst = le.AppendUint32(dst, uint32(len(s.Markers)))
	res := float64(s.Res)
	for _, ts := range s.Tracks {
		dst = le.AppendUint32(dst, uint32(int32(ts.Track)))
		dst = le.AppendUint32(dst, uint32(len(ts.Items)))
		for _, it := range ts.Items {
			x := float32(float64(it.Bucket))
			if it.Count == 1 {
				x = float32(float64(it.Time-s.Start) / res)
			}
			dst = le.AppendUint32(dst, math.Float32bits(x))
		}
		for _, it := range ts.Items {
			dst = le.AppendUint32(dst, uint32(it.Count))
		}
		for _, it := range ts.Items {
			dst = le.AppendUint32(dst, uint32(it.First))
		}
		for _, it := range ts.Items {
			dst = le.AppendUint32(dst, uint32(min(int32(it.Type), maxType)))
		}
	}
	for _, mi := range s.Markers {
		dst = le.AppendUint32(dst, math.Float32bits(float32(float64(mi.Marker.Time-s.Start)/res)))
	}
	for _, mi := range s.Markers {
		dst = le.AppendUint32(dst, uint32(mi.Marker.Kind))
	}
	for _, mi := range s.Markers {
		dst = le.AppendUint32(dst, uint32(int32(mi.Marker.Track)))
	}
	for _, mi := range s.Markers {
		dst = le.AppendUint32(dst, uint32(mi.Count))
	}
	for _, mi := range s.Markers {
		dst = le.AppendUint32(dst, uint32(max(0, min(mi.Marker.Count, math.MaxUint32))))
	}
	return finish(dst, h)
}
