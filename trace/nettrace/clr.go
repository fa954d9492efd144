package nettrace

import (
	"slices"
	"strconv"
	"strings"

	"viewer/trace"
	"viewer/trace/clr"
)

// Events of the .NET runtime's own providers carry metadata with no name
// and no fields (NOTES.md §runtime-events). The reader names them from the schema table
// generated from the runtime's manifest (package clr) and decodes their
// payloads with the same decoder as self-described events, by converting
// the manifest's field list once per event type.

// describe fills in a runtime event's name and opcode from the manifest
// when its metadata has no fields (an event that neither names is
// EventID(N)), and returns the manifest's schema to
// decode it with and the value maps to apply after decoding (both nil for
// self-described or unknown events). m.fields stays the file's own schema.
func describe(s *clr.Schema, m *metadata) ([]Field, []clr.Field) {
	e, ok := s.Lookup(m.typ.Provider, int(m.typ.ID), m.typ.Version)
	if len(m.fields) > 0 || !ok {
		m.typ.Name = displayName(m)
		if m.typ.Name == "" {
			m.typ.Name = unknownName(m.typ.ID)
		}
		return nil, nil
	}
	if m.typ.Name == "" {
		m.typ.Name = e.Name
	}
	if m.typ.Opcode == 0 {
		m.typ.Opcode = e.Opcode
	}
	return fromManifest(e.Fields), e.Fields
}

// unknownName is the name of an event that neither its metadata nor the
// manifests name: TraceEvent's EventID(N), under the event's provider.
func unknownName(id int64) string {
	return "EventID(" + strconv.FormatInt(id, 10) + ")"
}

// fromManifest converts a manifest field list to the reader's schema.
func fromManifest(fs []clr.Field) []Field {
	out := make([]Field, 0, len(fs))
	for _, f := range fs {
		one := Field{Name: f.Name, Type: manifestTypes[f.Type]}
		switch {
		case f.Type == clr.Struct:
			one.Type, one.Fields = TypeObject, fromManifest(f.Fields)
		case f.Hex && one.Type == TypeUInt32:
			one.Type = TypeHexInt32
		case f.Hex && one.Type == TypeUInt64:
			one.Type = TypeHexInt64
		}
		switch {
		case f.Type == clr.Binary && f.LengthField != "": // bytes, as many as an earlier field says
			one = Field{Name: f.Name, Type: TypeArray, Elem: &Field{Type: TypeByte}, CountField: f.LengthField}
		case f.Type == clr.Binary:
			one = Field{Name: f.Name, Type: TypeFixedArray, Elem: &Field{Type: TypeByte}, Count: f.Length}
		case f.Count > 0:
			elem := one
			one = Field{Name: f.Name, Type: TypeFixedArray, Elem: &elem, Count: f.Count}
		case f.CountField != "":
			elem := one
			one = Field{Name: f.Name, Type: TypeArray, Elem: &elem, CountField: f.CountField}
		}
		out = append(out, one)
	}
	return out
}

var manifestTypes = [...]TypeCode{
	clr.UInt8: TypeByte, clr.UInt16: TypeUInt16, clr.UInt32: TypeUInt32, clr.UInt64: TypeUInt64,
	clr.Int8: TypeSByte, clr.Int16: TypeInt16, clr.Int32: TypeInt32, clr.Int64: TypeInt64,
	clr.Pointer: TypePointer, clr.Bool32: TypeBoolean32, clr.Float: TypeSingle, clr.Double: TypeDouble,
	clr.GUID: TypeGUID, clr.UTF16: TypeUTF16String, clr.ANSI: TypeAnsiString, clr.Binary: TypeBad,
	clr.Struct: TypeObject,
}

