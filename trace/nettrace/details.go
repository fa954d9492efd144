package nettrace

import (
	"fmt"

	"viewer/trace"
)

// Decoding payloads. A payload is read from the region's blocks in
// memory when it is there (Reader.held: the events being handed out
// are), else from the file. Decoded strings and nested lists come from an
// arena (arena.go), so that decoding a payload allocates nothing per
// event: Details returns storage no later call writes again, and the
// Append methods write into the caller's. A type whose schema is flat
// decodes and labels a payload in one pass by a plan made when the type
// is defined (flat.go); others walk their schema (payload.go) and then
// label the fields. ASCII UTF-16 text is copied sixteen code units at a
// time (asciiz); a flat plan's string equal to the one the same field
// decoded last is handed out again rather than stored again (arena.last).
// AppendDetails, which runs on the reading goroutine, decodes into the
// reader's own arena; the other entry points borrow one from a pool.

// payload returns an event's payload bytes: the reader's own when they
// are in memory (not to be written or kept), else a copy read from the
// file.
func (r *Reader) payload(e trace.Event) ([]byte, error) {
	if e.Payload.Len <= 0 {
		return nil, nil
	}
	if b, ok := r.heldPayload(e.Payload); ok {
		return b, nil
	}
	return r.Payload(e)
}

// publishTypes makes the event types read so far what
// AppendPayloadDetails sees.
func (r *Reader) publishTypes() {
	ts := r.types
	r.infos.Store(&ts)
}

// appendDecoded appends the fields of a payload of this type to dst, by
// the manifest's schema for runtime events, else by the file's.
func (ti *typeInfo) appendDecoded(dst []trace.Field, payload []byte, pointerSize int, a *arena) []trace.Field {
	if ti.manifest == nil {
		return appendPayload(dst, payload, ti.fields, pointerSize, a)
	}
	n := len(dst)
	dst = appendPayload(dst, payload, ti.manifest, pointerSize, a)
	fields := dst[n:]
	for _, i := range ti.mapped { // applyMaps(fields, ti.maps, a) on the fields it changes
		if i >= len(fields) {
			break
		}
		applyMaps(fields[i:i+1], ti.maps[i:i+1], a)
	}
	return dst
}

// schema returns the schema payloads of this type are decoded by.
func (ti *typeInfo) schema() []Field {
	if ti.manifest != nil {
		return ti.manifest
	}
	return ti.fields
}

// appendDetails appends what Details returns for an event of type t with
// this payload, given the event types ts.
func (r *Reader) appendDetails(ts []typeInfo, fields []trace.Field, label []byte, t trace.TypeID, payload []byte, a *arena) ([]trace.Field, []byte) {
	if t < 0 || int(t) >= len(ts) {
		return fields, appendLabel(label, labelName(trace.EventType{}), nil, nil)
	}
	ti := &ts[t]
	if ti.flat != nil {
		return appendFlat(ti.flat, fields, label, ti.name, payload, r.meta.PointerSize, a)
	}
	n := len(fields)
	fields = ti.appendDecoded(fields, payload, r.meta.PointerSize, a)
	return fields, appendLabel(label, ti.name, fields[n:], ti.keys)
}

// Details decodes an event's payload with its type's schema. The
// details' storage is the caller's to keep: no later call writes it.
func (r *Reader) Details(e trace.Event) (trace.Details, error) {
	payload, err := r.payload(e)
	if err != nil {
		return trace.Details{}, err
	}
	a := r.arenas.get()
	defer r.arenas.put(a)
	var d trace.Details
	if payload != nil {
		raw := a.reserve(len(payload))
		copy(raw, payload)
		d.Raw = raw
	}
	var buf [MaxLabel + 64]byte
	if e.Type >= 0 && int(e.Type) < len(r.types) {
		ti := &r.types[e.Type]
		d.Fields = a.list(len(ti.fields) + len(ti.manifest))
	}
	var label []byte
	d.Fields, label = r.appendDetails(r.types, d.Fields, buf[:0], e.Type, payload, a)
	d.Label = a.copyString(label)
	return d, nil
}

// AppendDetails appends the fields and the label text Details would
// return for e to fields and label; once they have room, only strings
// and nested lists are allocated, from chunks shared by many events.
// label's spare capacity serves as scratch: bytes past the returned
// label may change. Call it on the goroutine that reads events (it reads
// the region's blocks, which reading replaces); AppendPayloadDetails is
// the one for other goroutines.
func (r *Reader) AppendDetails(fields []trace.Field, label []byte, e trace.Event) ([]trace.Field, []byte, error) {
	var payload []byte
	if i := r.heldLast; e.Payload.Len > 0 && i < len(r.heldAt) {
		payload, _ = r.heldIn(i, e.Payload) // where the last one was, without a search
	}
	if payload == nil && e.Payload.Len > 0 {
		var ok bool
		if payload, r.heldLast, ok = r.heldPayloadAt(e.Payload); !ok {
			var err error
			if payload, err = r.Payload(e); err != nil {
				return fields, label, err
			}
		}
	}
	fields, label = r.appendDetails(r.types, fields, label, e.Type, payload, &r.own)
	return fields, label, nil
}

// ReadEventPayload reads the next event into *e, as ReadEvent returns it,
// and appends its payload bytes to dst (see trace.PayloadDecoder).
func (r *Reader) ReadEventPayload(e *trace.Event, dst []byte) ([]byte, error) {
	ev, err := r.nextEvent()
	if err != nil {
		return dst, err
	}
	*e = *ev // one copy, from memory written long before (not a returned temporary)
	p, err := r.payload(*e)
	if err != nil {
		return dst, err
	}
	return append(dst, p...), nil
}

