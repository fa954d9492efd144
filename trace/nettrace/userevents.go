package nettrace

import (
	"errors"
	"strings"

	"viewer/trace"
	"viewer/trace/clr"
)

// UserEvents decodes the payloads of .NET runtime user_events tracepoints
// (recorded in perf.data) with the NetTrace metadata the runtime puts in
// their extension, and names runtime events from the CLR schema as the
// reader does. It implements perf.DotNetDecoder (the program that lists
// the formats plugs it into perf.Format).
type UserEvents struct {
	schema *clr.Schema
}

// NewUserEvents returns a user_events payload decoder.
func NewUserEvents() *UserEvents { return &UserEvents{schema: clr.NewSchema()} }

// ParseMetadata parses a NetTrace v5 metadata record without its leading
// MetaDataId (what .NET writes in user_events extension label 0x01).
func (u *UserEvents) ParseMetadata(meta []byte) (trace.EventType, PayloadSchema, error) {
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
	return m.typ, userEventsSchema{&typeInfo{fields: m.fields, manifest: manifest, maps: maps, mapped: mappedFields(maps)}}, nil
}

// PayloadSchema decodes the payloads of one event type that UserEvents
// described; it is the same type as perf.DotNetSchema.
type PayloadSchema = interface {
	DecodePayload(payload []byte, dst []trace.Field) ([]trace.Field, error)
}

// userEventsSchema is the PayloadSchema of a user_events event type.
type userEventsSchema struct{ ti *typeInfo }

// DecodePayload appends the fields of an EventPipe payload. user_events
// exist only on 64-bit Linux, so pointers are 8 bytes.
func (s userEventsSchema) DecodePayload(payload []byte, dst []trace.Field) ([]trace.Field, error) {
	return append(dst, s.ti.decode(payload, 8)...), nil
}

// nativeProviders maps a part of a user_events tracepoint name to the
// runtime provider whose events it carries; longest first, since
// DotNETRuntime is a prefix of the others.
var nativeProviders = []struct{ part, provider string }{
	{"DotNETRuntimeRundown", providerRundown},
	{"DotNETRuntimePrivate", "Microsoft-Windows-DotNETRuntimePrivate"},
	{"DotNETRuntime", providerRuntime},
}

// Native describes a runtime event that carries no metadata (the runtime
// never sends metadata for its own events) by the provider its tracepoint
// is named after and the event id, with the newest version the CLR
// schema knows: the payload decoder tolerates older, shorter payloads.
// An id the schema does not know is EventID(N) under that provider, its
// payload one bytes field, as perf shows events it has no schema for.
func (u *UserEvents) Native(tracepoint string, eventID uint16) (trace.EventType, PayloadSchema, bool) {
	for _, np := range nativeProviders {
		if !strings.Contains(tracepoint, np.part) {
			continue
		}
		e, ok := u.schema.Lookup(np.provider, int(eventID), 1<<30)
		if !ok {
			et := trace.EventType{Provider: np.provider, Name: unknownName(int64(eventID)), ID: int64(eventID)}
			return et, rawPayload{}, true
		}
		manifest := fromManifest(e.Fields)
		et := trace.EventType{Provider: np.provider, Name: e.Name, ID: int64(eventID), Version: e.Version,
			Level: e.Level, Opcode: e.Opcode, Keywords: e.Keywords, Fields: Spec(manifest)}
		return et, userEventsSchema{&typeInfo{manifest: manifest, maps: e.Fields, mapped: mappedFields(e.Fields)}}, true
	}
	return trace.EventType{}, nil, false
}

// rawPayload is the PayloadSchema of a runtime event the CLR schema does
// not know: the payload as one bytes field.
type rawPayload struct{}

func (rawPayload) DecodePayload(payload []byte, dst []trace.Field) ([]trace.Field, error) {
	return append(dst, trace.Field{Name: "payload", Value: trace.BytesValue(payload)}), nil
}
