package nettrace

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"viewer/trace"
	"viewer/trace/nettrace/nettracetest"
)

// scenario builds a v6 file with nettracetest's Writer and records what
// the reader must give back for it, so that tests compare the two.
type scenario struct {
	t       testing.TB
	buf     bytes.Buffer
	w       *nettracetest.Writer
	clock   trace.Clock
	ptr     int
	threads map[uint64]nettracetest.Thread
	meta    map[uint32]nettracetest.Metadata
	stacks  map[uint32][]uint64
	labels  map[uint32][]trace.Label
	region  []want // events of the current region, in file order
	want    []want // events of finished regions, in time order
	lost    int64
}

// want is an event as the reader must return it, described by content
// rather than by table ids.
type want struct {
	time    trace.Time
	thread  nettracetest.Thread
	capture int64 // capture thread's TID, or -2 when the same as thread
	typ     trace.EventType
	seq     uint32
	cpu     int32
	stack   []uint64
	labels  []trace.Label
	payload []byte
	fields  []trace.Field
}

func newScenario(t testing.TB, freq int64, ptr int) *scenario {
	s := &scenario{
		t: t, ptr: ptr,
		threads: map[uint64]nettracetest.Thread{}, meta: map[uint32]nettracetest.Metadata{},
		stacks: map[uint32][]uint64{}, labels: map[uint32][]trace.Label{},
	}
	wall := time.Date(2026, 11, 21, 17, 0, 0, 123e6, time.UTC)
	s.clock = trace.Clock{TicksPerSecond: uint64(freq), OriginTicks: 1000, Wall: wall}
	s.w = nettracetest.NewWriter(&s.buf, nettracetest.TraceInfo{
		Wall: wall, SyncTicks: 1000, TicksPerSecond: freq, PointerSize: ptr,
		Info: []trace.KeyValue{{Key: "HardwareThreadCount", Value: "8"}, {Key: "ExpectedCPUSamplingRate", Value: "1000000"}, {Key: "SystemPageSize", Value: "4096"}},
	})
	return s
}

func (s *scenario) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) metadata(headerSize int, rows ...nettracetest.Metadata) {
	for _, m := range rows {
		s.meta[m.ID] = m
	}
	s.check(s.w.Metadata(headerSize, rows...))
}

func (s *scenario) threadRows(rows ...nettracetest.Thread) {
	for _, r := range rows {
		s.threads[r.Index] = r
	}
	s.check(s.w.Threads(rows...))
}

func (s *scenario) stackBlock(first uint32, stacks ...[]uint64) {
	for i, st := range stacks {
		s.stacks[first+uint32(i)] = st
	}
	s.check(s.w.Stacks(first, stacks...))
}

func (s *scenario) labelBlock(first uint32, lists ...[]trace.Label) {
	for i, l := range lists {
		s.labels[first+uint32(i)] = l
	}
	s.check(s.w.LabelLists(first, lists...))
}

// events writes an event block. Each event's payload is encoded from
// values by its metadata's schema.
func (s *scenario) events(compressed bool, evs []nettracetest.Event, values [][]trace.Value) {
	for i := range evs {
		e := &evs[i]
		m := s.meta[e.MetadataID]
		if values != nil && values[i] != nil {
			p, err := nettracetest.EncodePayload(m.Fields, values[i])
			s.check(err)
			e.Payload = p
		}
		typ := trace.EventType{Provider: m.Provider, Name: m.Name, ID: int64(m.EventID), Version: int(m.Version),
			Level: int(m.Level), Opcode: int(m.Opcode), Keywords: m.Keywords, Message: m.Message, Fields: Spec(readerFields(m.Fields))}
		w := want{
			time: s.clock.Time(e.Ticks), thread: s.threads[e.Thread], capture: -2, typ: typ, seq: e.Seq,
			cpu: trace.NoCPU, stack: s.stacks[e.Stack], labels: s.labels[e.Labels], payload: e.Payload,
		}
		if e.Capture != e.Thread {
			w.capture = -1
			if c, ok := s.threads[e.Capture]; ok {
				w.capture = c.TID
			}
		} else if e.Proc != 0xffffffff {
			w.cpu = int32(e.Proc)
		}
		for _, l := range w.labels {
			switch l.Key {
			case "Opcode":
				w.typ.Opcode = int(l.Value.Uint())
			case "Keywords":
				w.typ.Keywords = l.Value.Uint()
			case "Level":
				w.typ.Level = int(l.Value.Uint())
			case "Version":
				w.typ.Version = int(l.Value.Uint())
			}
		}
		if values != nil && values[i] != nil {
			w.fields = make([]trace.Field, len(m.Fields))
			for j, f := range m.Fields {
				w.fields[j] = trace.Field{Name: f.Name, Value: values[i][j]}
			}
		}
		s.region = append(s.region, w)
	}
	s.check(s.w.Events(compressed, evs...))
}

