package trace

import (
	"strconv"
	"time"
)

// AppendEventJSON appends one event as the JSON object of `viewer dump`
// (without a newline). Keys the format does not know are left out. d is
// the event's decoded details; stack frames come from frames when non-nil
// (symbolized), else from the reader's addresses.
func AppendEventJSON(b []byte, r Reader, e Event, d Details, frames []Frame) []byte {
	m := r.Meta()
	b = append(b, `{"time_ns":`...)
	b = strconv.AppendInt(b, int64(e.Time), 10)
	if w, ok := m.Clock.WallTime(e.Time); ok {
		b = append(b, `,"wall":"`...)
		b = w.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.Track >= 0 && int(e.Track) < len(m.Tracks) {
		t := m.Tracks[e.Track]
		b = append(b, `,"track":`...)
		b = AppendJSONString(b, t.Name)
		if t.PID >= 0 {
			b = append(b, `,"pid":`...)
			b = strconv.AppendInt(b, t.PID, 10)
		}
		if t.TID >= 0 {
			b = append(b, `,"tid":`...)
			b = strconv.AppendInt(b, t.TID, 10)
		}
	}
	if m.Has&HasCPU != 0 && e.CPU != NoCPU {
		b = append(b, `,"cpu":`...)
		b = strconv.AppendInt(b, int64(e.CPU), 10)
	}
	var et EventType
	if e.Type >= 0 && int(e.Type) < len(m.Types) {
		et = m.Types[e.Type]
	}
	if m.Has&HasProvider != 0 {
		b = append(b, `,"provider":`...)
		b = AppendJSONString(b, et.Provider)
	}
	b = append(b, `,"event":`...)
	b = AppendJSONString(b, et.Name)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, et.ID, 10)
	if m.Has&HasVersion != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(et.Version), 10)
	}
	if m.Has&HasOpcode != 0 {
		b = append(b, `,"opcode":`...)
		b = strconv.AppendInt(b, int64(et.Opcode), 10)
	}
	if m.Has&HasLevel != 0 {
		b = append(b, `,"level":`...)
		b = strconv.AppendInt(b, int64(et.Level), 10)
	}
	if m.Has&HasKeywords != 0 {
		b = append(b, `,"keywords":"0x`...)
		b = strconv.AppendUint(b, et.Keywords, 16)
		b = append(b, '"')
	}
	if m.Has&HasSeq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, uint64(e.Seq), 10)
	}
	b = append(b, `,"fields":`...)
	b = AppendFieldsJSON(b, d.Fields)
	if frames != nil {
		b = append(b, `,"stack":[`...)
		for i, f := range frames {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, f.String())
		}
		b = append(b, ']')
	} else if addrs := r.Stack(e.Stack); addrs != nil {
		b = append(b, `,"stack":[`...)
		for i, a := range addrs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `"0x`...)
			b = strconv.AppendUint(b, a, 16)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	if labels := r.Labels(e.Labels); len(labels) > 0 {
		b = append(b, `,"labels":{`...)
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, l.Key)
			b = append(b, ':')
			b = l.Value.AppendJSON(b)
		}
		b = append(b, '}')
	}
	b = append(b, `,"label":`...)
	b = AppendJSONString(b, d.Label)
	return append(b, '}')
}

// String renders a frame as PerfView does: module!function, or the
// address when the function is unknown.
func (f Frame) String() string {
	addr := "0x" + strconv.FormatUint(f.Addr, 16)
	switch {
	case f.Func != "" && f.Module != "":
		return f.Module + "!" + f.Func
	case f.Func != "":
		return f.Func
	case f.Module != "":
		return f.Module + "!" + addr
	}
	return addr
}
