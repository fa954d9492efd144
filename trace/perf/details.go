package perf

import (
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"viewer/trace"
	"viewer/trace/perf/eventheader"
)

// maxLabel bounds the one-line label of an event.
const maxLabel = 200

// Details decodes an event's fields from the file (or, for events from
// COMPRESSED records, from the decompressed data the reader kept). It is
// safe for concurrent use once reading has finished.
func (rd *Reader) Details(ev trace.Event) (trace.Details, error) {
	var d trace.Details
	if ev.Type < 0 || int(ev.Type) >= len(rd.types) {
		return d, &trace.FormatError{Format: "perf", Off: ev.Payload.Off, Msg: "event of unknown type"}
	}
	ti := &rd.types[ev.Type]
	if ev.Payload.Len == 0 {
		return d, nil
	}
	raw, err := rd.rawAt(ev.Payload, nil)
	if err != nil {
		return d, err
	}
	d.Raw = raw
	d.Fields, err = rd.decode(ti, raw, nil)
	if tp := ti.attr.tp; tp != nil && ti.schema == nil && ti.dotnet == nil && tp.Print != nil {
		d.Label = tp.Label(raw, rd.bo) // the tracepoint's print fmt, as perf script prints it
	} else {
		d.Label = Label(d.Fields)
	}
	return d, err
}

// Fields appends an event's decoded fields to dst: Details without the
// label, for consumers that decode many events and reuse dst. It is safe
// for concurrent use once reading has finished.
func (rd *Reader) Fields(ev trace.Event, dst []trace.Field) ([]trace.Field, error) {
	if ev.Type < 0 || int(ev.Type) >= len(rd.types) {
		return dst, &trace.FormatError{Format: "perf", Off: ev.Payload.Off, Msg: "event of unknown type"}
	}
	if ev.Payload.Len == 0 {
		return dst, nil
	}
	raw, err := rd.rawAt(ev.Payload, nil)
	if err != nil {
		return dst, err
	}
	if dst == nil {
		dst = []trace.Field{}
	}
	return rd.decode(&rd.types[ev.Type], raw, dst)
}

// DecodeFields stores in vals[i] the value of the top-level field idx[i]
// of e's type (trace.FieldsDecoder), so that a query on one field of a
// tracepoint (\`sched_switch and prev_pid = 1\`) reads that field alone
// instead of decoding every field and formatting the print fmt's label.
// A plain tracepoint's fields are read at the offsets its format gives;
// EventHeader and .NET payloads are decoded whole and the field found by
// its name, as Details gives it. It is safe for concurrent use once
// reading has finished.
func (rd *Reader) DecodeFields(ev trace.Event, idx []int, vals []trace.Value) error {
	clear(vals)
	if ev.Type < 0 || int(ev.Type) >= len(rd.types) {
		return &trace.FormatError{Format: "perf", Off: ev.Payload.Off, Msg: "event of unknown type"}
	}
	if ev.Payload.Len == 0 {
		return nil
	}
	raw, err := rd.rawAt(ev.Payload, nil)
	if err != nil {
		return err
	}
	ti := &rd.types[ev.Type]
	if tp := ti.attr.tp; tp != nil && ti.schema == nil && ti.dotnet == nil {
		for i, k := range idx {
			if k >= 0 && k < len(tp.Fields)-tp.Common {
				vals[i] = tp.Fields[tp.Common+k].Value(raw, rd.bo)
			}
		}
		return nil
	}
	fields, err := rd.decode(ti, raw, nil)
	specs := rd.meta.Types[ev.Type].Fields
	for i, k := range idx {
		if k < 0 || k >= len(specs) {
			continue
		}
		for _, f := range fields {
			if f.Name == specs[k].Name {
				vals[i] = f.Value
				break
			}
		}
	}
	return err
}