// AppendPayloadDetails is AppendDetails for an event returned by
// ReadEventPayload, given its payload bytes. It reads the event types as
// they were published when the event was read (and the pointer size,
// fixed by NewReader), so it is safe for concurrent use with itself and
// with ReadEventPayload.
func (r *Reader) AppendPayloadDetails(fields []trace.Field, label []byte, e trace.Event, payload []byte) ([]trace.Field, []byte, error) {
	var ts []typeInfo
	if p := r.infos.Load(); p != nil {
		ts = *p
	}
	if int(e.Type) >= len(ts) {
		return fields, label, fmt.Errorf("nettrace: event of type %d is not from this reader", e.Type)
	}
	a := r.arenas.get()
	fields, label = r.appendDetails(ts, fields, label, e.Type, payload, a)
	r.arenas.put(a)
	return fields, label, nil
}

// fieldPlan maps a type's top-level schema fields to the positions of
// the names a ReadFields caller asks for (-1: not asked for).
type fieldPlan struct {
	names []string // the names the plan was made for
	pos   []int8
}

// ReadFields sets vals[i] to the value of e's top-level field named
// names[i] as Details would decode it, or to the zero Value when e has
// no such field, decoding the fields before it only as far as needed to
// find where it starts (see clr.FieldReader). It reports false when the
// payload cannot be read. Call it on the goroutine that reads events.
func (r *Reader) ReadFields(e trace.Event, names []string, vals []trace.Value) bool {
	clear(vals)
	payload, err := r.payload(e)
	if err != nil {
		return false
	}
	if e.Type < 0 || int(e.Type) >= len(r.types) {
		return true
	}
	ti := &r.types[e.Type]
	schema := ti.fields
	if ti.manifest != nil {
		schema = ti.manifest
	}
	pos := r.plan(e.Type, schema, names)
	p := newPayloadDec(payload, r.meta.PointerSize, nil)
	found := 0
	for i := range schema {
		f := &schema[i]
		if p.left() == 0 && f.Type != TypeObject && !(f.Type == TypeFixedArray && f.Count == 0) {
			break
		}
		k := int(pos[i])
		if f.Type == TypeArray && f.CountField != "" { // its count is an earlier field: decode it all
			fs := ti.appendDecoded(nil, payload, r.meta.PointerSize, nil)
			for j, n := range names {
				vals[j] = fieldMap(fs).get(n)
			}
			return true
		}
		if k < 0 && p.skipField(f) {
			if p.bad {
				break
			}
			continue
		}
		start := p.off
		var skipped trace.Value
		v := &skipped
		if k >= 0 {
			v = &vals[k] // decoded in place (see trace.Value.SetInt)
		}
		p.valueTo(v, f, 0)
		if p.bad {
			if p.off = start; v.Kind() == trace.KindBad {
				break // vals[k] is the zero Value, as clear left it
			}
		}
		if k >= 0 {
			if ti.manifest != nil && i < len(ti.maps) && ti.maps[i].Map != nil {
				one := []trace.Field{{Value: *v}}
				applyMaps(one, ti.maps[i:i+1], nil)
				*v = one[0].Value
			}
			if found++; found == len(names) {
				break
			}
		}
		if p.bad {
			break
		}
	}
	return true
}

// plan returns, for each field of schema (the schema of type t), the
// position in names of its name, or -1.
func (r *Reader) plan(t trace.TypeID, schema []Field, names []string) []int8 {
	for int(t) >= len(r.plans) {
		r.plans = append(r.plans, fieldPlan{})
	}
	pl := &r.plans[t]
	if len(pl.names) == len(names) && (len(names) == 0 || &pl.names[0] == &names[0]) && len(pl.pos) == len(schema) {
		return pl.pos
	}
	pl.names = names
	pl.pos = make([]int8, len(schema))
	taken := make([]bool, len(names))
	for i, f := range schema {
		pl.pos[i] = -1
		for k, n := range names {
			// A name's value is its first field's, as in Details: a
			// later field of the same name (metadata may repeat one)
			// gets no slot.
			if f.Name == n && k < 127 && !taken[k] {
				pl.pos[i], taken[k] = int8(k), true
				break
			}
		}
	}
	return pl.pos
}

// skipField passes over a field as value would decode it, without decoding
// it, when that is cheap: scalars and strings. It reports whether it did.
func (p *payloadDec) skipField(f *Field) bool {
	switch f.Type {
	case TypeUTF16String:
		if p.budget--; p.budget < 0 {
			p.fail()
			return true
		}
		b := p.b[p.off:]
		for i := 0; i+1 < len(b); i += 2 {
			if b[i] == 0 && b[i+1] == 0 {
				p.off += i + 2
				return true
			}
		}
		p.off = len(p.b)
		return true
	case TypeVarInt, TypeVarUInt:
		if p.budget--; p.budget < 0 {
			p.fail()
			return true
		}
		p.uvarint64()
		return true
	}
	sz := f.Type.fixedSize(p.ptr)
	if sz == 0 || f.Type == TypeRelLoc || f.Type == TypeDataLoc {
		return false
	}
	if p.budget--; p.budget < 0 {
		p.fail()
		return true
	}
	p.dec.skip(sz) // : fails when the payload is shorter
	return true
}

// fieldMap looks fields up by name.
type fieldMap []trace.Field

func (f fieldMap) get(name string) trace.Value {
	for _, x := range f {
		if x.Name == name {
			return x.Value
		}
	}
	return trace.Value{}
}
