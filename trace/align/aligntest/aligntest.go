// Package aligntest writes traces of different formats whose events
// happen at the same wall-clock times, for the tests of clock alignment
// (trace/align, the server's combined view).
package aligntest

import (
	"bytes"
	"io"
	"time"

	"viewer/trace/nettrace/nettracetest"
	"viewer/trace/perf/perftest"
)

// Walls are the wall-clock times of the events SameWall writes: every one
// a multiple of 100 ns after the NetTrace's sync time (10 MHz ticks).
var Walls = []time.Time{
	syncWall.Add(2 * time.Millisecond), syncWall.Add(2*time.Millisecond + 300),
	syncWall.Add(1500 * time.Millisecond), syncWall.Add(3 * time.Second),
}

// syncWall is the NetTrace's sync time: SYSTEMTIME keeps milliseconds.
var syncWall = time.Date(2026, 1, 15, 10, 0, 0, 123e6, time.UTC)

// SameWall writes a NetTrace (10 MHz ticks, a SYSTEMTIME wall; events
// App/Tick on thread 10) to nt and a perf.data (-k monotonic: CLOCK_DATA
// says the clock read 4242.000000777 s at 2026-01-15T09:59:59.5Z; a
// sys_enter of thread 7 per event) to pd, the events of both at Walls.
func SameWall(nt io.Writer, pd io.WriteSeeker) error {
	const hz, syncTicks = 10_000_000, 77_000_000
	var nb bytes.Buffer
	w := nettracetest.NewWriter(&nb, nettracetest.TraceInfo{Wall: syncWall, SyncTicks: syncTicks, TicksPerSecond: hz, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: "App", EventID: 1, Name: "Tick"})
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 10})
	var evs []nettracetest.Event
	for i, wt := range Walls {
		evs = append(evs, nettracetest.Event{MetadataID: 1, Seq: uint32(i + 1), Thread: 1, Capture: 1, Ticks: syncTicks + int64(wt.Sub(syncWall)/100), Sorted: true})
	}
	if err := w.Events(true, evs...); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if _, err := nt.Write(nb.Bytes()); err != nil {
		return err
	}

	const clockNS = 4242_000_000_777
	refWall := time.Date(2026, 1, 15, 9, 59, 59, 5e8, time.UTC)
	o := perftest.SchedOptions("x86_64")
	o.WallNS, o.ClockNS = uint64(refWall.UnixNano()), clockNS
	pw, err := perftest.NewWriter(pd, o)
	if err != nil {
		return err
	}
	s := &perftest.SchedWriter{W: pw}
	for _, wt := range Walls {
		s.SysEnter(uint64(clockNS+wt.Sub(refWall)), 0, 7, 7, 0)
	}
	pw.FinishedRound()
	return pw.Close()
}