// decode appends the fields of a sample's raw data to dst.
func (rd *Reader) decode(ti *typeInfo, raw []byte, dst []trace.Field) ([]trace.Field, error) {
	tp := ti.attr.tp
	switch {
	case ti.schema != nil && dst == nil:
		dst = make([]trace.Field, 0, ti.schema.Top)
		fallthrough
	case ti.schema != nil:
		off := tp.Fields[tp.Common].Offset
		e, err := eventheader.Parse(raw[min(off, len(raw)):])
		if err != nil {
			return dst, err
		}
		l, _ := rd.lists.Get().(*eventheader.Lists)
		if l == nil {
			l = new(eventheader.Lists)
		}
		dst, err = ti.schema.AppendDecoded(e.Payload, e.BigEndian(), dst, l)
		rd.lists.Put(l)
		return dst, err
	case ti.dotnet != nil:
		return rd.decodeDotNet(ti, raw, dst)
	case tp != nil:
		if dst == nil {
			dst = make([]trace.Field, 0, len(tp.Fields)-tp.Common)
		}
		return tp.Decode(raw, rd.bo, dst), nil
	}
	return append(dst, trace.Field{Name: "raw", Value: trace.BytesValue(raw)}), nil
}

// ReadEventPayload reads the next event into *e, as ReadEvent returns it,
// and appends its payload bytes to dst (see trace.PayloadDecoder).
func (rd *Reader) ReadEventPayload(e *trace.Event, dst []byte) ([]byte, error) {
	ev, err := rd.ReadEvent()
	if err != nil {
		return dst, err
	}
	*e = ev
	if ev.Payload.Len <= 0 {
		return dst, nil
	}
	if ev.Payload.Off < rd.size {
		if b, ok := rd.buf.held(ev.Payload); ok { // read with the records: no second read
			return append(dst, b...), nil
		}
	}
	n := len(dst)
	dst = slices.Grow(dst, int(ev.Payload.Len))[:n+int(ev.Payload.Len)]
	raw, err := rd.rawAt(ev.Payload, dst[n:n:len(dst)])
	if err != nil {
		return dst[:n], err
	}
	if len(raw) > 0 && &raw[0] != &dst[n] { // from the block cache
		copy(dst[n:], raw)
	}
	return dst, nil
}

// AppendPayloadDetails appends the fields and the label text Details
// would return for an event of ReadEventPayload, given its payload bytes
// (and returns Details' error). It reads the event types as they were
// published when the event was read, and what is fixed once the file
// header is read, so it is safe for concurrent use with itself and with
// ReadEventPayload.
func (rd *Reader) AppendPayloadDetails(fields []trace.Field, label []byte, e trace.Event, payload []byte) ([]trace.Field, []byte, error) {
	var ts []typeInfo
	if p := rd.infos.Load(); p != nil {
		ts = *p
	}
	return rd.appendDetails(ts, fields, label, e, payload)
}

// AppendDetails appends the fields and the label text Details would
// return for e to fields and label (and returns Details' error), without
// allocating what Details allocates for the caller to keep.
func (rd *Reader) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	var payload []byte
	if e.Type >= 0 && int(e.Type) < len(rd.types) && e.Payload.Len != 0 {
		var err error
		if payload, err = rd.rawAt(e.Payload, nil); err != nil {
			return fields, label, err
		}
	}
	return rd.appendDetails(rd.types, fields, label, e, payload)
}

// appendDetails is AppendDetails given the event types and the payload.
func (rd *Reader) appendDetails(ts []typeInfo, fields []trace.Field, label []byte, e trace.Event, payload []byte) ([]trace.Field, []byte, error) {
	if e.Type < 0 || int(e.Type) >= len(ts) {
		return fields, label, &trace.FormatError{Format: "perf", Off: e.Payload.Off, Msg: "event of unknown type"}
	}
	if len(payload) == 0 {
		return fields, label, nil
	}
	ti := &ts[e.Type]
	if fields == nil {
		fields = []trace.Field{} // decode makes no list of its own for a non-nil one
	}
	n := len(fields)
	fields, err := rd.decode(ti, payload, fields)
	if err != nil {
		return fields, label, err
	}
	if tp := ti.attr.tp; tp != nil && ti.schema == nil && ti.dotnet == nil && tp.Print != nil {
		return fields, append(label, tp.Label(payload, rd.bo)...), nil
	}
	return fields, appendLabel(label, fields[n:]), nil
}

// Label renders fields as the one-line text the timeline shows:
// name=value pairs, cut at about 200 bytes.
func Label(fields []trace.Field) string {
	return string(appendLabel(make([]byte, 0, maxLabel+32), fields))
}