func (s *scenario) endRegion() {
	slices.SortStableFunc(s.region, func(a, b want) int {
		switch {
		case a.time < b.time:
			return -1
		case a.time > b.time:
			return 1
		}
		return 0
	})
	s.want = append(s.want, s.region...)
	s.region = nil
}

func (s *scenario) seqPoint(ticks int64, flags uint32, threads ...nettracetest.ThreadSeq) {
	s.check(s.w.SequencePoint(ticks, flags, threads...))
	s.endRegion()
	clear(s.stacks)
	clear(s.labels)
	if flags&nettracetest.FlushThreads != 0 {
		clear(s.threads)
	}
	if flags&nettracetest.FlushMetadata != 0 {
		clear(s.meta)
	}
}

func (s *scenario) close() []byte {
	s.check(s.w.Close())
	s.endRegion()
	return s.buf.Bytes()
}

func guid(b byte) trace.Value {
	var g [16]byte
	for i := range g {
		g[i] = b + byte(i)
	}
	return trace.GUIDValue(g)
}

// Schemas covering every type code.
var (
	scalarFields = []nettracetest.Field{
		{Name: "b32", Type: nettracetest.TypeBoolean32}, {Name: "c16", Type: nettracetest.TypeUTF16CodeUnit}, {Name: "i8", Type: nettracetest.TypeSByte},
		{Name: "u8", Type: nettracetest.TypeByte}, {Name: "i16", Type: nettracetest.TypeInt16}, {Name: "u16", Type: nettracetest.TypeUInt16},
		{Name: "i32", Type: nettracetest.TypeInt32}, {Name: "u32", Type: nettracetest.TypeUInt32}, {Name: "i64", Type: nettracetest.TypeInt64},
		{Name: "u64", Type: nettracetest.TypeUInt64}, {Name: "f32", Type: nettracetest.TypeSingle}, {Name: "f64", Type: nettracetest.TypeDouble},
		{Name: "dec", Type: nettracetest.TypeDecimal}, {Name: "when", Type: nettracetest.TypeDateTime}, {Name: "id", Type: nettracetest.TypeGUID},
		{Name: "s", Type: nettracetest.TypeUTF16String}, {Name: "vi", Type: nettracetest.TypeVarInt}, {Name: "vu", Type: nettracetest.TypeVarUInt},
		{Name: "c8", Type: nettracetest.TypeUTF8CodeUnit}, {Name: "b8", Type: nettracetest.TypeBoolean8},
	}
	containerFields = []nettracetest.Field{
		{Name: "obj", Type: nettracetest.TypeObject, Fields: []nettracetest.Field{{Name: "a", Type: nettracetest.TypeInt32}, {Name: "name", Type: nettracetest.TypeUTF16String}}},
		{Name: "ints", Type: nettracetest.TypeArray, Elem: &nettracetest.Field{Type: nettracetest.TypeInt32}},
		{Name: "text16", Type: nettracetest.TypeArray, Elem: &nettracetest.Field{Type: nettracetest.TypeUTF16CodeUnit}},
		{Name: "objs", Type: nettracetest.TypeArray, Elem: &nettracetest.Field{Type: nettracetest.TypeObject, Fields: []nettracetest.Field{{Name: "x", Type: nettracetest.TypeVarUInt}, {Name: "ok", Type: nettracetest.TypeBoolean8}}}},
		{Name: "fixed", Type: nettracetest.TypeFixedArray, Elem: &nettracetest.Field{Type: nettracetest.TypeUInt16}, Count: 3},
		{Name: "text8", Type: nettracetest.TypeFixedArray, Elem: &nettracetest.Field{Type: nettracetest.TypeUTF8CodeUnit}, Count: 5},
		{Name: "rel", Type: nettracetest.TypeRelLoc, Elem: &nettracetest.Field{Type: nettracetest.TypeInt32}},
		{Name: "data", Type: nettracetest.TypeDataLoc, Elem: &nettracetest.Field{Type: nettracetest.TypeUTF16CodeUnit}},
		{Name: "raw", Type: nettracetest.TypeArray, Elem: &nettracetest.Field{Type: nettracetest.TypeByte}},
		{Name: "tail", Type: nettracetest.TypeUInt64},
	}
)

