package nettrace

import (
	"errors"

	"viewer/trace"
	"viewer/trace/clr"
)

// UserEvents decodes the payloads of .NET runtime user_events tracepoints
// (recorded in perf.data) with the NetTrace metadata the runtime puts in
// their extension, and names runtime events from the CLR schema as the
// reader does. It implements perf.DotNetDecoder.
type UserEvents struct {
	schema *clr.Schema
}

// NewUserEvents returns a user_events payload decoder.
func NewUserEvents() *UserEvents { return &UserEvents{schema: clr.NewSchema()} }

// ParseMetadata parses a NetTrace v5 metadata record without its leading
// MetaDataId (what .NET writes in user_events extension label 0x01).
func (u *UserEvents) ParseMetadata(meta []byte) (trace.EventType, any, error) {
	rec := make([]byte, 4+len(meta)) // the reader's parser expects the id
	copy(rec[4:], meta)
	m, ok := parseMetadataV5(rec)
	if !ok {
		return trace.EventType{}, nil, errors.New("nettrace: user_events metadata record too short")
	}
	manifest, maps := describe(u.schema, &m)
	m.typ.Fields = Spec(m.fields)
	if manifest != nil {
		m.typ.Fields = Spec(manifest)
	}
	return m.typ, &typeInfo{fields: m.fields, manifest: manifest, maps: maps}, nil
}

// DecodePayload appends the fields of an EventPipe payload decoded with a
// schema from ParseMetadata. user_events exist only on 64-bit Linux, so
// pointers are 8 bytes.
func (u *UserEvents) DecodePayload(schema any, payload []byte, dst []trace.Field) ([]trace.Field, error) {
	ti, ok := schema.(*typeInfo)
	if !ok {
		return dst, errors.New("nettrace: not a user_events schema")
	}
	return append(dst, ti.decode(payload, 8)...), nil
}
