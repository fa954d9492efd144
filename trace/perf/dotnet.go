package perf

import (
	"encoding/binary"
	"strconv"
	"unicode/utf16"

	"viewer/trace"
	"viewer/trace/perf/tracefs"
)

// .NET runtime user_events (.NET 10+, "Tracepoint Format V1"): the runtime
// registers "<name> u8 version; u16 event_id; __rel_loc u8[] extension;
// __rel_loc u8[] payload" and writes, per event, an extension blob of
// labels (0x01 NetTrace metadata with a u32 length, 0x02 ActivityId, 0x03
// RelatedActivityId, GUIDs in Windows layout) and the EventPipe payload.
// Metadata comes only with the first event of each kind in a session, so
// the reader caches it per (process, tracepoint, event id) and types later
// events by it. Decoding the payload needs the NetTrace metadata and
// payload decoder, which lives in trace/nettrace: it plugs in through
// Options.DotNet and Format.DotNet ([DotNetDecoder]).

// DotNetDecoder is the seam through which the reader names and decodes
// .NET runtime user_events with NetTrace metadata. trace/nettrace's
// UserEvents implements it; the formats are assembled with it where the
// program lists them (cmd/viewer), so this package does not import
// nettrace. The perf reader only finds the metadata, caches it and hands
// payloads over.
type DotNetDecoder interface {
	// ParseMetadata parses a NetTrace v5 metadata record without its
	// leading MetaDataId (what the .NET runtime puts in the 0x01 extension
	// label) into an event type (fields, opcode…) and the schema that
	// decodes its payloads.
	ParseMetadata(meta []byte) (trace.EventType, DotNetSchema, error)
	// Native describes an event that never carries metadata (the
	// runtime's own events) from the tracepoint's name and the event id;
	// ok is false when it cannot tell.
	Native(tracepoint string, eventID uint16) (et trace.EventType, schema DotNetSchema, ok bool)
}

// DotNetSchema decodes the EventPipe payloads of one .NET event type,
// appending their fields to dst. It is an alias of an interface literal so
// that a decoder package can name the same type without importing perf.
type DotNetSchema = interface {
	DecodePayload(payload []byte, dst []trace.Field) ([]trace.Field, error)
}

// Extension labels of .NET user_events.
const (
	dotnetLabelMetadata = 0x01
	dotnetLabelActivity = 0x02
	dotnetLabelRelated  = 0x03
	dotnetFormatVersion = 1
	maxDotNetMetadata   = 1 << 16
)

// dotnetKey identifies cached .NET metadata: per process, tracepoint and
// event id.
type dotnetKey struct {
	pid     int64
	attr    int
	eventID uint16
}

// dotnetType is one .NET event type of a tracepoint.
type dotnetType struct {
	typeID trace.TypeID
	schema DotNetSchema // from the DotNetDecoder; nil without metadata or decoder
}

// isDotNet reports whether a tracefs format is a .NET runtime user_events
// tracepoint: fields exactly version, event_id, extension, payload.
func isDotNet(tp *tracefs.Event) bool {
	f := tp.Fields[tp.Common:]
	return len(f) == 4 && f[0].Name == "version" && f[1].Name == "event_id" &&
		f[2].Name == "extension" && f[3].Name == "payload" &&
		f[2].Array == tracefs.ArrayRelLoc && f[3].Array == tracefs.ArrayRelLoc
}

// dotnetParts splits the raw data of a .NET user_events sample.
type dotnetParts struct {
	version   uint8
	eventID   uint16
	extension []byte
	payload   []byte
}

func (rd *Reader) dotnetSplit(tp *tracefs.Event, raw []byte) (dotnetParts, bool) {
	var p dotnetParts
	f := tp.Fields[tp.Common:]
	v, id := f[0].Bytes(raw, rd.bo), f[1].Bytes(raw, rd.bo)
	if len(v) < 1 || len(id) < 2 {
		return p, false
	}
	p.version, p.eventID = v[0], rd.bo.Uint16(id)
	p.extension = f[2].Bytes(raw, rd.bo)
	p.payload = f[3].Bytes(raw, rd.bo)
	return p, p.extension != nil && p.payload != nil
}

// dotnetLabels parses an extension blob. It reports false on damage.
func dotnetLabels(ext []byte) (meta, act, related []byte, ok bool) {
	for len(ext) > 0 {
		switch ext[0] {
		case dotnetLabelMetadata:
			if len(ext) < 5 {
				return nil, nil, nil, false
			}
			n := binary.LittleEndian.Uint32(ext[1:])
			if uint64(n) > uint64(len(ext)-5) {
				return nil, nil, nil, false
			}
			meta, ext = ext[5:5+n], ext[5+n:]
		case dotnetLabelActivity, dotnetLabelRelated:
			if len(ext) < 17 {
				return nil, nil, nil, false
			}
			if ext[0] == dotnetLabelActivity {
				act = ext[1:17]
			} else {
				related = ext[1:17]
			}
			ext = ext[17:]
		default:
			return nil, nil, nil, false
		}
	}
	return meta, act, related, true
}