func scalarValues(i int) []trace.Value {
	n := int64(i)
	return []trace.Value{
		trace.BoolValue(i%2 == 0), trace.StringValue("é"), trace.IntValue(-n % 128), trace.UintValue(uint64(n % 256)),
		trace.IntValue(-n * 3 % 32768), trace.UintValue(uint64(n * 7 % 65536)), trace.IntValue(-n * 100003),
		trace.UintValue(uint64(n) * 4000000), trace.IntValue(-n << 40), trace.UintValue(uint64(n) << 50),
		trace.FloatValue(float64(i) + 0.5), trace.FloatValue(float64(i) / 3), trace.BytesValue(bytes.Repeat([]byte{byte(i)}, 16)),
		trace.TimeValue(time.Date(2026, 1, 2, 3, 4, 5, i*100, time.UTC)), guid(byte(i)),
		trace.StringValue("event " + string(rune('A'+i%26)) + " 😀"), trace.IntValue(-n * 1000), trace.UintValue(uint64(n) << 33),
		trace.StringValue("z"), trace.BoolValue(i%3 == 0),
	}
}

func containerValues(i int) []trace.Value {
	ints := make([]trace.Value, i%4)
	for j := range ints {
		ints[j] = trace.IntValue(int64(j*i - 5))
	}
	objs := []trace.Value{
		trace.StructValue([]trace.Field{{Name: "x", Value: trace.UintValue(uint64(i))}, {Name: "ok", Value: trace.BoolValue(true)}}),
		trace.StructValue([]trace.Field{{Name: "x", Value: trace.UintValue(300)}, {Name: "ok", Value: trace.BoolValue(false)}}),
	}
	return []trace.Value{
		trace.StructValue([]trace.Field{{Name: "a", Value: trace.IntValue(int64(i))}, {Name: "name", Value: trace.StringValue("nested")}}),
		trace.ArrayValue(ints),
		trace.StringValue("array of char16"),
		trace.ArrayValue(objs[:i%3]),
		trace.ArrayValue([]trace.Value{trace.UintValue(1), trace.UintValue(2), trace.UintValue(uint64(i))}),
		trace.StringValue("five!"),
		trace.ArrayValue([]trace.Value{trace.IntValue(7), trace.IntValue(int64(-i))}),
		trace.StringValue("dataloc"),
		trace.BytesValue([]byte{1, 2, byte(i)}),
		trace.UintValue(0xdeadbeef),
	}
}

