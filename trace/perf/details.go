package perf

import (
	"strings"

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
	d.Label = Label(d.Fields)
	return d, err
}

// decode appends the fields of a sample's raw data to dst.
func (rd *Reader) decode(ti *typeInfo, raw []byte, dst []trace.Field) ([]trace.Field, error) {
	tp := ti.attr.tp
	switch {
	case ti.schema != nil:
		off := tp.Fields[tp.Common].Offset
		e, err := eventheader.Parse(raw[min(off, len(raw)):])
		if err != nil {
			return dst, err
		}
		return ti.schema.Decode(e.Payload, e.BigEndian(), dst)
	case ti.dotnet != nil:
		return rd.decodeDotNet(ti, raw, dst)
	case tp != nil:
		return tp.Decode(raw, rd.bo, dst), nil
	}
	return append(dst, trace.Field{Name: "raw", Value: trace.BytesValue(raw)}), nil
}

// Label renders fields as the one-line text the timeline shows:
// name=value pairs, cut at about 200 bytes.
func Label(fields []trace.Field) string {
	var sb strings.Builder
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(f.Name)
		sb.WriteByte('=')
		sb.WriteString(f.Value.String())
		if sb.Len() > maxLabel {
			break
		}
	}
	s := sb.String()
	if len(s) > maxLabel {
		s = strings.ToValidUTF8(s[:maxLabel], "") + "…"
	}
	return s
}
