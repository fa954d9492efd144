package export

import (
	"viewer/trace"

	"strconv"
	"time"
)

// AppendEvent appends one event as the JSON object of `viewer dump`
// (without a newline); see [Encoder.Append]. To encode many events,
// use one Encoder: it caches what repeats.
func AppendEvent(b []byte, r trace.Reader, e trace.Event, d trace.Details, frames []trace.Frame) []byte {
	enc := Encoder{r: r, m: r.Meta()}
	return enc.Append(b, e, d, frames)
}

// Encoder encodes events as the JSON objects of `viewer dump`. It
// caches the encoded keys of each track and event type, and the date part
// of wall-clock times, so that dumping costs little beyond the fields.
type Encoder struct {
	r       trace.Reader
	m       *trace.Meta // r.Meta(), which stays the same pointer
	tracks  []cachedTrack
	types   []cachedType
	da      trace.DetailsAppender // r as one, or nil; known once daKnown
	daKnown bool
	sym     func(pid int64, t trace.Time, addr uint64) (trace.Frame, bool)
	fields  []trace.Field // AppendEvent's scratch
	keys    []cachedKey
	label   []byte
	wall    struct {
		sec    int64
		prefix []byte // `,"wall":"2006-01-02T15:04:05`
	}
}

type cachedTrack struct {
	t   trace.Track
	enc []byte
}

// cachedKey is `{"name":…,"value":` for the field at one position.
type cachedKey struct {
	name string
	enc  []byte
}

type cachedType struct {
	name, provider string
	enc            []byte
}

// NewEncoder returns an encoder for the events of r.
func NewEncoder(r trace.Reader) *Encoder { return &Encoder{r: r, m: r.Meta()} }

// Symbolize makes the encoder name stack frames with sym (see
// render.Symbolizer) when Append is given no frames: `module!function`
// for the addresses sym knows, hex for the others.
func (enc *Encoder) Symbolize(sym func(pid int64, t trace.Time, addr uint64) (trace.Frame, bool)) {
	enc.sym = sym
}

// Append appends one event as a JSON object (without a newline). Keys the
// format does not know are left out. d is the event's decoded details;
// stack frames come from frames when non-nil (symbolized), else from the
// reader's addresses.
//
// Append leaves out the `raw` key that [Encoder.AppendEvent] writes for
// events without a schema: a caller holding the details adds the payload
// as it sees fit (the web API sends it for every event).
func (enc *Encoder) Append(b []byte, e trace.Event, d trace.Details, frames []trace.Frame) []byte {
	b = enc.appendHead(b, &e)
	b = enc.appendFields(b, d.Fields)
	b = enc.appendTail(b, &e, frames)
	b = appendString(b, d.Label)
	return append(b, '}')
}

// noSchema reports whether an event's payload is shown as raw bytes: its
// type has no schema (no field list), nothing was decoded from it, and it
// is not empty.
func (enc *Encoder) noSchema(t trace.TypeID, fields, raw int) bool {
	if fields > 0 || raw == 0 {
		return false
	}
	return t < 0 || int(t) >= len(enc.m.Types) || enc.m.Types[t].Fields == nil
}

// appendRaw appends `,"raw":"…"`, the payload in hex.
func appendRaw(b, raw []byte) []byte {
	const digits = "0123456789abcdef"
	b = append(b, `,"raw":"`...)
	for _, c := range raw {
		b = append(b, digits[c>>4], digits[c&15])
	}
	return append(b, '"')
}

// AppendEvent appends e as [Encoder.Append] does, with the details the
// reader decodes and the reader's stack addresses, and for an event
// without a schema (its type has no field list and nothing was decoded)
// its payload as a `raw` hex string after the label. A reader that is a
// [trace.DetailsAppender] decodes into the encoder's own buffers, so that nothing
// is allocated per event. On a Details error b is returned unchanged with
// the error.
func (enc *Encoder) AppendEvent(b []byte, e trace.Event) ([]byte, error) {
	if !enc.daKnown {
		enc.da, _ = enc.r.(trace.DetailsAppender)
		enc.daKnown = true
	}
	da := enc.da
	if da == nil {
		d, err := enc.r.Details(e)
		if err != nil {
			return b, err
		}
		b = enc.Append(b, e, d, nil)
		if enc.noSchema(e.Type, len(d.Fields), len(d.Raw)) {
			b = append(appendRaw(b[:len(b)-1], d.Raw), '}')
		}
		return b, nil
	}
	fields, label, err := da.AppendDetails(enc.fields[:0], enc.label[:0], e)
	enc.fields, enc.label = fields, label
	if err != nil {
		return b, err
	}
	if enc.noSchema(e.Type, len(fields), int(e.Payload.Len)) { // its raw bytes are shown: Details has them
		enc.da = nil
		b, err = enc.AppendEvent(b, e)
		enc.da = da
		return b, err
	}
	return enc.AppendDecoded(b, &e, fields, label), nil
}

