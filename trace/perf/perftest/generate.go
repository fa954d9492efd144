package perftest

import (
	"encoding/binary"
	"io"

	"viewer/trace/perf/eventheader/eventheadertest"
	"viewer/trace/perf/tracefs/tracefstest"
)

// SchedSwitchFormat is the tracefs format of sched:sched_switch (Linux
// 6.x), used by [Generate] and the tests.
const SchedSwitchFormat = `name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, "R", "", REC->next_comm, REC->next_pid, REC->next_prio
`

// EventHeaderFormat returns the tracefs format user_events gives an
// EventHeader tracepoint.
func EventHeaderFormat(name string, id uint32) string {
	return "name: " + name + "\nID: " + itoa(uint64(id)) + `
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u8 eventheader_flags;	offset:8;	size:1;	signed:0;
	field:u8 version;	offset:9;	size:1;	signed:0;
	field:u16 id;	offset:10;	size:2;	signed:0;
	field:u16 tag;	offset:12;	size:2;	signed:0;
	field:u8 opcode;	offset:14;	size:1;	signed:0;
	field:u8 level;	offset:15;	size:1;	signed:0;

print fmt: "eventheader_flags=%u version=%u id=%u tag=0x%x opcode=%u level=%u", REC->eventheader_flags, REC->version, REC->id, REC->tag, REC->opcode, REC->level
`
}

// GenerateOptions configure [Generate].
type GenerateOptions struct {
	Pipe, BigEndian, Compress bool
	// Compress2 compresses into COMPRESSED2 records (perf 6.16 and later).
	Compress2 bool
	// SchedEvery makes every n-th sample a sched_switch (0: never).
	SchedEvery int
	// RoundSize is the number of samples per FINISHED_ROUND (0: 1000).
	RoundSize int
}

// Generate writes a perf.data file of n samples: EventHeader user_events
// of four kinds (scalars, a string, a struct with an array, an activity
// id) from eight threads on two CPUs, and optionally sched_switch
// tracepoints, in rounds whose records are out of time order the way
// perf's per-CPU buffers leave them. Fixtures and benchmarks use it.
func Generate(w io.Writer, n int, o GenerateOptions) error {
	const ehID, schedID = 1000, 372
	tp := "MyProvider_L4K1f"
	st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRaw)
	wr, err := NewWriter(w, WriterOptions{
		Pipe: o.Pipe, BigEndian: o.BigEndian, Compress: o.Compress, Compress2: o.Compress2,
		Formats: []tracefstest.Format{{System: "user_events", Text: EventHeaderFormat(tp, ehID)}, {System: "sched", Text: SchedSwitchFormat}},
		Attrs: []Attr{
			{Name: "user_events:" + tp, Type: TypeTracepoint, Config: ehID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{10, 11}},
			{Name: "sched:sched_switch", Type: TypeTracepoint, Config: schedID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{20, 21}},
		},
		Hostname: "generated", OSRelease: "6.6.0", Arch: "x86_64", Cmdline: "perf record -k monotonic",
		WallNS: 1711586712588060000, ClockNS: 1e12,
	})
	if err != nil {
		return err
	}
	var bo binary.AppendByteOrder = binary.LittleEndian
	if o.BigEndian {
		bo = binary.BigEndian
	}
	for t := int32(0); t < 8; t++ {
		wr.Comm(100+t/4, 100+t, "worker-"+itoa(uint64(t)), 1e12)
	}
	common := func(id uint16, pid int32) []byte {
		b := bo.AppendUint16(nil, id)
		b = append(b, 0, 0)
		return bo.AppendUint32(b, uint32(pid))
	}
	act := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	events := make([][]byte, 4)
	payloads := func(i int) []byte {
		switch i % 4 {
		case 0:
			p := bo.AppendUint32(nil, uint32(i))
			return bo.AppendUint64(p, uint64(i)*3)
		case 1:
			return append([]byte("message "), byte('a'+i%26), 0)
		case 2:
			p := bo.AppendUint16(nil, 3)
			for k := 0; k < 3; k++ {
				p = bo.AppendUint32(p, uint32(i+k))
			}
			return append(p, "s\x00"...)
		}
		return bo.AppendUint32(nil, uint32(i))
	}
	defs := []eventheadertest.EventDef{
		{Header: eventheadertest.Header{Level: 4, ID: 1, Version: 1}, Name: "Scalars", Fields: []eventheadertest.FieldDef{
			{Name: "u32", Encoding: eventheadertest.EncValue32}, {Name: "x64", Encoding: eventheadertest.EncValue64, Format: eventheadertest.FmtHexInt}}},
		{Header: eventheadertest.Header{Level: 4, ID: 2}, Name: "Message", Fields: []eventheadertest.FieldDef{
			{Name: "msg", Encoding: eventheadertest.EncZStringChar8}}},
		{Header: eventheadertest.Header{Level: 4, ID: 3, Opcode: 1}, Name: "Nested", Fields: []eventheadertest.FieldDef{
			{Name: "st", Encoding: eventheadertest.EncStruct, Format: 2},
			{Name: "arr", Encoding: eventheadertest.EncValue32, Array: eventheadertest.VArray},
			{Name: "s", Encoding: eventheadertest.EncZStringChar8}}},
		{Header: eventheadertest.Header{Level: 4, ID: 4, Opcode: 2}, Name: "WithActivity", Activity: act, Fields: []eventheadertest.FieldDef{
			{Name: "value", Encoding: eventheadertest.EncValue32, Format: eventheadertest.FmtSignedInt}}},
	}
	round := o.RoundSize
	if round == 0 {
		round = 1000
	}
	round = min(round, max(n, 1))
	var raw []byte
	for j := 0; j < n; j++ {
		// As perf writes them: each round holds CPU 0's buffer, then CPU
		// 1's, each in time order, so the file is out of time order.
		r0 := j / round * round
		size := min(round, n-r0)
		half := (size + 1) / 2
		i := r0 + 2*(j-r0)
		if j-r0 >= half {
			i = r0 + 2*(j-r0-half) + 1
		}
		t := int32(i % 8)
		time := uint64(1e12) + uint64(i)*1000
		s := Sample{PID: 100 + t/4, TID: 100 + t, Time: time, CPU: uint32(t % 2), Period: 1, IP: 0x400000}
		if o.SchedEvery > 0 && i%o.SchedEvery == 0 {
			raw = common(schedID, s.PID)
			raw = append(raw, "worker\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"...)
			raw = bo.AppendUint32(raw, uint32(s.TID))
			raw = bo.AppendUint32(raw, 120)
			raw = bo.AppendUint64(raw, 1)
			raw = append(raw, "swapper/0\x00\x00\x00\x00\x00\x00\x00"...)
			raw = bo.AppendUint32(raw, 0)
			raw = bo.AppendUint32(raw, 120)
			s.Attr, s.Raw = 1, raw
		} else {
			k := i % 4
			d := defs[k]
			d.BigEndian = o.BigEndian
			d.Payload = payloads(i)
			raw = common(ehID, s.PID)
			if k == 1 || k == 3 {
				raw = eventheadertest.AppendEvent(raw, d)
			} else {
				if events[k] == nil {
					d.Payload = nil
					events[k] = eventheadertest.AppendEvent(nil, d)
				}
				raw = append(raw, events[k]...)
				raw = append(raw, payloads(i)...)
			}
			s.Attr, s.Raw = 0, raw
		}
		wr.Sample(s)
		if (j+1)%round == 0 {
			wr.FinishedRound()
		}
	}
	wr.FinishedRound()
	return wr.Close()
}
