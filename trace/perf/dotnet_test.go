package perf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unicode/utf16"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/nettrace"
	"viewer/trace/perf/perftest"
	"viewer/trace/perf/tracefs/tracefstest"
	"viewer/trace/tracetest"
)

// netTraceMetadata builds NetTrace v5 metadata without MetaDataId: the
// header and one Int32 field "Value" (TypeCode 9).
func netTraceMetadata(provider string, id int32, name string, keywords uint64, version, level int32) []byte {
	le := binary.LittleEndian
	utf16z := func(b []byte, s string) []byte {
		for _, u := range utf16.Encode([]rune(s)) {
			b = le.AppendUint16(b, u)
		}
		return le.AppendUint16(b, 0)
	}
	b := utf16z(nil, provider)
	b = le.AppendUint32(b, uint32(id))
	b = utf16z(b, name)
	b = le.AppendUint64(b, keywords)
	b = le.AppendUint32(b, uint32(version))
	b = le.AppendUint32(b, uint32(level))
	b = le.AppendUint32(b, 1) // field count
	b = le.AppendUint32(b, 9) // Int32
	return utf16z(b, "Value")
}

// fakeNetTrace stands in for the NetTrace decoder behind the DotNet seam.
type fakeNetTrace struct{ parsed int }

func (f *fakeNetTrace) ParseMetadata(meta []byte) (trace.EventType, DotNetSchema, error) {
	h, ok := parseDotNetMetadataHeader(meta)
	if !ok {
		return trace.EventType{}, nil, errors.New("bad metadata")
	}
	f.parsed++
	return trace.EventType{Provider: h.Provider, Name: h.Name, Keywords: h.Keywords, Version: int(h.Version), Level: int(h.Level), Opcode: 1,
		Fields: []trace.FieldSpec{{Name: "Value", Type: "int32"}}}, fakeInt32{}, nil
}

func (f *fakeNetTrace) Native(string, uint16) (trace.EventType, DotNetSchema, bool) {
	return trace.EventType{}, nil, false
}

// fakeInt32 is the schema of fakeNetTrace's one event type: an int32 Value.
type fakeInt32 struct{}

func (fakeInt32) DecodePayload(payload []byte, dst []trace.Field) ([]trace.Field, error) {
	if len(payload) < 4 {
		return dst, errors.New("bad payload")
	}
	return append(dst, trace.Field{Name: "Value", Value: trace.IntValue(int64(int32(binary.LittleEndian.Uint32(payload))))}), nil
}

// TestDotNetUserEvents writes .NET runtime user_events (file and pipe
// mode): metadata only on the first event of each kind per process,
// activity ids, native runtime events without metadata.
func TestDotNetUserEvents(t *testing.T) {
	for _, pipe := range []bool{false, true} {
		for _, decoder := range []string{"none", "fake", "nettrace"} {
			dotnetRoundTrip(t, pipe, decoder)
		}
	}
}

