package perftest

import (
	"encoding/binary"
	"io"

	"viewer/trace/perf/tracefs/tracefstest"
)

// Tracefs formats of the scheduler and raw syscall tracepoints (Linux
// 6.x, x86-64), for [GenerateSched] and the tests.
const (
	SchedWakeupFormat = `name: sched_wakeup
ID: 374
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t pid;	offset:24;	size:4;	signed:1;
	field:int prio;	offset:28;	size:4;	signed:1;
	field:int target_cpu;	offset:32;	size:4;	signed:1;

print fmt: "comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, REC->target_cpu
`
	SysEnterFormat = `name: sys_enter
ID: 22
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:unsigned long args[6];	offset:16;	size:48;	signed:0;

print fmt: "NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]
`
	SysExitFormat = `name: sys_exit
ID: 21
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:long ret;	offset:16;	size:8;	signed:1;

print fmt: "NR %ld = %ld", REC->id, REC->ret
`
)

// Tracefs ids of the formats above.
const (
	SchedSwitchID = 372
	SchedWakeupID = 374
	SysEnterID    = 22
	SysExitID     = 21
)

// SchedAttrs are the attrs of a scheduler recording, in the order
// [SchedWriter] and [GenerateSched] use: sched_switch, sched_wakeup,
// sys_enter, sys_exit.
func SchedAttrs() []Attr {
	st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRaw)
	return []Attr{
		{Name: "sched:sched_switch", Type: TypeTracepoint, Config: SchedSwitchID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{30}},
		{Name: "sched:sched_wakeup", Type: TypeTracepoint, Config: SchedWakeupID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{31}},
		{Name: "raw_syscalls:sys_enter", Type: TypeTracepoint, Config: SysEnterID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{32}},
		{Name: "raw_syscalls:sys_exit", Type: TypeTracepoint, Config: SysExitID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{33}},
	}
}

// SchedOptions are the writer options of a scheduler recording on arch
// ("x86_64", "aarch64"), with the formats and attrs above.
func SchedOptions(arch string) WriterOptions {
	return WriterOptions{
		Formats: []tracefstest.Format{{System: "sched", Text: SchedSwitchFormat}, {System: "sched", Text: SchedWakeupFormat},
			{System: "raw_syscalls", Text: SysEnterFormat}, {System: "raw_syscalls", Text: SysExitFormat}},
		Attrs:    SchedAttrs(),
		Hostname: "generated", OSRelease: "6.6.0", Arch: arch, Cmdline: "perf record -e sched:*,raw_syscalls:* -a",
	}
}

// SchedWriter writes the samples of a scheduler recording.
type SchedWriter struct {
	W   *Writer
	raw []byte
}

func (s *SchedWriter) common(id uint16, pid int32) []byte {
	b := s.W.bo.AppendUint16(s.raw[:0], id)
	b = append(b, 0, 0)
	return s.W.bo.AppendUint32(b, uint32(pid))
}

func appendComm(b []byte, comm string) []byte {
	var c [16]byte
	copy(c[:15], comm)
	return append(b, c[:]...)
}

// Switch writes a sched_switch on cpu at time t from the thread pid/tid
// (prev) to next.
func (s *SchedWriter) Switch(t uint64, cpu uint32, pid, tid int32, prevComm string, prevState int64, nextTID int32, nextComm string) {
	b := s.common(SchedSwitchID, tid)
	b = appendComm(b, prevComm)
	b = s.W.bo.AppendUint32(b, uint32(tid))
	b = s.W.bo.AppendUint32(b, 120)
	b = s.W.bo.AppendUint64(b, uint64(prevState))
	b = appendComm(b, nextComm)
	b = s.W.bo.AppendUint32(b, uint32(nextTID))
	b = s.W.bo.AppendUint32(b, 120)
	s.raw = b
	s.W.Sample(Sample{Attr: 0, PID: pid, TID: tid, Time: t, CPU: cpu, Period: 1, IP: 0xffffffff81000000, Raw: b})
}

// Wakeup writes a sched_wakeup of target written by pid/tid on cpu.
func (s *SchedWriter) Wakeup(t uint64, cpu uint32, pid, tid int32, target int32, targetComm string) {
	b := s.common(SchedWakeupID, tid)
	b = appendComm(b, targetComm)
	b = s.W.bo.AppendUint32(b, uint32(target))
	b = s.W.bo.AppendUint32(b, 120)
	b = s.W.bo.AppendUint32(b, cpu)
	s.raw = b
	s.W.Sample(Sample{Attr: 1, PID: pid, TID: tid, Time: t, CPU: cpu, Period: 1, IP: 0xffffffff81000000, Raw: b})
}

// SysEnter writes a raw_syscalls:sys_enter of syscall nr.
func (s *SchedWriter) SysEnter(t uint64, cpu uint32, pid, tid int32, nr int64) {
	b := s.common(SysEnterID, tid)
	b = s.W.bo.AppendUint64(b, uint64(nr))
	b = append(b, make([]byte, 48)...)
	s.raw = b
	s.W.Sample(Sample{Attr: 2, PID: pid, TID: tid, Time: t, CPU: cpu, Period: 1, IP: 0xffffffff81000000, Raw: b})
}

