package nettrace

import (
	"encoding/binary"
	"testing"
	"unicode/utf16"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/export"
)

// decodeManifest decodes a payload the way Details does for a runtime
// event: the manifest schema converted, then value maps applied.
func decodeManifest(t *testing.T, provider string, id, version int, payload []byte, ptr int) ([]trace.Field, int) {
	t.Helper()
	e, ok := clr.NewSchema().Lookup(provider, id, version)
	if !ok {
		t.Fatalf("no schema for %s %d v%d", provider, id, version)
	}
	fields, used := DecodePayload(payload, fromManifest(e.Fields), ptr)
	applyMaps(fields, e.Fields, nil)
	return fields, used
}

func TestManifestGCStart(t *testing.T) {
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, 7)  // Count
	p = binary.LittleEndian.AppendUint32(p, 1)  // Depth
	p = binary.LittleEndian.AppendUint32(p, 1)  // Reason: Induced
	p = binary.LittleEndian.AppendUint32(p, 0)  // Type: NonConcurrentGC
	p = binary.LittleEndian.AppendUint16(p, 3)  // ClrInstanceID
	p = binary.LittleEndian.AppendUint64(p, 99) // ClientSequenceNumber
	long := append(append([]byte(nil), p...), 1, 2, 3)

	fields, used := decodeManifest(t, providerRuntime, 1, 2, long, 8)
	got := string(export.AppendFields(nil, fields))
	want := `[{"name":"Count","value":7},{"name":"Depth","value":1},{"name":"Reason","value":"Induced"},` +
		`{"name":"Type","value":"NonConcurrentGC"},{"name":"ClrInstanceID","value":3},{"name":"ClientSequenceNumber","value":99}]`
	if got != want || used != len(p) {
		t.Errorf("newer runtime's longer payload: %s used %d\nwant %s used %d", got, used, want, len(p))
	}
	// An older runtime's shorter payload decodes the fields that are there.
	if fields, _ := decodeManifest(t, providerRuntime, 1, 2, p[:18], 8); len(fields) != 5 {
		t.Errorf("short payload: %d fields, want 5", len(fields))
	}
}

func TestManifestStringsPointersCounts(t *testing.T) {
	// Exception/Start v1: two strings, a pointer of the trace's size.
	var p []byte
	for _, s := range []string{"System.InvalidOperationException", "héllo"} {
		for _, u := range utf16.Encode([]rune(s)) {
			p = binary.LittleEndian.AppendUint16(p, u)
		}
		p = append(p, 0, 0)
	}
	p = binary.LittleEndian.AppendUint32(p, 0xdeadbeef) // ExceptionEIP, 4-byte pointer
	p = binary.LittleEndian.AppendUint32(p, 0x80131509)
	p = binary.LittleEndian.AppendUint16(p, 16)
	p = binary.LittleEndian.AppendUint16(p, 1)
	fields, used := decodeManifest(t, providerRuntime, 80, 1, p, 4)
	got := string(export.AppendFields(nil, fields))
	want := `[{"name":"ExceptionType","value":"System.InvalidOperationException"},{"name":"ExceptionMessage","value":"héllo"},` +
		`{"name":"ExceptionEIP","value":"0xdeadbeef"},{"name":"ExceptionHRESULT","value":"0x80131509"},` +
		`{"name":"ExceptionFlags","value":"CLSCompliant"},{"name":"ClrInstanceID","value":1}]`
	if got != want || used != len(p) {
		t.Errorf("got  %s used %d\nwant %s used %d", got, used, want, len(p))
	}

	// A count field larger than the payload decodes what fits and stops.
	fields, _ = decodeManifest(t, providerRuntime, 190, 0, binary.LittleEndian.AppendUint16(make([]byte, 17), 0xffff), 8)
	if len(fields) > 5 {
		t.Errorf("hostile count: %d fields", len(fields))
	}
}
