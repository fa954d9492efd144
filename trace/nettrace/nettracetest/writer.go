// Package nettracetest writes .NET EventPipe traces in the NetTrace v6
// format, for tests, benchmarks, fuzz seeds and committed fixtures (the
// demo trace among them); it is not needed to read traces, which is
// package [viewer/trace/nettrace]'s job.
//
// A [Writer] writes a file block by block (§framing-v6) — Trace, Metadata, Thread,
// RemoveThread, Stack, LabelList, Event and SequencePoint blocks, or a raw
// block of any kind — in whatever order and with whatever contents the
// caller chooses, so that a test can build every shape of file the reader
// must handle and some it must refuse. [EncodePayload] lays out an event's
// payload by a schema of [Field] descriptions.
//
// The package encodes from the format notes on its own: it shares no
// constants or types with the reader (nor can it import the reader, whose
// internal tests use it), so a round trip through the two checks each
// against an independent reading of the format. Sections (§name) are
// those of trace/nettrace/NOTES.md.
package nettracetest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"viewer/trace"
)

var le = binary.LittleEndian

// Block kinds of a v6 file (§framing-v6). A reader skips kinds it does not know.
const (
	BlockEnd           = 0 // end of stream, empty
	BlockTrace         = 1
	BlockEvent         = 2
	BlockMetadata      = 3
	BlockSequencePoint = 4
	BlockStack         = 5
	BlockThread        = 6
	BlockRemoveThread  = 7
	BlockLabelList     = 8
)

// magic is the v6 file header: "Nettrace", a u32 0 (where ≤v5 files have
// a string length), then the major version 6 and minor version 0 (§versions, §framing-v6).
const magic = "Nettrace\x00\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00"

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

// TraceInfo is the content of a v6 Trace block (§framing-v6).
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
	wr.write([]byte(magic))
	b := appendSystemTime(nil, info.Wall)
	b = le.AppendUint64(b, uint64(info.SyncTicks))
	b = le.AppendUint64(b, uint64(info.TicksPerSecond))
	b = le.AppendUint32(b, uint32(info.PointerSize))
	b = le.AppendUint32(b, uint32(len(info.Info)))
	for _, kv := range info.Info {
		b = appendStr(b, kv.Key)
		b = appendStr(b, kv.Value)
	}
	wr.Block(BlockTrace, b)
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
		w.err = fmt.Errorf("nettracetest: block of %d bytes exceeds 16 MiB", len(payload))
	}
	var h [4]byte
	le.PutUint32(h[:], uint32(kind)<<24|uint32(len(payload)))
	w.write(h[:])
	w.write(payload)
	return w.err
}

// Close writes the end-of-stream block and flushes.
func (w *Writer) Close() error {
	w.Block(BlockEnd, nil)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Metadata is one v6 metadata row (§metadata-v6).
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
	return w.Block(BlockMetadata, b)
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

// Thread is one row of a v6 Thread block (§threads). PID and TID < 0 are left
// out.
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
	return w.Block(BlockThread, b)
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
	return w.Block(BlockRemoveThread, b)
}

// Sequence point flags (§sequence-points).
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
	return w.Block(BlockSequencePoint, b)
}

// Stacks writes a stack block (§stacks) whose stacks get the ids first,
// first+1, … Addresses are written in the trace's pointer size.
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
	return w.Block(BlockStack, b)
}

// LabelLists writes a LabelList block (§labels) whose lists get the indexes
// first, first+1, … Each label is encoded by its key and value kind as a
// reader returns it: ActivityId and RelatedActivityId GUIDs, TraceId
// bytes, SpanId hex, Opcode, Level and Version unsigned, Keywords hex, and
// any other key with a string or integer value.
func (w *Writer) LabelLists(first uint32, lists ...[]trace.Label) error {
	b := le.AppendUint32(w.b[:0], first)
	b = le.AppendUint32(b, uint32(len(lists)))
	for _, l := range lists {
		if len(l) == 0 {
			w.err = cmpErr(w.err, errors.New("nettracetest: an empty label list cannot be written"))
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
				w.err = cmpErr(w.err, fmt.Errorf("nettracetest: label %q of kind %d cannot be written", lb.Key, v.Kind()))
			}
		}
	}
	w.b = b
	return w.Block(BlockLabelList, b)
}

func cmpErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

// Event is one event record as the writer encodes it (§header).
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
	return w.Block(BlockEvent, b)
}
