package export

import (
	"bufio"
	"io"
	"strconv"
)

// SpeedscopeSchema is the URL that names speedscope's file format; a file
// carries it in its "$schema" key.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

// WeightedStack is one distinct stack, frames root first, and its weight.
type WeightedStack struct {
	Frames []string
	Weight int64
}

// SpeedscopeUnit returns speedscope's name for the unit of stack weights
// named unit ("samples", "ns", a field name…): "nanoseconds" for ns,
// "bytes" for byte counts, "none" for everything else.
func SpeedscopeUnit(unit string) string {
	switch unit {
	case "ns":
		return "nanoseconds"
	case "bytes", "AllocationAmount", "AllocationAmount64":
		return "bytes"
	}
	return "none"
}

// WriteSpeedscope writes stacks as one file of speedscope's JSON format
// (SpeedscopeSchema), which speedscope and the Firefox Profiler import: a
// "sampled" profile named name whose samples are the stacks (frame names
// interned in the file's shared frame table) with their weights in unit
// (a speedscope unit: "none", "nanoseconds", "bytes", …). Stacks without
// frames or with a weight ≤ 0 are left out. Frame names are JSON-escaped
// data.
func WriteSpeedscope(w io.Writer, name, unit string, stacks []WeightedStack) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	index := map[string]int{}
	var frames []string
	var total int64
	for _, s := range stacks {
		if len(s.Frames) == 0 || s.Weight <= 0 {
			continue
		}
		total += s.Weight
		for _, f := range s.Frames {
			if _, ok := index[f]; !ok {
				index[f] = len(frames)
				frames = append(frames, f)
			}
		}
	}
	b := make([]byte, 0, 4096)
	flush := func() {
		bw.Write(b)
		b = b[:0]
	}
	b = append(b, `{"$schema":`...)
	b = AppendString(b, SpeedscopeSchema)
	b = append(b, `,"exporter":"viewer","name":`...)
	b = AppendString(b, name)
	b = append(b, `,"activeProfileIndex":0,"shared":{"frames":[`...)
	for i, f := range frames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = AppendString(b, f)
		b = append(b, '}')
		if len(b) > 32<<10 {
			flush()
		}
	}
	b = append(b, `]},"profiles":[{"type":"sampled","name":`...)
	b = AppendString(b, name)
	b = append(b, `,"unit":`...)
	b = AppendString(b, unit)
	b = append(b, `,"startValue":0,"endValue":`...)
	b = strconv.AppendInt(b, total, 10)
	b = append(b, `,"samples":[`...)
	first := true
	for _, s := range stacks {
		if len(s.Frames) == 0 || s.Weight <= 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '[')
		for i, f := range s.Frames {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(index[f]), 10)
		}
		b = append(b, ']')
		if len(b) > 32<<10 {
			flush()
		}
	}
	b = append(b, `],"weights":[`...)
	first = true
	for _, s := range stacks {
		if len(s.Frames) == 0 || s.Weight <= 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendInt(b, s.Weight, 10)
		if len(b) > 32<<10 {
			flush()
		}
	}
	b = append(b, "]}]}\n"...)
	flush()
	return bw.Flush()
}