// appendLabel appends the text Label returns to b.
func appendLabel(b []byte, fields []trace.Field) []byte {
	l := labelText(b[len(b):len(b)], fields) // in b's spare room, so that the label's own length is len(l)
	return append(b, l...)
}

// labelText appends the text Label returns to an empty b.
func labelText(b []byte, fields []trace.Field) []byte {
	for i := range fields {
		f := &fields[i] // not a copy: a field is nine words
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, f.Name...)
		b = append(b, '=')
		b = appendText(b, &f.Value)
		if len(b) > maxLabel {
			break
		}
	}
	if len(b) > maxLabel {
		b = b[:maxLabel]
		for range 3 { // do not end inside a character
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
		b = append(b, "…"...)
	}
	return b
}

// appendText appends v as Value.String renders it, without building
// intermediate strings, stopping early once the label is long enough.
func appendText(b []byte, v *trace.Value) []byte {
	switch v.Kind() {
	case trace.KindInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case trace.KindUint:
		return strconv.AppendUint(b, v.Uint(), 10)
	case trace.KindHex:
		return strconv.AppendUint(append(b, "0x"...), v.Uint(), 16)
	case trace.KindString:
		return append(b, v.Str()...)
	case trace.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case trace.KindStruct, trace.KindArray:
		open, close := byte('{'), byte('}')
		if v.Kind() == trace.KindArray {
			open, close = '[', ']'
		}
		b = append(b, open)
		fs := v.Fields()
		for i := range fs {
			f := &fs[i]
			if i > 0 {
				b = append(b, ", "...)
			}
			if v.Kind() == trace.KindStruct {
				b = append(append(b, f.Name...), '=')
			}
			b = appendText(b, &f.Value)
			if len(b) > maxLabel {
				return b
			}
		}
		return append(b, close)
	}
	return append(b, v.String()...)
}

// blockCache keeps recently read blocks of the file for Details, so that
// decoding events in file order costs no system call per event. Blocks
// are never modified or reused once cached, so slices of them stay valid
// after eviction.
type blockCache struct {
	recent [4]atomic.Pointer[cachedBlock] // recent blocks by index mod 4, checked without the lock
	mu     sync.Mutex
	blocks map[int64][]byte
	ring   [cacheBlocks]int64
	next   int
}

type cachedBlock struct {
	idx int64
	b   []byte
}

const (
	cacheBlockSize = 64 << 10
	cacheBlocks    = 64
)

// at returns the n bytes at off of r (of the given size) when they lie in
// one block; ok is false when they cross a block boundary.
func (c *blockCache) at(r io.ReaderAt, size, off int64, n int) (b []byte, ok bool, err error) {
	idx := off / cacheBlockSize
	start := idx * cacheBlockSize
	if off+int64(n) > start+cacheBlockSize {
		return nil, false, nil
	}
	var blk []byte
	hit := false
	slot := &c.recent[idx%int64(len(c.recent))]
	if l := slot.Load(); l != nil && l.idx == idx {
		blk, hit = l.b, true
	} else {
		c.mu.Lock()
		blk, hit = c.blocks[idx]
		c.mu.Unlock()
		if hit {
			slot.Store(&cachedBlock{idx, blk})
		}
	}
	if !hit {
		blk = make([]byte, min(cacheBlockSize, size-start))
		m, err := r.ReadAt(blk, start)
		if m < len(blk) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, true, err
		}
		c.mu.Lock()
		if c.blocks == nil {
			c.blocks = make(map[int64][]byte, cacheBlocks)
			for i := range c.ring {
				c.ring[i] = -1
			}
		}
		if old := c.ring[c.next]; old >= 0 {
			delete(c.blocks, old)
		}
		c.ring[c.next] = idx
		c.next = (c.next + 1) % cacheBlocks
		c.blocks[idx] = blk
		c.mu.Unlock()
		slot.Store(&cachedBlock{idx, blk})
	}
	o := off - start
	if o+int64(n) > int64(len(blk)) {
		return nil, true, io.ErrUnexpectedEOF
	}
	return blk[o : o+int64(n) : o+int64(n)], true, nil
}