// applyMaps replaces numbers that a manifest value map names by their
// names (GC reasons, sample types), in place; the names of bit sets are
// made in a (or allocated when a is nil).
func applyMaps(fields []trace.Field, spec []clr.Field, a *arena) {
	for i := range fields {
		if i >= len(spec) {
			return
		}
		f, s := &fields[i], &spec[i]
		switch {
		case s.Map != nil:
			mapValue(&f.Value, s.Map, a)
		case s.Type == clr.Struct && f.Value.Kind() == trace.KindArray:
			for _, el := range f.Value.Fields() {
				applyMaps(el.Value.Fields(), s.Fields, a)
			}
		case s.Type == clr.Struct:
			applyMaps(f.Value.Fields(), s.Fields, a)
		}
	}
}

// mapValue replaces a number that value map m names by its name.
func mapValue(v *trace.Value, m *clr.Map, a *arena) {
	if n, ok := v.Number(); ok && v.Kind() != trace.KindFloat {
		mapNumber(v, n, m, a)
	}
}

// mapNumber sets *v, a value whose Number is n, to the name map m gives
// n, when it gives one, and returns the name. The names of bit sets are
// made in a (or allocated when a is nil).
func mapNumber(v *trace.Value, n float64, m *clr.Map, a *arena) (string, bool) {
	var text string
	var ok bool
	if !m.Bits || a == nil {
		text, ok = m.Text(uint64(n))
	} else {
		text, ok = a.bitsText(m, uint64(n))
	}
	if ok {
		v.SetString(text)
	}
	return text, ok
}

// mappedFields returns the indices of the fields of spec that applyMaps
// changes: those with a value map and structs.
func mappedFields(spec []clr.Field) []int {
	var at []int
	for i := range spec {
		if spec[i].Map != nil || spec[i].Type == clr.Struct {
			at = append(at, i)
		}
	}
	return at
}

// standardOpcodes are the names of the ETW opcodes TraceEvent spells out.
var standardOpcodes = [...]string{1: "Start", 2: "Stop", 3: "DCStart", 4: "DCStop", 5: "Extension", 6: "Reply", 7: "Resume", 8: "Suspend", 9: "Send"}

// displayName is a self-described event's name as TraceEvent shows it: an
// explicit opcode that the name does not already imply is appended
// (TestEvent3 with opcode 24 is TestEvent3/24).
func displayName(m *metadata) string {
	op := m.typ.Opcode
	if !m.opcodeSet || op == 0 || m.typ.Name == "" {
		return m.typ.Name
	}
	if op == 1 && strings.HasSuffix(m.typ.Name, "Start") || op == 2 && strings.HasSuffix(m.typ.Name, "Stop") {
		return m.typ.Name
	}
	suffix := "/" + strconv.Itoa(op)
	if op < len(standardOpcodes) && standardOpcodes[op] != "" {
		suffix = "/" + standardOpcodes[op]
	}
	if strings.HasSuffix(m.typ.Name, suffix) { // already so named (a file we wrote)
		return m.typ.Name
	}
	return m.typ.Name + suffix
}

// providerEventPipe writes the ProcessInfo event (id 1): the process's
// command line, and from version 1 its OS and architecture.
const providerEventPipe = "Microsoft-DotNETCore-EventPipe"

// addProcessInfo puts what a ProcessInfo event says into the trace's
// info: CommandLine, OSInformation and ArchInformation.
func (r *Reader) addProcessInfo(t trace.TypeID, off int64, n int) {
	if n <= 0 || n > 1<<16 || off+int64(n) > r.size {
		return
	}
	b := make([]byte, n)
	if _, err := r.r.ReadAt(b, off); err != nil {
		return
	}
	for _, f := range r.types[t].decode(b, r.meta.PointerSize) {
		if f.Value.Kind() != trace.KindString || f.Value.Str() == "" {
			continue
		}
		i := slices.IndexFunc(r.meta.Info, func(kv trace.KeyValue) bool { return kv.Key == f.Name })
		if i < 0 {
			r.meta.Info = append(r.meta.Info, trace.KeyValue{Key: f.Name, Value: f.Value.Str()})
		} else {
			r.meta.Info[i].Value = f.Value.Str()
		}
	}
}