// dotnetMetadataHeader is the fixed start of NetTrace v5 metadata as the
// .NET runtime sends it over user_events.
type dotnetMetadataHeader struct {
	Provider string
	EventID  int32
	Name     string
	Keywords uint64
	Version  int32
	Level    int32
}

// parseDotNetMetadataHeader reads the provider, event id, name, keywords,
// version and level at the start of .NET user_events metadata (the field
// list and tags that follow are the NetTrace decoder's business).
func parseDotNetMetadataHeader(b []byte) (dotnetMetadataHeader, bool) {
	var h dotnetMetadataHeader
	utf16z := func() (string, bool) {
		for i := 0; i+2 <= len(b); i += 2 {
			if b[i] == 0 && b[i+1] == 0 {
				u := make([]uint16, i/2)
				for k := range u {
					u[k] = binary.LittleEndian.Uint16(b[2*k:])
				}
				b = b[i+2:]
				return string(utf16.Decode(u)), true
			}
		}
		return "", false
	}
	var ok bool
	if h.Provider, ok = utf16z(); !ok || len(b) < 4 {
		return h, false
	}
	h.EventID = int32(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if h.Name, ok = utf16z(); !ok || len(b) < 16 {
		return h, false
	}
	h.Keywords = binary.LittleEndian.Uint64(b)
	h.Version = int32(binary.LittleEndian.Uint32(b[8:]))
	h.Level = int32(binary.LittleEndian.Uint32(b[12:]))
	return h, true
}

// dotnetSample types a .NET user_events sample: by metadata it carries or
// that an earlier event of the same process, tracepoint and event id
// carried; events without any (native runtime events) get a type per
// tracepoint and event id, named by id.
func (rd *Reader) dotnetSample(a *attr, s parsedSample, ev *trace.Event) {
	parts, ok := rd.dotnetSplit(a.tp, s.raw)
	if !ok || parts.version != dotnetFormatVersion {
		return
	}
	meta, act, related, ok := dotnetLabels(parts.extension)
	if !ok {
		return
	}
	key := dotnetKey{pid: s.pid, attr: a.index, eventID: parts.eventID}
	dt := rd.dotnetMeta[key]
	if dt == nil && meta != nil && len(meta) <= maxDotNetMetadata {
		dt = rd.dotnetType(a, parts.eventID, meta)
		rd.dotnetMeta[key] = dt
	}
	if dt == nil {
		// No metadata in this process: a type per tracepoint and event id.
		nk := dotnetKey{pid: -1, attr: a.index, eventID: parts.eventID}
		if dt = rd.dotnetMeta[nk]; dt == nil {
			et := trace.EventType{Provider: a.tp.Name, Name: "EventID(" + strconv.Itoa(int(parts.eventID)) + ")", ID: int64(parts.eventID)}
			dt = &dotnetType{}
			if d := rd.opts.DotNet; d != nil {
				if net, schema, ok := d.Native(a.tp.Name, parts.eventID); ok {
					et, dt.schema = net, schema
				}
			}
			dt.typeID = rd.addType(et, typeInfo{attr: a, dotnet: dt})
			rd.dotnetMeta[nk] = dt
		}
	}
	ev.Type = dt.typeID
	if act != nil || related != nil {
		ev.Labels = rd.activityLabels(act, related, true)
	}
}

// dotnetType makes the event type of .NET metadata.
func (rd *Reader) dotnetType(a *attr, eventID uint16, meta []byte) *dotnetType {
	dt := &dotnetType{}
	var et trace.EventType
	if d := rd.opts.DotNet; d != nil {
		t, schema, err := d.ParseMetadata(meta)
		if err == nil {
			et, dt.schema = t, schema
		} else {
			rd.meta.Notices = append(rd.meta.Notices, ".NET metadata of event "+strconv.Itoa(int(eventID))+" on "+a.tp.Name+" undecodable: "+err.Error())
		}
	}
	if et.Name == "" && et.Provider == "" {
		if h, ok := parseDotNetMetadataHeader(meta); ok {
			et.Provider, et.Name, et.Keywords = h.Provider, h.Name, h.Keywords
			et.Version, et.Level = int(h.Version), int(h.Level)
		}
	}
	if et.Provider == "" {
		et.Provider = a.tp.Name
	}
	if et.Name == "" {
		et.Name = "EventID(" + strconv.Itoa(int(eventID)) + ")"
	}
	et.ID = int64(eventID)
	dt.typeID = rd.addType(et, typeInfo{attr: a, dotnet: dt})
	return dt
}

// decodeDotNet decodes a .NET user_events payload through the DotNet
// seam; without a decoder or metadata the payload is one bytes field.
func (rd *Reader) decodeDotNet(ti *typeInfo, raw []byte, dst []trace.Field) ([]trace.Field, error) {
	parts, ok := rd.dotnetSplit(ti.attr.tp, raw)
	if !ok {
		return ti.attr.tp.Decode(raw, rd.bo, dst), nil
	}
	if ti.dotnet.schema != nil {
		return ti.dotnet.schema.DecodePayload(parts.payload, dst)
	}
	return append(dst, trace.Field{Name: "payload", Value: trace.BytesValue(parts.payload)}), nil
}
