package perf

import "viewer/trace"

// IsEventHeader reports whether events of type t are EventHeader
// user_events (whose opcodes and activity ids follow eventheader.h), so
// that an EventHeader deriver can leave other events alone.
func (rd *Reader) IsEventHeader(t trace.TypeID) bool {
	return t >= 0 && int(t) < len(rd.types) && rd.types[t].schema != nil
}

// IsDotNet reports whether events of type t are .NET runtime or
// EventSource user_events (decoded with NetTrace's metadata).
func (rd *Reader) IsDotNet(t trace.TypeID) bool {
	return t >= 0 && int(t) < len(rd.types) && rd.types[t].dotnet != nil
}