// allFeatures builds a v6 file with every type code, every label kind,
// optional metadata, thread removal, metadata and thread flushes,
// compressed and uncompressed headers, an unknown block kind, lost events
// and events out of time order across threads.
func allFeatures(t testing.TB) (*scenario, []byte) {
	s := newScenario(t, 10_000_000, 8)
	s.metadata(0,
		nettracetest.Metadata{ID: 1, Provider: "Test.Provider", EventID: 1, Name: "Scalars", Fields: scalarFields, Level: 4, Version: 1},
		nettracetest.Metadata{ID: 2, Provider: "Test.Provider", EventID: 2, Name: "Containers", Fields: containerFields},
		nettracetest.Metadata{ID: 3, Provider: "Other", EventID: 77, Name: "OptionsStart", HasOpcode: true, Opcode: 1, Keywords: 0xf00,
			Message: "msg %1", Description: "described", KeyValues: []trace.KeyValue{{Key: "k", Value: "v"}},
			ProviderGUID: [16]byte{1, 2, 3}, Level: 5, Version: 2},
	)
	s.metadata(3, nettracetest.Metadata{ID: 4, Provider: "Other", EventID: 78, Name: "Empty"}) // a header with reserved bytes
	s.threadRows(
		nettracetest.Thread{Index: 1, Name: "main", PID: 100, TID: 1000},
		nettracetest.Thread{Index: 2, PID: 100, TID: 1001, KeyValues: []trace.KeyValue{{Key: "role", Value: "worker"}}},
		nettracetest.Thread{Index: 3, Name: "sampler", PID: 200, TID: 2000},
	)
	s.stackBlock(1, []uint64{0x1000, 0x2000, 0xffff_ffff_0000}, []uint64{0x3000}, []uint64{0x1000, 0x2000, 0xffff_ffff_0000})
	lists := [][]trace.Label{
		{{Key: "ActivityId", Value: guid(1)}},
		{{Key: "ActivityId", Value: guid(2)}, {Key: "RelatedActivityId", Value: guid(3)}},
		{{Key: "TraceId", Value: trace.BytesValue(bytes.Repeat([]byte{9}, 16))}, {Key: "SpanId", Value: trace.HexValue(0xabc)}},
		{{Key: "user", Value: trace.StringValue("alice")}, {Key: "count", Value: trace.IntValue(-42)}},
		{{Key: "Opcode", Value: trace.UintValue(9)}, {Key: "Keywords", Value: trace.HexValue(0xff)}, {Key: "Level", Value: trace.UintValue(2)}, {Key: "Version", Value: trace.UintValue(3)}},
	}
	s.labelBlock(1, lists...)
	var vals [][]trace.Value
	var evs []nettracetest.Event
	add := func(e nettracetest.Event, v []trace.Value) {
		evs = append(evs, e)
		vals = append(vals, v)
	}
	// Thread 2's events come before thread 1's in time but after them in
	// the file; the sampler (capture thread 3) samples thread 1.
	add(nettracetest.Event{MetadataID: 1, Seq: 1, Thread: 1, Capture: 1, Proc: 2, Stack: 1, Ticks: 5000, Labels: 1, Sorted: true}, scalarValues(1))
	add(nettracetest.Event{MetadataID: 1, Seq: 2, Thread: 1, Capture: 1, Proc: 2, Stack: 1, Ticks: 7000, Labels: 1}, scalarValues(2))
	add(nettracetest.Event{MetadataID: 2, Seq: 3, Thread: 1, Capture: 1, Proc: 3, Stack: 2, Ticks: 7000, Labels: 2}, containerValues(3))
	add(nettracetest.Event{MetadataID: 2, Seq: 1, Thread: 2, Capture: 2, Proc: 0xffffffff, Ticks: 4000, Labels: 3}, containerValues(4))
	add(nettracetest.Event{MetadataID: 3, Seq: 2, Thread: 2, Capture: 2, Proc: 1, Stack: 3, Ticks: 6000, Labels: 4}, []trace.Value{})
	add(nettracetest.Event{MetadataID: 3, Seq: 1, Thread: 1, Capture: 3, Proc: 0, Stack: 2, Ticks: 6500, Labels: 5}, []trace.Value{})
	add(nettracetest.Event{MetadataID: 4, Seq: 2, Thread: 1, Capture: 3, Proc: 0, Ticks: 6500}, []trace.Value{})
	s.events(true, evs, vals)
	s.check(s.w.Block(42, []byte("a block of a kind from a newer minor version")))
	evs, vals = nil, nil
	add(nettracetest.Event{MetadataID: 1, Seq: 6, Thread: 1, Capture: 1, Proc: 1, Stack: 2, Ticks: 8000, Labels: 2}, scalarValues(5)) // 2 lost
	add(nettracetest.Event{MetadataID: 2, Seq: 3, Thread: 2, Capture: 2, Proc: 1, Ticks: 7500}, containerValues(6))
	s.events(false, evs, vals)
	s.lost += 2
	s.seqPoint(9000, 0, nettracetest.ThreadSeq{Index: 1, Seq: 8}, nettracetest.ThreadSeq{Index: 2, Seq: 3}) // thread 1: 2 more lost
	s.lost += 2

	// region 2: stack and label ids restart with other contents
	s.stackBlock(1, []uint64{0x5000})
	s.labelBlock(1, []trace.Label{{Key: "ActivityId", Value: guid(7)}})
	evs, vals = nil, nil
	add(nettracetest.Event{MetadataID: 1, Seq: 9, Thread: 1, Capture: 1, Proc: 0, Stack: 1, Ticks: 9500, Labels: 1}, scalarValues(7))
	add(nettracetest.Event{MetadataID: 2, Seq: 4, Thread: 2, Capture: 2, Proc: 0, Ticks: 9400}, containerValues(8))
	s.events(true, evs, vals)
	s.check(s.w.RemoveThreads(nettracetest.ThreadSeq{Index: 2, Seq: 10})) // 6 lost at removal
	s.lost += 6
	delete(s.threads, 2)
	s.seqPoint(10000, nettracetest.FlushThreads|nettracetest.FlushMetadata)

	// region 3: metadata id 1 and thread index 1 mean something else now
	s.metadata(0, nettracetest.Metadata{ID: 1, Provider: "Test.Provider", EventID: 9, Name: "AfterFlush",
		Fields: []nettracetest.Field{{Name: "v", Type: nettracetest.TypeVarInt}}})
	s.threadRows(nettracetest.Thread{Index: 1, Name: "reborn", PID: 300, TID: 3000}, nettracetest.Thread{Index: 2, Name: "main again", PID: 100, TID: 1000})
	evs, vals = nil, nil
	for i := range 5 {
		add(nettracetest.Event{MetadataID: 1, Seq: uint32(i/2 + 1), Thread: uint64(1 + i%2), Capture: uint64(1 + i%2), Proc: 0,
			Ticks: int64(12000 - i*100)}, []trace.Value{trace.IntValue(int64(-i))})
	}
	s.events(true, evs, vals)
	return s, s.close()
}

// readerFields converts a schema as the writer takes it to the reader's
// description of the same schema, type code by type code: the writer
// shares no types with the reader, so that it encodes the format on its
// own.
func readerFields(fs []nettracetest.Field) []Field {
	if fs == nil {
		return nil
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = Field{Name: f.Name, Type: TypeCode(f.Type), Count: f.Count, Fields: readerFields(f.Fields)}
		if f.Elem != nil {
			out[i].Elem = &readerFields([]nettracetest.Field{*f.Elem})[0]
		}
	}
	return out
}

// writerFields converts a schema the reader read from a file's metadata
// to the writer's description. The writer writes what v6 metadata can
// say: a CountField (only the CLR schema has them, never a file) is lost.
func writerFields(fs []Field) []nettracetest.Field {
	if fs == nil {
		return nil
	}
	out := make([]nettracetest.Field, len(fs))
	for i, f := range fs {
		out[i] = nettracetest.Field{Name: f.Name, Type: nettracetest.TypeCode(f.Type), Count: f.Count, Fields: writerFields(f.Fields)}
		if f.Elem != nil {
			out[i].Elem = &writerFields([]Field{*f.Elem})[0]
		}
	}
	return out
}