func dotnetRoundTrip(t *testing.T, pipe bool, decoder string) {
	withDecoder := decoder != "none"
	f := &memFile{}
	st := uint64(sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod | sampleRaw)
	tp := "DotNETRuntime_5f3e"
	wr, err := perftest.NewWriter(f, perftest.WriterOptions{
		Pipe:    pipe,
		Formats: []tracefstest.Format{{System: "user_events", Text: perftest.DotNetFormat(tp, 900)}},
		Attrs:   []perftest.Attr{{Name: "user_events:" + tp, Type: attrTracepoint, Config: 900, SampleType: st, SampleIDAll: true, IDs: []uint64{1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	// Exception/Start v1: type, message (UTF-16z), EIP, HRESULT, flags, CLR instance.
	exceptionStart := append(append([]byte{'E', 0, 0, 0}, 'm', 0, 0, 0), 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0x15, 0x13, 0x80, 0x10, 0, 9, 0)
	act := []byte{0x04, 0x03, 0x02, 0x01, 0x06, 0x05, 0x08, 0x07, 9, 10, 11, 12, 13, 14, 15, 16}
	hello := netTraceMetadata("Microsoft-Demo", 10, "Hello", 0x4, 1, 4)
	other := netTraceMetadata("Microsoft-Demo", 10, "Other", 0x8, 2, 5)
	events := []struct {
		pid  int32
		ev   perftest.DotNetEvent
		want string // provider:name value
	}{
		{50, perftest.DotNetEvent{EventID: 10, Metadata: hello, Activity: act, Related: act, Payload: le.AppendUint32(nil, 7)}, "Microsoft-Demo:Hello"},
		{50, perftest.DotNetEvent{EventID: 10, Payload: le.AppendUint32(nil, 8)}, "Microsoft-Demo:Hello"},
		{50, perftest.DotNetEvent{EventID: 80, Payload: exceptionStart}, tp + ":EventID(80)"}, // a runtime event: never metadata
		{60, perftest.DotNetEvent{EventID: 10, Metadata: other, Payload: le.AppendUint32(nil, 9)}, "Microsoft-Demo:Other"},
		{60, perftest.DotNetEvent{EventID: 10, Payload: le.AppendUint32(nil, 10)}, "Microsoft-Demo:Other"},
		{50, perftest.DotNetEvent{EventID: 10, Activity: act, Payload: le.AppendUint32(nil, 11)}, "Microsoft-Demo:Hello"},
	}
	for i, e := range events {
		raw := []byte{0x84, 0x03, 0, 0}
		raw = le.AppendUint32(raw, uint32(e.pid))
		wr.Sample(perftest.Sample{PID: e.pid, TID: e.pid, Time: uint64(1000 + i), Raw: perftest.AppendDotNetEvent(raw, le, e.ev)})
	}
	wr.FinishedRound()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	var dec *fakeNetTrace
	opts := Options{}
	switch decoder {
	case "fake":
		dec = &fakeNetTrace{}
		opts.DotNet = dec
	case "nettrace":
		opts.DotNet = nettrace.NewUserEvents()
	}
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)), opts)
	if err != nil {
		t.Fatal(err)
	}
	res := tracetest.Check(t, r, true)
	if res.Err != nil || len(res.Events) != len(events) {
		t.Fatalf("%d events, %v", len(res.Events), res.Err)
	}
	m := r.Meta()
	for i, e := range res.Events {
		et := m.Types[e.Type]
		want := events[i].want
		if decoder == "nettrace" && events[i].ev.EventID == 80 {
			want = "Microsoft-Windows-DotNETRuntime:Exception/Start" // named from the tracepoint and the CLR schema
		}
		if got := et.Provider + ":" + et.Name; got != want {
			t.Errorf("pipe %v decoder %v: event %d is %s, want %s", pipe, decoder, i, got, want)
		}
		if et.Name == "Hello" && (et.Keywords != 4 || et.Version != 1 || et.Level != 4 || et.ID != 10) {
			t.Errorf("event %d: type %+v", i, et)
		}
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		var wantFields string
		switch {
		case events[i].ev.EventID == 80 && decoder == "nettrace":
			wantFields = `[{"name":"ExceptionType","value":"E"},{"name":"ExceptionMessage","value":"m"},{"name":"ExceptionEIP","value":"0x10"},` +
				`{"name":"ExceptionHRESULT","value":"0x80131500"},{"name":"ExceptionFlags","value":"CLSCompliant"},{"name":"ClrInstanceID","value":9}]`
		case events[i].ev.EventID == 80:
			wantFields = `[{"name":"payload","value":"` + hexOf(exceptionStart) + `"}]`
		case withDecoder:
			wantFields = `[{"name":"Value","value":` + itoa(uint64(le.Uint32(events[i].ev.Payload))) + `}]`
		default:
			wantFields = `[{"name":"payload","value":"` + hexOf(events[i].ev.Payload) + `"}]`
		}
		if got := string(export.AppendFields(nil, d.Fields)); got != wantFields {
			t.Errorf("pipe %v decoder %v: event %d fields %s, want %s", pipe, decoder, i, got, wantFields)
		}
		l := r.Labels(e.Labels)
		switch i {
		case 0:
			if len(l) != 2 || l[0].Value.String() != "01020304-0506-0708-090a-0b0c0d0e0f10" || l[1].Key != "RelatedActivityId" {
				t.Errorf("event 0 labels %+v", l)
			}
		case 5:
			if len(l) != 1 || l[0].Key != "ActivityId" {
				t.Errorf("event 5 labels %+v", l)
			}
		default:
			if len(l) != 0 {
				t.Errorf("event %d labels %+v", i, l)
			}
		}
	}
	if dec != nil && dec.parsed != 2 {
		t.Errorf("metadata parsed %d times, want 2 (once per process and event)", dec.parsed)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var s []byte
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}
