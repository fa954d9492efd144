package nettrace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
)

// netperfHead is the start of a NetPerf file whose trace object has the
// given type name and version.
func netperfHead(name string, version uint32) []byte {
	b := []byte("\x14\x00\x00\x00!FastSerialization.1")
	b = append(b, tagBegin, tagBegin, tagNull)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	b = append(b, tagEndObject)
	return append(b, make([]byte, 64)...)
}

// TestOpenErrors checks the errors for files the reader refuses.
func TestOpenErrors(t *testing.T) {
	v6 := func(major uint32) []byte {
		b := []byte("Nettrace\x00\x00\x00\x00")
		b = binary.LittleEndian.AppendUint32(b, major)
		return binary.LittleEndian.AppendUint32(b, 0)
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		is    error
		match string
	}{
		{"netperf v1", netperfHead("Microsoft.DotNet.Runtime.EventPipeFile", 1), trace.ErrUnsupported, "NetPerf version 1 is not supported"},
		{"netperf v2", netperfHead("Microsoft.DotNet.Runtime.EventPipeFile", 2), trace.ErrUnsupported, "NetPerf version 2 is not supported"},
		{"netperf trace v9", netperfHead("Trace", 9), trace.ErrUnsupported, "trace object version 9"},
		{"nettrace v7", v6(7), trace.ErrUnsupported, "major version 7"},
		{"other object", netperfHead("Banana", 3), nil, `first object is "Banana"`},
		{"empty", nil, trace.ErrTruncated, "truncated at byte 0"},
		{"magic cut", []byte("Nett"), trace.ErrTruncated, "truncated at byte 4"},
		{"garbage", []byte("PK\x03\x04 not a trace at all"), nil, "not a NetTrace or NetPerf file at byte 0"},
		{"v6 without trace block", append(v6(6), 0, 0, 0, 0), nil, "want a Trace block"},
	} {
		_, err := NewReader(bytes.NewReader(tc.data), int64(len(tc.data)))
		if err == nil || !strings.Contains(err.Error(), tc.match) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: error %v, want one containing %q (is %v)", tc.name, err, tc.match, tc.is)
		}
		if _, ok := errors.AsType[*trace.FormatError](err); !ok {
			t.Errorf("%s: %T is not a *trace.FormatError", tc.name, err)
		}
	}
}

// TestDamagedV6 builds files that break the format's rules with the writer
// and checks that the events before the damage come out, then an error
// naming it.
func TestDamagedV6(t *testing.T) {
	meta := nettracetest.Metadata{ID: 1, Provider: "P", EventID: 1, Name: "E"}
	good := nettracetest.Event{MetadataID: 1, Seq: 1, Thread: 1, Capture: 1, Ticks: 10}
	for _, tc := range []struct {
		name  string
		build func(w *nettracetest.Writer)
		match string
	}{
		{"unknown thread", func(w *nettracetest.Writer) {
			w.Events(true, nettracetest.Event{MetadataID: 1, Seq: 2, Thread: 9, Capture: 9, Ticks: 20})
		}, "unknown thread index 9"},
		{"duplicate thread", func(w *nettracetest.Writer) { w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 5}) }, "thread index 1 defined twice"},
		{"undefined metadata", func(w *nettracetest.Writer) {
			w.Events(true, nettracetest.Event{MetadataID: 5, Seq: 2, Thread: 1, Capture: 1, Ticks: 20})
		}, "undefined metadata id 5"},
		{"duplicate metadata", func(w *nettracetest.Writer) { w.Metadata(0, meta) }, "metadata id 1 defined twice"},
		{"undefined stack", func(w *nettracetest.Writer) {
			w.Events(true, nettracetest.Event{MetadataID: 1, Seq: 2, Thread: 1, Capture: 1, Stack: 4, Ticks: 20})
		}, "undefined stack id 4"},
		{"undefined label list", func(w *nettracetest.Writer) {
			w.Events(true, nettracetest.Event{MetadataID: 1, Seq: 2, Thread: 1, Capture: 1, Labels: 3, Ticks: 20})
		}, "undefined label list 3"},
		{"unknown label kind", func(w *nettracetest.Writer) {
			w.Block(nettracetest.BlockLabelList, []byte{1, 0, 0, 0, 1, 0, 0, 0, 0x8b})
		}, "label of unknown kind 11"},
		{"event record overrun", func(w *nettracetest.Writer) {
			w.Block(nettracetest.BlockEvent, append([]byte{20, 0, 1, 0, 15: 0, 19: 0}, 0x81, 1, 100, 90, 2))
		}, "overruns its block"},
		{"stack block overrun", func(w *nettracetest.Writer) {
			w.Block(nettracetest.BlockStack, []byte{1, 0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 0})
		}, "overruns its block"},
		{"second trace block", func(w *nettracetest.Writer) { w.Block(nettracetest.BlockTrace, nil) }, "a second trace block"},
	} {
		var buf bytes.Buffer
		w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1000, PointerSize: 8})
		w.Metadata(0, meta)
		w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 2})
		w.Events(true, good)
		tc.build(w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, res := readAll(t, buf.Bytes())
		if len(res.Events) != 1 || res.Err == nil || !strings.Contains(res.Err.Error(), tc.match) || errors.Is(res.Err, trace.ErrTruncated) {
			t.Errorf("%s: %d events, error %v; want 1 event then an error containing %q", tc.name, len(res.Events), res.Err, tc.match)
		}
	}
}