// AppendPayloadDecoded is AppendDecoded for an event read with its
// payload bytes (see [trace.PayloadDecoder]): as AppendEvent does, it
// adds the payload as `raw` when the event has no schema.
func (enc *Encoder) AppendPayloadDecoded(b []byte, e *trace.Event, fields []trace.Field, label, payload []byte) []byte {
	b = enc.AppendDecoded(b, e, fields, label)
	if enc.noSchema(e.Type, len(fields), len(payload)) {
		b = append(appendRaw(b[:len(b)-1], payload), '}')
	}
	return b
}

// AppendDecoded appends *e as [Encoder.Append] does, given the fields
// and label text that a [trace.DetailsAppender] or [trace.PayloadDecoder] decoded for
// it, with the reader's stack addresses. e is a pointer only to spare
// copying it; it is not kept.
func (enc *Encoder) AppendDecoded(b []byte, e *trace.Event, fields []trace.Field, label []byte) []byte {
	b = enc.appendHead(b, e)
	b = enc.appendFields(b, fields)
	b = enc.appendTail(b, e, nil)
	b = appendString(b, label)
	return append(b, '}')
}

// appendHead appends the object's keys up to `"fields":`.
func (enc *Encoder) appendHead(b []byte, e *trace.Event) []byte {
	m := enc.m
	b = append(b, `{"time_ns":`...)
	b = appendInt(b, int64(e.Time))
	if !m.Clock.Wall.IsZero() {
		b = enc.appendWall(b, m.Clock, e.Time)
	}
	if e.Track >= 0 && int(e.Track) < len(m.Tracks) {
		b = append(b, enc.track(m, e.Track)...)
	}
	if m.Has&trace.HasCPU != 0 && e.CPU != trace.NoCPU {
		b = append(b, `,"cpu":`...)
		b = appendInt(b, int64(e.CPU))
	}
	b = append(b, enc.eventType(m, e.Type)...)
	if m.Has&trace.HasSeq != 0 {
		b = append(b, `,"seq":`...)
		b = appendUint(b, uint64(e.Seq))
	}
	return append(b, `,"fields":`...)
}

// appendFields appends fields as [AppendFields] does, caching each
// position's encoded name: events of a type repeat the same names.
func (enc *Encoder) appendFields(b []byte, fields []trace.Field) []byte {
	b = append(b, '[')
	for i := range fields {
		f := &fields[i] // not a copy: a trace.Field is nine words
		if i > 0 {
			b = append(b, ',')
		}
		if i >= maxCachedKeys {
			b = append(b, `{"name":`...)
			b = AppendString(b, f.Name)
			b = append(b, `,"value":`...)
		} else {
			if i >= len(enc.keys) {
				enc.keys = append(enc.keys, cachedKey{})
			}
			k := &enc.keys[i]
			if k.enc == nil || k.name != f.Name {
				k.name = f.Name
				k.enc = append(AppendString(append(k.enc[:0], `{"name":`...), f.Name), `,"value":`...)
			}
			b = append(b, k.enc...)
		}
		b = appendValue(b, &f.Value)
		b = append(b, '}')
	}
	return append(b, ']')
}

// maxCachedKeys bounds the field positions whose names are cached.
const maxCachedKeys = 64

