package perftest

import (
	"encoding/binary"
	"io"
	"math/rand/v2"

	"viewer/trace/perf/tracefs/tracefstest"
)

// BombRatio is the decompressed bytes per compressed byte that [Bomb]
// aims for: just under the reader's limit of 256 (perf.MaxRatio), so the
// file is accepted and decompresses in full.
const BombRatio = 230

// Bomb writes a file-mode perf.data file of about compressed bytes whose
// COMPRESSED records expand about [BombRatio] times: sched_switch samples
// whose raw data is 60 KiB, mostly zeros with a few random bytes to keep
// zstd from compressing them further. It returns the number of samples.
// Tests use it to check that decompressed data is not held in memory.
func Bomb(w io.WriteSeeker, compressed int64) (int, error) {
	const schedID = 372
	st := uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRaw)
	wr, err := NewWriter(w, WriterOptions{
		Compress: true,
		Formats:  []tracefstest.Format{{System: "sched", Text: SchedSwitchFormat}},
		Attrs: []Attr{
			{Name: "sched:sched_switch", Type: TypeTracepoint, Config: schedID, SampleType: st, SampleIDAll: true, ClockID: 1, IDs: []uint64{20}},
		},
		Hostname: "bomb", OSRelease: "6.6.0", Arch: "x86_64", Cmdline: "perf record -z",
	})
	if err != nil {
		return 0, err
	}
	wr.Comm(100, 100, "bomb", 1e12)
	const rawSize = 60 << 10
	// Random bytes per sample, spread out: each costs zstd about 2.6
	// bytes (the literal and its share of a sequence), so the ratio is
	// about rawSize over 2.6 times their number (measured).
	const noise = rawSize * 10 / (BombRatio * 26)
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, rawSize)
	binary.LittleEndian.PutUint16(raw, schedID)
	n := int(compressed * BombRatio / rawSize)
	for i := range n {
		for k := range noise {
			raw[64+k*(rawSize-64)/noise] = byte(rng.Uint32())
		}
		wr.Sample(Sample{IP: 1, PID: 100, TID: 100, Time: 1e12 + uint64(i)*1000, CPU: uint32(i % 2), Period: 1, StreamID: 20, Raw: raw})
		if i%16 == 15 {
			wr.FinishedRound()
		}
	}
	return n, wr.Close()
}
