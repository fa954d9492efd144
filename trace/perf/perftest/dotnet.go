package perftest

import "encoding/binary"

// .NET runtime user_events (.NET 10+, "Tracepoint Format V1"): the runtime
// registers "<name> u8 version; u16 event_id; __rel_loc u8[] extension;
// __rel_loc u8[] payload" and writes, per event, an extension blob of
// labels and the EventPipe payload. Labels: 0x01 NetTrace metadata with a
// u32 little-endian length, 0x02 ActivityId and 0x03 RelatedActivityId
// (16-byte GUIDs in Windows layout).
const (
	dotnetLabelMetadata = 0x01
	dotnetLabelActivity = 0x02
	dotnetLabelRelated  = 0x03
	dotnetFormatVersion = 1
)

// DotNetFormat returns the tracefs format user_events gives a .NET runtime
// tracepoint (fields packed without alignment).
func DotNetFormat(name string, id uint32) string {
	return "name: " + name + "\nID: " + itoa(uint64(id)) + `
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u8 version;	offset:8;	size:1;	signed:0;
	field:u16 event_id;	offset:9;	size:2;	signed:0;
	field:__rel_loc u8[] extension;	offset:11;	size:4;	signed:0;
	field:__rel_loc u8[] payload;	offset:15;	size:4;	signed:0;

print fmt: "version=%u event_id=%u", REC->version, REC->event_id
`
}

// DotNetEvent is a .NET runtime user_events event for [AppendDotNetEvent].
type DotNetEvent struct {
	EventID  uint16
	Metadata []byte // NetTrace v5 metadata without MetaDataId, or nil
	Activity []byte // 16 bytes (Windows layout) or nil
	Related  []byte // 16 bytes or nil
	Payload  []byte
}

// AppendDotNetEvent appends what the runtime writes after the common
// fields (version, event id, the two __rel_loc fields, extension, payload)
// to raw, which must hold the 8 common bytes. bo is the file's byte order.
func AppendDotNetEvent(raw []byte, bo binary.AppendByteOrder, e DotNetEvent) []byte {
	var ext []byte
	if e.Activity != nil {
		ext = append(append(ext, dotnetLabelActivity), e.Activity...)
	}
	if e.Related != nil {
		ext = append(append(ext, dotnetLabelRelated), e.Related...)
	}
	if e.Metadata != nil {
		ext = append(ext, dotnetLabelMetadata)
		ext = binary.LittleEndian.AppendUint32(ext, uint32(len(e.Metadata)))
		ext = append(ext, e.Metadata...)
	}
	raw = append(raw, dotnetFormatVersion)
	raw = bo.AppendUint16(raw, e.EventID)
	// __rel_loc: length << 16 | offset from the end of the field.
	raw = bo.AppendUint32(raw, uint32(len(ext))<<16|4)
	raw = bo.AppendUint32(raw, uint32(len(e.Payload))<<16|uint32(len(ext)))
	raw = append(raw, ext...)
	return append(raw, e.Payload...)
}
