package nettrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf16"

	"viewer/trace"
)

// Writer writes a NetTrace v6 file block by block, as one-collect's
// record-trace does: the caller decides which blocks to write and in what
// order, so that tests can build every shape of file the reader must
// handle (and some it must refuse). Errors are sticky: the first one is
// returned by every later call and by Close.
type Writer struct {
	w   *bufio.Writer
	err error
	ptr int
	b   []byte
}

// TraceInfo is the content of a v6 Trace block.
type TraceInfo struct {
	Wall           time.Time // kept to the millisecond (SYSTEMTIME)
	SyncTicks      int64
	TicksPerSecond int64
	PointerSize    int
	Info           []trace.KeyValue
}

// NewWriter writes the file header and the Trace block.
func NewWriter(w io.Writer, info TraceInfo) *Writer {
	wr := &Writer{w: bufio.NewWriter(w), ptr: info.PointerSize}
	wr.write([]byte("Nettrace\x00\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00"))
	b := appendSystemTime(nil, info.Wall)
	b = le.AppendUint64(b, uint64(info.SyncTicks))
	b = le.AppendUint64(b, uint64(info.TicksPerSecond))
	b = le.AppendUint32(b, uint32(info.PointerSize))
	b = le.AppendUint32(b, uint32(len(info.Info)))
	for _, kv := range info.Info {
		b = appendStr(b, kv.Key)
		b = appendStr(b, kv.Value)
	}
	wr.Block(blockTrace, b)
	return wr
}

func appendSystemTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, make([]byte, 16)...)
	}
	t = t.UTC()
	for _, v := range []int{t.Year(), int(t.Month()), int(t.Weekday()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond() / 1e6} {
		b = le.AppendUint16(b, uint16(v))
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (w *Writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// Block writes one block of any kind; kinds the reader does not know are
// skipped by it.
func (w *Writer) Block(kind int, payload []byte) error {
	if len(payload) > 0xffffff && w.err == nil {
		w.err = fmt.Errorf("nettrace: block of %d bytes exceeds 16 MiB", len(payload))
	}
	var h [4]byte
	le.PutUint32(h[:], uint32(kind)<<24|uint32(len(payload)))
	w.write(h[:])
	w.write(payload)
	return w.err
}

// Close writes the end-of-stream block and flushes.
func (w *Writer) Close() error {
	w.Block(blockEnd, nil)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Metadata is one v6 metadata row.
type Metadata struct {
	ID       uint32
	Provider string
	EventID  uint32
	Name     string
	Fields   []Field
	// Optional metadata; zero values are not written, except that Opcode
	// is written when HasOpcode is set.
	HasOpcode    bool
	Opcode       uint8
	Keywords     uint64
	Message      string
	Description  string
	KeyValues    []trace.KeyValue
	ProviderGUID [16]byte
	Level        uint8
	Version      uint8
}

// Metadata writes a metadata block. headerSize bytes of zeros are written
// as the block header (one-collect writes 0).
func (w *Writer) Metadata(headerSize int, rows ...Metadata) error {
	b := le.AppendUint16(w.b[:0], uint16(headerSize))
	b = append(b, make([]byte, headerSize)...)
	for _, m := range rows {
		start := len(b)
		b = append(b, 0, 0)
		b = binary.AppendUvarint(b, uint64(m.ID))
		b = appendStr(b, m.Provider)
		b = binary.AppendUvarint(b, uint64(m.EventID))
		b = appendStr(b, m.Name)
		b = appendFieldsV6(b, m.Fields)
		opt := len(b)
		b = append(b, 0, 0)
		if m.HasOpcode {
			b = append(b, 1, m.Opcode)
		}
		if m.Keywords != 0 {
			b = le.AppendUint64(append(b, 3), m.Keywords)
		}
		if m.Message != "" {
			b = appendStr(append(b, 4), m.Message)
		}
		if m.Description != "" {
			b = appendStr(append(b, 5), m.Description)
		}
		for _, kv := range m.KeyValues {
			b = appendStr(appendStr(append(b, 6), kv.Key), kv.Value)
		}
		if m.ProviderGUID != ([16]byte{}) {
			b = append(append(b, 7), m.ProviderGUID[:]...)
		}
		if m.Level != 0 {
			b = append(b, 8, m.Level)
		}
		if m.Version != 0 {
			b = append(b, 9, m.Version)
		}
		le.PutUint16(b[opt:], uint16(len(b)-opt-2))
		le.PutUint16(b[start:], uint16(len(b)-start-2))
	}
	w.b = b
	return w.Block(blockMetadata, b)
}

func appendFieldsV6(b []byte, fs []Field) []byte {
	b = le.AppendUint16(b, uint16(len(fs)))
	for _, f := range fs {
		start := len(b)
		b = append(b, 0, 0)
		b = appendStr(b, f.Name)
		b = appendTypeV6(b, &f)
		le.PutUint16(b[start:], uint16(len(b)-start-2))
	}
	return b
}

func appendTypeV6(b []byte, f *Field) []byte {
	b = append(b, byte(f.Type))
	switch f.Type {
	case TypeArray, TypeFixedArray, TypeRelLoc, TypeDataLoc:
		b = appendTypeV6(b, f.Elem)
		if f.Type == TypeFixedArray {
			b = le.AppendUint16(b, uint16(f.Count))
		}
	case TypeObject:
		b = appendFieldsV6(b, f.Fields)
	}
	return b
}

// Thread is one row of a v6 Thread block. PID and TID < 0 are left out.
type Thread struct {
	Index     uint64
	Name      string
	PID, TID  int64
	KeyValues []trace.KeyValue
}

// Threads writes a Thread block.
func (w *Writer) Threads(rows ...Thread) error {
	b := w.b[:0]
	for _, t := range rows {
		start := len(b)
		b = append(b, 0, 0)
		b = binary.AppendUvarint(b, t.Index)
		if t.Name != "" {
			b = appendStr(append(b, 1), t.Name)
		}
		if t.PID >= 0 {
			b = binary.AppendUvarint(append(b, 2), uint64(t.PID))
		}
		if t.TID >= 0 {
			b = binary.AppendUvarint(append(b, 3), uint64(t.TID))
		}
		for _, kv := range t.KeyValues {
			b = appendStr(appendStr(append(b, 4), kv.Key), kv.Value)
		}
		le.PutUint16(b[start:], uint16(len(b)-start-2))
	}
	w.b = b
	return w.Block(blockThread, b)
}

// ThreadSeq is a thread index with a sequence number, as sequence points
// and RemoveThread blocks list them.
type ThreadSeq struct {
	Index uint64
	Seq   uint32
}

// RemoveThreads writes a RemoveThread block.
func (w *Writer) RemoveThreads(rows ...ThreadSeq) error {
	b := w.b[:0]
	for _, t := range rows {
		b = binary.AppendUvarint(b, t.Index)
		b = binary.AppendUvarint(b, uint64(t.Seq))
	}
	w.b = b
	return w.Block(blockRemoveThread, b)
}

// Sequence point flags.
const (
	FlushThreads  = 1
	FlushMetadata = 2
)

// SequencePoint writes a sequence point block.
func (w *Writer) SequencePoint(ticks int64, flags uint32, threads ...ThreadSeq) error {
	b := le.AppendUint64(w.b[:0], uint64(ticks))
	b = le.AppendUint32(b, flags)
	b = le.AppendUint32(b, uint32(len(threads)))
	for _, t := range threads {
		b = binary.AppendUvarint(b, t.Index)
		b = binary.AppendUvarint(b, uint64(t.Seq))
	}
	w.b = b
	return w.Block(blockSeqPoint, b)
}

// Stacks writes a stack block whose stacks get the ids first, first+1, …
func (w *Writer) Stacks(first uint32, stacks ...[]uint64) error {
	b := le.AppendUint32(w.b[:0], first)
	b = le.AppendUint32(b, uint32(len(stacks)))
	for _, s := range stacks {
		b = le.AppendUint32(b, uint32(len(s)*w.ptr))
		for _, a := range s {
			if w.ptr == 4 {
				b = le.AppendUint32(b, uint32(a))
			} else {
				b = le.AppendUint64(b, a)
			}
		}
	}
	w.b = b
	return w.Block(blockStack, b)
}

// LabelLists writes a LabelList block whose lists get the indexes first,
// first+1, … Each label is encoded by its key and value kind as the reader
// returns it: ActivityId and RelatedActivityId GUIDs, TraceId bytes,
// SpanId hex, Opcode, Level and Version unsigned, Keywords hex, and any
// other key with a string or integer value.
func (w *Writer) LabelLists(first uint32, lists ...[]trace.Label) error {
	b := le.AppendUint32(w.b[:0], first)
	b = le.AppendUint32(b, uint32(len(lists)))
	for _, l := range lists {
		if len(l) == 0 {
			w.err = cmpErr(w.err, errors.New("nettrace: an empty label list cannot be written"))
		}
		for i, lb := range l {
			var last byte
			if i == len(l)-1 {
				last = 0x80
			}
			v := lb.Value
			switch {
			case lb.Key == "ActivityId" && v.Kind() == trace.KindGUID:
				b = append(append(b, 1|last), v.Str()...)
			case lb.Key == "RelatedActivityId" && v.Kind() == trace.KindGUID:
				b = append(append(b, 2|last), v.Str()...)
			case lb.Key == "TraceId" && v.Kind() == trace.KindBytes && len(v.Str()) == 16:
				b = append(append(b, 3|last), v.Str()...)
			case lb.Key == "SpanId" && v.Kind() == trace.KindHex:
				b = le.AppendUint64(append(b, 4|last), v.Uint())
			case lb.Key == "Opcode" && v.Kind() == trace.KindUint:
				b = append(b, 7|last, byte(v.Uint()))
			case lb.Key == "Keywords" && v.Kind() == trace.KindHex:
				b = le.AppendUint64(append(b, 8|last), v.Uint())
			case lb.Key == "Level" && v.Kind() == trace.KindUint:
				b = append(b, 9|last, byte(v.Uint()))
			case lb.Key == "Version" && v.Kind() == trace.KindUint:
				b = append(b, 10|last, byte(v.Uint()))
			case v.Kind() == trace.KindString:
				b = appendStr(appendStr(append(b, 5|last), lb.Key), v.Str())
			case v.Kind() == trace.KindInt:
				b = appendStr(append(b, 6|last), lb.Key)
				b = binary.AppendUvarint(b, uint64(v.Int()<<1^(v.Int()>>63)))
			default:
				w.err = cmpErr(w.err, fmt.Errorf("nettrace: label %q of kind %d cannot be written", lb.Key, v.Kind()))
			}
		}
	}
	w.b = b
	return w.Block(blockLabelList, b)
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

// Event is one event record as the writer encodes it.
type Event struct {
	MetadataID uint32
	Seq        uint32
	Thread     uint64 // thread index
	Capture    uint64 // capture thread index
	Proc       uint32
	Stack      uint32 // stack id, 0 for none
	Ticks      int64
	Labels     uint32 // label list index, 0 for none
	Sorted     bool
	Payload    []byte
}

// Events writes an event block with compressed or uncompressed headers.
// Events need not be in time order.
func (w *Writer) Events(compressed bool, evs ...Event) error {
	var flags uint16
	if compressed {
		flags = 1
	}
	b := le.AppendUint16(w.b[:0], 20)
	b = le.AppendUint16(b, flags)
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	for _, e := range evs {
		lo, hi = min(lo, e.Ticks), max(hi, e.Ticks)
	}
	b = le.AppendUint64(b, uint64(lo))
	b = le.AppendUint64(b, uint64(hi))
	var p Event // previous header in the block
	for _, e := range evs {
		if !compressed {
			id := e.MetadataID
			if !e.Sorted {
				id |= 1 << 31
			}
			b = le.AppendUint32(b, uint32(4+4+8+8+4+4+8+4+4+len(e.Payload)))
			b = le.AppendUint32(b, id)
			b = le.AppendUint32(b, e.Seq)
			b = le.AppendUint64(b, e.Thread)
			b = le.AppendUint64(b, e.Capture)
			b = le.AppendUint32(b, e.Proc)
			b = le.AppendUint32(b, e.Stack)
			b = le.AppendUint64(b, uint64(e.Ticks))
			b = le.AppendUint32(b, e.Labels)
			b = le.AppendUint32(b, uint32(len(e.Payload)))
			b = append(b, e.Payload...)
			continue
		}
		var f byte
		if e.MetadataID != p.MetadataID {
			f |= 0x01
		}
		wantSeq := p.Seq
		if e.MetadataID != 0 {
			wantSeq++
		}
		if e.Seq != wantSeq || e.Capture != p.Capture || e.Proc != p.Proc {
			f |= 0x02
		}
		if e.Thread != p.Thread {
			f |= 0x04
		}
		if e.Stack != p.Stack {
			f |= 0x08
		}
		if e.Labels != p.Labels {
			f |= 0x10
		}
		if e.Sorted {
			f |= 0x40
		}
		if len(e.Payload) != len(p.Payload) {
			f |= 0x80
		}
		b = append(b, f)
		if f&0x01 != 0 {
			b = binary.AppendUvarint(b, uint64(e.MetadataID))
		}
		if f&0x02 != 0 {
			b = binary.AppendUvarint(b, uint64(e.Seq-p.Seq-1))
			b = binary.AppendUvarint(b, e.Capture)
			b = binary.AppendUvarint(b, uint64(e.Proc))
		}
		if f&0x04 != 0 {
			b = binary.AppendUvarint(b, e.Thread)
		}
		if f&0x08 != 0 {
			b = binary.AppendUvarint(b, uint64(e.Stack))
		}
		b = binary.AppendUvarint(b, uint64(e.Ticks)-uint64(p.Ticks)) // wraps for earlier events
		if f&0x10 != 0 {
			b = binary.AppendUvarint(b, uint64(e.Labels))
		}
		if f&0x80 != 0 {
			b = binary.AppendUvarint(b, uint64(len(e.Payload)))
		}
		b = append(b, e.Payload...)
		p = e
	}
	w.b = b
	return w.Block(blockEvent, b)
}

// EncodePayload encodes field values by a schema: the inverse of
// [DecodePayload]. values[i] is the value of fields[i]; a value's kind must
// suit its field's type (arrays of characters are strings, arrays of bytes
// are bytes). RelLoc and DataLoc data go after the fixed part.
func EncodePayload(fields []Field, values []trace.Value, pointerSize int) ([]byte, error) {
	e := encoder{ptr: pointerSize}
	if err := e.fields(fields, values); err != nil {
		return nil, err
	}
	// RelLoc/DataLoc data follow the body in order.
	b := e.body
	for _, fx := range e.fix {
		off := len(b)
		b = append(b, fx.data...)
		if fx.rel {
			off -= fx.at + 4
		}
		if off > 0xffff || len(fx.data) > 0xffff {
			return nil, errors.New("nettrace: payload too large for a RelLoc/DataLoc")
		}
		le.PutUint32(b[fx.at:], uint32(len(fx.data))<<16|uint32(off))
	}
	return b, nil
}

type encoder struct {
	ptr  int
	body []byte
	fix  []locFix
}

type locFix struct {
	at   int
	rel  bool
	data []byte
}

func (e *encoder) fields(fs []Field, vs []trace.Value) error {
	if len(fs) != len(vs) {
		return fmt.Errorf("nettrace: %d values for %d fields", len(vs), len(fs))
	}
	for i := range fs {
		if err := e.value(&fs[i], vs[i]); err != nil {
			return fmt.Errorf("%s: %w", fs[i].Name, err)
		}
	}
	return nil
}

func (e *encoder) value(f *Field, v trace.Value) error {
	b := e.body
	switch f.Type {
	case TypeObject:
		ms := v.Fields()
		vals := make([]trace.Value, len(ms))
		for i, m := range ms {
			vals[i] = m.Value
		}
		return e.fields(f.Fields, vals)
	case TypeBoolean32:
		b = le.AppendUint32(b, uint32(v.Uint()))
	case TypeBoolean8, TypeByte, TypeSByte:
		b = append(b, byte(v.Uint()))
	case TypeUTF16CodeUnit:
		b = appendUTF16(b, v.Str())
	case TypeUTF8CodeUnit:
		b = append(b, v.Str()...)
	case TypeInt16, TypeUInt16:
		b = le.AppendUint16(b, uint16(v.Uint()))
	case TypeInt32, TypeUInt32, TypeHexInt32:
		b = le.AppendUint32(b, uint32(v.Uint()))
	case TypeInt64, TypeUInt64, TypeHexInt64:
		b = le.AppendUint64(b, v.Uint())
	case TypePointer:
		if e.ptr == 4 {
			b = le.AppendUint32(b, uint32(v.Uint()))
		} else {
			b = le.AppendUint64(b, v.Uint())
		}
	case TypeSingle:
		b = le.AppendUint32(b, math.Float32bits(float32(v.Float())))
	case TypeDouble:
		b = le.AppendUint64(b, math.Float64bits(v.Float()))
	case TypeDecimal, TypeGUID:
		b = append(b, v.Str()...)
	case TypeDateTime:
		ft := v.Uint()
		if v.Kind() == trace.KindTime {
			ft = uint64(v.Time().UnixNano()/100 + 11644473600*1e7)
		}
		b = le.AppendUint64(b, ft)
	case TypeUTF16String:
		b = append(appendUTF16(b, v.Str()), 0, 0)
	case TypeAnsiString:
		b = append(append(b, v.Str()...), 0)
	case TypeVarInt:
		b = binary.AppendUvarint(b, uint64(v.Int()<<1^(v.Int()>>63)))
	case TypeVarUInt:
		b = binary.AppendUvarint(b, v.Uint())
	case TypeArray, TypeFixedArray:
		n := elemCount(f.Elem, v)
		if f.Type == TypeArray {
			b = le.AppendUint16(b, uint16(n))
		} else if n != f.Count {
			return fmt.Errorf("%d elements for a fixed array of %d", n, f.Count)
		}
		e.body = b
		return e.elems(f.Elem, v)
	case TypeRelLoc, TypeDataLoc:
		sub := encoder{ptr: e.ptr}
		if err := sub.elems(f.Elem, v); err != nil {
			return err
		}
		e.fix = append(e.fix, locFix{at: len(b), rel: f.Type == TypeRelLoc, data: sub.body})
		b = append(b, 0, 0, 0, 0)
	default:
		return fmt.Errorf("cannot encode type %v", f.Type)
	}
	e.body = b
	return nil
}

func elemCount(el *Field, v trace.Value) int {
	switch el.Type {
	case TypeUTF16CodeUnit:
		return len(utf16.Encode([]rune(v.Str())))
	case TypeUTF8CodeUnit, TypeByte:
		return len(v.Str())
	}
	return len(v.Fields())
}

func (e *encoder) elems(el *Field, v trace.Value) error {
	switch el.Type {
	case TypeUTF16CodeUnit:
		e.body = appendUTF16(e.body, v.Str())
		return nil
	case TypeUTF8CodeUnit, TypeByte:
		e.body = append(e.body, v.Str()...)
		return nil
	}
	for _, x := range v.Fields() {
		if err := e.value(el, x.Value); err != nil {
			return err
		}
	}
	return nil
}

func appendUTF16(b []byte, s string) []byte {
	for _, u := range utf16.Encode([]rune(s)) {
		b = le.AppendUint16(b, u)
	}
	return b
}