// appendTail appends the stack and labels after the fields, up to
// `"label":`.
func (enc *Encoder) appendTail(b []byte, e *trace.Event, frames []trace.Frame) []byte {
	r := enc.r
	if frames != nil {
		b = append(b, `,"stack":[`...)
		for i, f := range frames {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, f.String())
		}
		b = append(b, ']')
	} else if e.Stack != trace.NoStack {
		if addrs := r.Stack(e.Stack); addrs != nil {
			b = append(b, `,"stack":[`...)
			pid := int64(-1)
			if enc.sym != nil && e.Track >= 0 && int(e.Track) < len(enc.m.Tracks) {
				pid = enc.m.Tracks[e.Track].PID
			}
			for i, a := range addrs {
				if i > 0 {
					b = append(b, ',')
				}
				if enc.sym != nil {
					if f, ok := enc.sym(pid, e.Time, a); ok {
						f.Addr = a
						b = AppendString(b, f.String())
						continue
					}
				}
				b = append(b, `"0x`...)
				b = strconv.AppendUint(b, a, 16)
				b = append(b, '"')
			}
			b = append(b, ']')
		}
	}
	if e.Labels != trace.NoLabels {
		if labels := r.Labels(e.Labels); len(labels) > 0 {
			b = append(b, `,"labels":{`...)
			for i, l := range labels {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendString(b, l.Key)
				b = append(b, ':')
				b = AppendValue(b, l.Value)
			}
			b = append(b, '}')
		}
	}
	return append(b, `,"label":`...)
}

// appendWall appends `,"wall":"…"` in RFC 3339 with nanoseconds (trailing
// zeros trimmed, as time.RFC3339Nano does), formatting the date once per
// second.
func (enc *Encoder) appendWall(b []byte, c trace.Clock, t trace.Time) []byte {
	w, _ := c.WallTime(t)
	w = w.UTC()
	if sec := w.Unix(); enc.wall.prefix == nil || sec != enc.wall.sec {
		enc.wall.sec = sec
		enc.wall.prefix = w.Truncate(time.Second).AppendFormat(append(enc.wall.prefix[:0], `,"wall":"`...), "2006-01-02T15:04:05")
	}
	b = append(b, enc.wall.prefix...)
	if ns := w.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, `Z"`...)
}

func (enc *Encoder) track(m *trace.Meta, id trace.TrackID) []byte {
	for int(id) >= len(enc.tracks) {
		enc.tracks = append(enc.tracks, cachedTrack{})
	}
	c := &enc.tracks[id]
	if t := &m.Tracks[id]; c.enc == nil || c.t.Name != t.Name || c.t.PID != t.PID || c.t.TID != t.TID { // names change while a trace is read
		c.t = *t
		b := append(c.enc[:0], `,"track":`...)
		b = AppendString(b, t.Name)
		if t.PID >= 0 {
			b = append(b, `,"pid":`...)
			b = appendInt(b, t.PID)
		}
		if t.TID >= 0 {
			b = append(b, `,"tid":`...)
			b = appendInt(b, t.TID)
		}
		c.enc = b
	}
	return c.enc
}

func (enc *Encoder) eventType(m *trace.Meta, id trace.TypeID) []byte {
	var et *trace.EventType // by pointer: an trace.EventType is fourteen words
	if id >= 0 && int(id) < len(m.Types) {
		et = &m.Types[id]
	} else {
		id, et = -1, &trace.EventType{}
	}
	var c *cachedType
	if id >= 0 {
		for int(id) >= len(enc.types) {
			enc.types = append(enc.types, cachedType{})
		}
		c = &enc.types[id]
		if c.enc != nil && c.name == et.Name && c.provider == et.Provider {
			return c.enc
		}
	} else {
		c = &cachedType{}
	}
	b := c.enc[:0]
	if m.Has&trace.HasProvider != 0 {
		b = append(b, `,"provider":`...)
		b = AppendString(b, et.Provider)
	}
	b = append(b, `,"event":`...)
	b = AppendString(b, et.Name)
	b = append(b, `,"id":`...)
	b = appendInt(b, et.ID)
	if m.Has&trace.HasVersion != 0 {
		b = append(b, `,"version":`...)
		b = appendInt(b, int64(et.Version))
	}
	if m.Has&trace.HasOpcode != 0 {
		b = append(b, `,"opcode":`...)
		b = appendInt(b, int64(et.Opcode))
	}
	if m.Has&trace.HasLevel != 0 {
		b = append(b, `,"level":`...)
		b = appendInt(b, int64(et.Level))
	}
	if m.Has&trace.HasKeywords != 0 {
		b = append(b, `,"keywords":"0x`...)
		b = strconv.AppendUint(b, et.Keywords, 16)
		b = append(b, '"')
	}
	c.enc, c.name, c.provider = b, et.Name, et.Provider
	return b
}
