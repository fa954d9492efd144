// Package clr knows the events of the .NET runtime that traces do not
// describe themselves.
//
// The runtime's EventPipe metadata for Microsoft-Windows-DotNETRuntime, its
// Rundown and Private providers and the sample profiler has an empty event
// name and no fields. This package supplies them: a schema table generated
// from the runtime's ETW manifest (ClrEtwAll.man), keyed by provider, event
// id and version, with PerfView's `Task/Opcode` names, field lists and value
// maps. Readers convert a field list to their own payload decoder.
//
// The table (schema_gen.go) merges two copies of the manifest, both in
// ../shared/realdata/nettrace/schemas (see its PROVENANCE.md): PerfView's
// (ClrEtwAll.perfview.man), whose definitions and names win where both
// define an event id and version, and the runtime's own, newer one
// (ClrEtwAll.runtime.man), which adds the versions and events PerfView's
// lacks (internal/gen's merge states the rule). Regenerate it with
//
//	go generate ./trace/clr
//
// and add `-v` to the go:generate line to see what each manifest gives.
package clr

//go:generate go run ./internal/gen -perfview ../../../shared/realdata/nettrace/schemas/ClrEtwAll.perfview.man -runtime ../../../shared/realdata/nettrace/schemas/ClrEtwAll.runtime.man -o schema_gen.go

import (
	"slices"
	"strconv"
	"strings"
)

// Type is the wire type of a manifest field.
type Type uint8

const (
	Bad     Type = iota
	UInt8        // 1 byte
	UInt16       // 2 bytes
	UInt32       // 4 bytes
	UInt64       // 8 bytes
	Int8         // 1 byte
	Int16        // 2 bytes
	Int32        // 4 bytes
	Int64        // 8 bytes
	Pointer      // the trace's pointer size
	Bool32       // 4 bytes, 0 or 1
	Float        // 4-byte IEEE
	Double       // 8-byte IEEE
	GUID         // 16 bytes
	UTF16        // UTF-16LE up to a 2-byte NUL
	ANSI         // bytes up to a NUL
	Binary       // Length bytes
	Struct       // Fields, Count times
)

var typeNames = [...]string{"bad", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
	"pointer", "bool32", "float", "double", "guid", "utf16", "ansi", "binary", "struct"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "Type(" + string(rune('0'+t)) + ")"
}

// Field is one field of an event's payload.
type Field struct {
	Name   string
	Type   Type
	Hex    bool    // displayed in hex
	Map    *Map    // value names, or nil
	Fields []Field // members when Type is Struct
	// Count is a fixed element count (0: one value unless CountField is set).
	Count int
	// CountField names an earlier field that holds the element count.
	CountField string
	// Length and LengthField give a Binary field's size the same way.
	Length      int
	LengthField string
}

// Map names the values of a field (valueMap) or its bits (bitMap).
type Map struct {
	Name    string
	Bits    bool
	Entries []MapEntry
}

// MapEntry is one named value or bit.
type MapEntry struct {
	Value uint64
	Text  string
}

// Event is the schema of one event id and version.
type Event struct {
	ID       int
	Version  int
	Name     string // PerfView's Task/Opcode name, e.g. "GC/Start"
	Symbol   string // the manifest's symbol, e.g. "GCStart_V2"
	Task     int
	Opcode   int
	Level    int
	Keywords uint64
	Fields   []Field
}

// Provider is the schema of one provider.
type Provider struct {
	Name   string
	GUID   string
	Events []Event
}

// Schema is a lookup table over providers' events.
type Schema struct {
	providers []Provider
	byName    map[string]*Provider
}

// NewSchema returns the schema of the runtime's providers: the table
// generated from the manifest plus the events and providers that manifest
// lacks (see supplement).
func NewSchema() *Schema {
	s := &Schema{byName: map[string]*Provider{}}
	s.providers = make([]Provider, len(generatedProviders))
	for i, p := range generatedProviders {
		s.providers[i] = Provider{Name: p.Name, GUID: p.GUID, Events: slices.Clone(p.Events)}
	}
	for _, extra := range supplement() {
		i := slices.IndexFunc(s.providers, func(p Provider) bool { return p.Name == extra.Name })
		if i < 0 {
			s.providers = append(s.providers, extra)
			continue
		}
		s.providers[i].Events = append(s.providers[i].Events, extra.Events...)
	}
	for i := range s.providers {
		p := &s.providers[i]
		s.byName[strings.ToLower(p.Name)] = p
		s.byName[p.GUID] = p
	}
	return s
}

// Provider returns a provider by name (case-insensitive) or GUID.
func (s *Schema) Provider(nameOrGUID string) (*Provider, bool) {
	p, ok := s.byName[strings.ToLower(strings.Trim(nameOrGUID, "{}"))]
	return p, ok
}

// Lookup returns the schema of an event: the exact version when the
// manifest has it, else the newest version below it, else the oldest one
// above (decoding tolerates extra and missing trailing fields).
func (s *Schema) Lookup(provider string, id, version int) (*Event, bool) {
	p, ok := s.Provider(provider)
	if !ok {
		return nil, false
	}
	var best *Event
	for i := range p.Events {
		e := &p.Events[i]
		if e.ID != id {
			continue
		}
		switch {
		case e.Version == version:
			return e, true
		case best == nil:
			best = e
		case e.Version < version && (best.Version > version || e.Version > best.Version):
			best = e
		case e.Version > version && best.Version > version && e.Version < best.Version:
			best = e
		}
	}
	return best, best != nil
}

// supplement describes what real traces contain and neither manifest
// does: the sample profiler, which no manifest describes, named as
// TraceEvent names it. (Runtime events that PerfView's manifest lacks
// come from the runtime's own; the layouts once written here by hand are
// now checked against that in TestHandCheckedLayouts.)
func supplement() []Provider {
	sampleType := &Map{Name: "SampleTypeMap", Entries: []MapEntry{{0, "Error"}, {1, "External"}, {2, "Managed"}}}
	return []Provider{
		{
			Name: "Microsoft-DotNETCore-SampleProfiler",
			GUID: "3c530d44-97ae-513a-1e6d-783e8f8e03a9",
			Events: []Event{
				{ID: 0, Name: "Thread/Sample", Symbol: "ThreadSample", Level: 4, Fields: []Field{{Name: "Type", Type: UInt32, Map: sampleType}}},
				{ID: 1, Name: "Thread/StackWalk", Symbol: "ThreadStackWalk", Level: 4},
			},
		},
	}
}

// Text returns the text for v: the entry's name for a value map, the
// names of the set bits joined by '|' for a bit map.
func (m *Map) Text(v uint64) (string, bool) {
	if !m.Bits {
		for _, e := range m.Entries {
			if e.Value == v {
				return e.Text, true
			}
		}
		return "", false
	}
	var parts []string
	rest := v
	for _, e := range m.Entries {
		if e.Value != 0 && v&e.Value == e.Value {
			parts = append(parts, e.Text)
			rest &^= e.Value
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(rest, 16))
	}
	return strings.Join(parts, "|"), true
}
