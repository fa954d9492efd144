package perf

import (
	"viewer/trace"
	"viewer/trace/perf/tracefs"
)

// DotNetDecoder is the seam through which the reader decodes .NET runtime
// user_events payloads with NetTrace metadata. The NetTrace package
// provides the implementation; the perf reader only finds the metadata,
// caches it and hands payloads over.
type DotNetDecoder interface {
	// ParseMetadata parses a NetTrace v5 metadata record without its
	// leading MetaDataId (what the .NET runtime puts in the 0x01 extension
	// label) into an event type and an opaque schema for DecodePayload.
	ParseMetadata(meta []byte) (trace.EventType, any, error)
	// DecodePayload appends the fields of an EventPipe payload decoded
	// with a schema from ParseMetadata to dst.
	DecodePayload(schema any, payload []byte, dst []trace.Field) ([]trace.Field, error)
}

// dotnetKey identifies cached .NET metadata: per process, tracepoint and
// event id.
type dotnetKey struct {
	pid     int64
	attr    int
	eventID uint16
}

// dotnetType is the cached metadata of one .NET event.
type dotnetType struct {
	typeID trace.TypeID
	schema any
}

// isDotNet reports whether a tracefs format is a .NET runtime user_events
// tracepoint: fields exactly version, event_id, extension, payload.
func isDotNet(tp *tracefs.Event) bool {
	f := tp.Fields[tp.Common:]
	return len(f) == 4 && f[0].Name == "version" && f[1].Name == "event_id" &&
		f[2].Name == "extension" && f[3].Name == "payload"
}

func (rd *Reader) dotnetSample(a *attr, s parsedSample, ev *trace.Event) {}

func (rd *Reader) decodeDotNet(ti *typeInfo, raw []byte, dst []trace.Field) ([]trace.Field, error) {
	return ti.attr.tp.Decode(raw, rd.bo, dst), nil
}