// SysExit writes a raw_syscalls:sys_exit of syscall nr returning ret.
func (s *SchedWriter) SysExit(t uint64, cpu uint32, pid, tid int32, nr, ret int64) {
	b := s.common(SysExitID, tid)
	b = s.W.bo.AppendUint64(b, uint64(nr))
	b = s.W.bo.AppendUint64(b, uint64(ret))
	s.raw = b
	s.W.Sample(Sample{Attr: 3, PID: pid, TID: tid, Time: t, CPU: cpu, Period: 1, IP: 0xffffffff81000000, Raw: b})
}

// GenerateSched writes a file-mode perf.data scheduler recording of
// about n samples on cpus processors (at least 1) running threads
// threads each (tids 1000+): every CPU, one event per microsecond in
// turn, has its running thread make two syscalls (read, write), wake
// another thread, make one more (futex) and switch to the next thread of
// its own. A round is written every 4096 samples. `viewer bench
// --generate-sched` uses it.
func GenerateSched(w io.WriteSeeker, n int64, cpus, threads int) error {
	cpus, threads = max(cpus, 1), max(threads, 1)
	wr, err := NewWriter(w, SchedOptions("x86_64"))
	if err != nil {
		return err
	}
	s := &SchedWriter{W: wr}
	comm := func(tid int32) string { return "worker-" + itoa(uint64(tid)) }
	for c := range cpus {
		for k := range threads {
			tid := int32(1000 + c*threads + k)
			wr.Comm(tid, tid, comm(tid), 1e9)
		}
	}
	running := make([]int, cpus)
	phase := make([]int, cpus)
	t := uint64(1e9)
	for i := int64(0); i < n; i++ {
		c := int(i % int64(cpus))
		tid := int32(1000 + c*threads + running[c])
		cpu := uint32(c)
		switch phase[c] {
		case 0, 2:
			s.SysEnter(t, cpu, tid, tid, 0+int64(phase[c]/2))
		case 1, 3:
			s.SysExit(t, cpu, tid, tid, 0+int64(phase[c]/2), 8)
		case 4:
			other := int32(1000 + c*threads + (running[c]+2)%threads)
			s.Wakeup(t, cpu, tid, tid, other, comm(other))
		case 5:
			s.SysEnter(t, cpu, tid, tid, 202)
		case 6:
			s.SysExit(t, cpu, tid, tid, 202, 0)
		case 7:
			running[c] = (running[c] + 1) % threads
			next := int32(1000 + c*threads + running[c])
			s.Switch(t, cpu, tid, tid, comm(tid), int64(i/8%2), next, comm(next))
		}
		phase[c] = (phase[c] + 1) % 8
		t += 1000 / uint64(cpus)
		if (i+1)%4096 == 0 {
			wr.FinishedRound()
		}
	}
	wr.FinishedRound()
	return wr.Close()
}

// TickFormat is the tracefs format of test:tick, a tracepoint with one
// u32 field, value (ID 900), that [GenerateSyscalls] writes.
const TickFormat = `name: tick
ID: 900
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u32 value;	offset:8;	size:4;	signed:0;

print fmt: "value=%u", REC->value
`

// SyscallsOptions describe the recording [GenerateSyscalls] writes.
type SyscallsOptions struct {
	N      int          // read syscalls
	Longer int          // the syscall that lasts 2 µs more (-1: none)
	Skip   map[int]bool // the syscalls without their tick
}

// GenerateSyscalls writes a perf.data file with known contents, for
// tests that compare recordings: thread 7 ("app") makes o.N read
// syscalls, one every 10 µs from 1 s, lasting 2 µs (o.Longer 2 µs more),
// each with a test:tick of value 42 1 µs in, except those in o.Skip.
func GenerateSyscalls(w io.WriteSeeker, o SyscallsOptions) error {
	opts := SchedOptions("x86_64")
	opts.Formats = append(opts.Formats, tracefstest.Format{System: "test", Text: TickFormat})
	opts.Attrs = append(opts.Attrs, Attr{Name: "test:tick", Type: TypeTracepoint, Config: 900,
		SampleType: opts.Attrs[0].SampleType, SampleIDAll: true, ClockID: 1, IDs: []uint64{40}})
	wr, err := NewWriter(w, opts)
	if err != nil {
		return err
	}
	wr.Comm(7, 7, "app", 1)
	s := &SchedWriter{W: wr}
	tick := len(opts.Attrs) - 1
	for i := range o.N {
		t0 := uint64(1e9 + i*10_000)
		s.SysEnter(t0, 0, 7, 7, 0)
		if !o.Skip[i] {
			raw := binary.LittleEndian.AppendUint16(nil, 900)
			raw = append(raw, 0, 0)
			raw = binary.LittleEndian.AppendUint32(raw, 7)
			raw = binary.LittleEndian.AppendUint32(raw, 42)
			wr.Sample(Sample{Attr: tick, PID: 7, TID: 7, Time: t0 + 1000, Period: 1, Raw: raw})
		}
		end := t0 + 2000
		if i == o.Longer {
			end += 2000
		}
		s.SysExit(end, 0, 7, 7, 0, 8)
	}
	wr.FinishedRound()
	return wr.Close()
}
