package cpeltest

import (
	"io"
	"strconv"
)

// Generate writes a CPEL file of n events shaped like real ones, with
// ticks at hz: 100 tracks ("worker %d") and ten event types whose datum
// formats mix %s (offsets of 64 node names), %u, %d and hex. Benchmarks
// use it for the 8 M-event file that g2 and cpeldump were measured on
// (`CPEL_BENCH_FILE=path go test -run TestWriteBenchFile ./trace/cpel`
// writes that file for timing the real command).
func Generate(out io.Writer, n int, hz uint32) error {
	w := &Writer{Date: 1700000000}
	t := w.StringTable("FileStrtab")
	formats := []string{"%s", "len %u", "0x%08x", "vector %d", "", "%s", "%u", "0x%x", "%d packets", "%s"}
	var defs []EventDef
	for c, f := range formats {
		defs = append(defs, EventDef{Code: uint32(c), Name: "event-" + strconv.Itoa(c), Format: f})
	}
	w.EventDefs(t, defs)
	var tracks []TrackDef
	for i := range 100 {
		tracks = append(tracks, TrackDef{ID: uint32(i), Format: "worker %d"})
	}
	w.TrackDefs(t, tracks)
	var strs []uint32
	for i := range 64 {
		strs = append(strs, t.Add("ip4-input node "+strconv.Itoa(i)))
	}
	w.Events(t, hz, n, func(i int) Record {
		x := uint32(i) * 2654435761
		code := x >> 7 % uint32(len(formats))
		datum := x
		if formats[code] == "%s" {
			datum = strs[x%64]
		}
		return Record{Ticks: uint64(i)*37 + uint64(x%17), Track: x % 100, Code: code, Datum: datum}
	})
	_, err := w.WriteTo(out)
	return err
}
