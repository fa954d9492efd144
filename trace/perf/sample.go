package perf

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"viewer/trace"
	"viewer/trace/perf/eventheader"
)

// sampleAttr finds the attr of a SAMPLE record body (NOTES.md §attrs).
func (rd *Reader) sampleAttr(body []byte) *attr {
	if len(rd.attrs) == 0 {
		return nil
	}
	if len(rd.attrs) == 1 && rd.attrs[0].sampleType&(sampleIdentifier|sampleID) == 0 {
		return rd.attrs[0]
	}
	st := rd.attrs[0].sampleType
	var pos int
	switch {
	case st&sampleIdentifier != 0:
		pos = 0
	case st&sampleID != 0:
		for _, bit := range []uint64{sampleIP, sampleTID, sampleTime, sampleAddr} {
			if st&bit != 0 {
				pos += 8
			}
		}
	default:
		return rd.attrs[0]
	}
	if len(body) < pos+8 {
		return nil
	}
	return rd.byID[rd.bo.Uint64(body[pos:])]
}

// parsedSample is what the reader takes from a SAMPLE record.
type parsedSample struct {
	pid, tid  int64
	time      uint64
	cpu       int32
	callchain []byte // nr × u64
	raw       []byte
	rawOff    int // offset of raw in the record
	hasTID    bool
}

// layoutOf computes the fixed sample layout of a sample_type.
func layoutOf(st uint64) (fixedLayout, bool) {
	l := fixedLayout{tid: -1, time: -1, cpu: -1, raw: -1}
	if st&(sampleRead|sampleCallchain) != 0 {
		return l, false
	}
	p := recordHeaderSize
	for _, f := range []struct {
		bit uint64
		at  *int
	}{{sampleIdentifier, nil}, {sampleIP, nil}, {sampleTID, &l.tid}, {sampleTime, &l.time}, {sampleAddr, nil},
		{sampleID, nil}, {sampleStreamID, nil}, {sampleCPU, &l.cpu}, {samplePeriod, nil}} {
		if st&f.bit != 0 {
			if f.at != nil {
				*f.at = p
			}
			p += 8
		}
	}
	if st&sampleRaw != 0 {
		l.raw = p
		p += 4
	}
	l.min = p
	return l, true
}

// parseFixed is parseSample for fixed layouts.
func (rd *Reader) parseFixed(rec []byte, l *fixedLayout) (parsedSample, bool) {
	s := parsedSample{cpu: trace.NoCPU, pid: -1, tid: -1}
	if len(rec) < l.min {
		return s, false
	}
	bo := rd.bo
	if l.tid >= 0 {
		s.hasTID = true
		s.pid, s.tid = int64(int32(bo.Uint32(rec[l.tid:]))), int64(int32(bo.Uint32(rec[l.tid+4:])))
	}
	if l.time >= 0 {
		s.time = bo.Uint64(rec[l.time:])
	}
	if l.cpu >= 0 {
		s.cpu = int32(bo.Uint32(rec[l.cpu:]))
	}
	if l.raw >= 0 {
		n := int(bo.Uint32(rec[l.raw:]))
		p := l.raw + 4
		if n > len(rec)-p {
			return s, false
		}
		s.raw, s.rawOff = rec[p:p+n], p
	}
	return s, true
}

// parseSample decodes a SAMPLE record (with header) by the attr's
// sample_type. It reports false when the record is too short.
func (rd *Reader) parseSample(rec []byte, a *attr) (parsedSample, bool) {
	s := parsedSample{cpu: trace.NoCPU, pid: -1, tid: -1}
	st := a.sampleType
	p := recordHeaderSize
	need := func(n int) bool { return n >= 0 && n <= len(rec)-p }
	skip := func(bit uint64) bool {
		if st&bit == 0 {
			return true
		}
		if !need(8) {
			return false
		}
		p += 8
		return true
	}
	if !skip(sampleIdentifier) || !skip(sampleIP) {
		return s, false
	}
	if st&sampleTID != 0 {
		if !need(8) {
			return s, false
		}
		s.hasTID = true
		s.pid, s.tid = int64(int32(rd.bo.Uint32(rec[p:]))), int64(int32(rd.bo.Uint32(rec[p+4:])))
		p += 8
	}
	if st&sampleTime != 0 {
		if !need(8) {
			return s, false
		}
		s.time = rd.bo.Uint64(rec[p:])
		p += 8
	}
	if !skip(sampleAddr) || !skip(sampleID) || !skip(sampleStreamID) {
		return s, false
	}
	if st&sampleCPU != 0 {
		if !need(8) {
			return s, false
		}
		s.cpu = int32(rd.bo.Uint32(rec[p:]))
		p += 8
	}
	if !skip(samplePeriod) {
		return s, false
	}
	if st&sampleRead != 0 {
		rf := a.readFormat
		per := 1
		if rf&readID != 0 {
			per++
		}
		if rf&readLost != 0 {
			per++
		}
		hdr := 0
		if rf&readTotalTimeEnabled != 0 {
			hdr++
		}
		if rf&readTotalTimeRunning != 0 {
			hdr++
		}
		if rf&readGroup != 0 {
			if !need(8) {
				return s, false
			}
			nr := rd.bo.Uint64(rec[p:])
			p += 8
			if nr > uint64(len(rec)) {
				return s, false
			}
			n := 8 * (hdr + int(nr)*per)
			if !need(n) {
				return s, false
			}
			p += n
		} else {
			n := 8 * (hdr + per)
			if !need(n) {
				return s, false
			}
			p += n
		}
	}
	if st&sampleCallchain != 0 {
		if !need(8) {
			return s, false
		}
		nr := rd.bo.Uint64(rec[p:])
		p += 8
		if nr > uint64(len(rec)) || !need(int(nr)*8) {
			return s, false
		}
		s.callchain = rec[p : p+int(nr)*8]
		p += int(nr) * 8
	}
	if st&sampleRaw != 0 {
		if !need(4) {
			return s, false
		}
		n := int(rd.bo.Uint32(rec[p:]))
		p += 4
		if !need(n) {
			return s, false
		}
		s.raw, s.rawOff = rec[p:p+n], p
	}
	return s, true
}

// sample turns a SAMPLE record into a queued event.
func (rd *Reader) sample(rec []byte, off int64, compressed bool) error {
	body := rec[recordHeaderSize:]
	a := rd.sampleAttr(body)
	if a == nil {
		rd.unknownSample++
		return nil
	}
	var s parsedSample
	var ok bool
	if a.fixedOK {
		s, ok = rd.parseFixed(rec, &a.fixed)
	} else {
		s, ok = rd.parseSample(rec, a)
	}
	if !ok {
		return rd.damaged(off, "SAMPLE record of "+strconv.Itoa(len(rec))+" bytes is shorter than its sample_type says")
	}
	rd.resolve(a)
	ev := trace.Event{
		Time:    rd.meta.Clock.Time(int64(s.time)),
		Track:   trace.NoTrack,
		Type:    a.typeID,
		Capture: trace.NoTrack,
		CPU:     s.cpu,
	}
	if s.hasTID {
		ev.Track = rd.thread(s.pid, s.tid)
	}
	if s.raw != nil {
		if compressed {
			zoff, err := rd.zspill.add(s.raw)
			if err != nil {
				return err
			}
			ev.Payload = trace.Loc{Off: rd.size + zoff, Len: int32(len(s.raw))}
		} else {
			ev.Payload = trace.Loc{Off: off + int64(s.rawOff), Len: int32(len(s.raw))}
		}
	}
	if s.callchain != nil {
		ev.Stack = rd.stack(s.callchain)
	}
	if a.tp != nil && a.tp.EventHeader {
		rd.eventHeader(a, s, &ev)
	} else if a.dotnet {
		rd.dotnetSample(a, s, &ev)
	}
	rd.enqueue(ev)
	return nil
}

// resolve gives an attr its tracefs format and default event type on
// first use.
func (rd *Reader) resolve(a *attr) {
	if a.resolved {
		return
	}
	a.resolved = true
	if a.typ == attrTracepoint {
		a.tp = rd.tracefs[uint32(a.config)]
	}
	et := trace.EventType{ID: int64(a.config)}
	if a.tp != nil {
		et.Provider, et.Name, et.ID = a.tp.System, a.tp.Name, int64(a.tp.ID)
		et.Fields = a.tp.Specs()
		et.Message = a.tp.PrintFmt
		if a.tp.EventHeader {
			rd.meta.Has |= trace.HasLevel | trace.HasKeywords | trace.HasOpcode | trace.HasVersion
		} else if isDotNet(a.tp) {
			a.dotnet = true
			rd.meta.Has |= trace.HasLevel | trace.HasKeywords | trace.HasOpcode | trace.HasVersion
		}
	} else if a.name != "" {
		et.Provider, et.Name, _ = strings.Cut(a.name, ":")
	} else {
		et.Name = "attr type " + strconv.FormatUint(uint64(a.typ), 10) + " config " + strconv.FormatUint(a.config, 10)
	}
	a.typeID = rd.addType(et, typeInfo{attr: a})
}

func (rd *Reader) addType(et trace.EventType, ti typeInfo) trace.TypeID {
	id := trace.TypeID(len(rd.meta.Types))
	rd.meta.Types = append(rd.meta.Types, et)
	rd.types = append(rd.types, ti)
	ts := rd.types
	rd.infos.Store(&ts)
	return id
}

// stack interns a callchain (nr × u64, leaf first), dropping context
// markers.
func (rd *Reader) stack(cc []byte) trace.StackID {
	if len(cc) > 8*MaxCallchain {
		cc = cc[:8*MaxCallchain]
	}
	if id, ok := rd.stackIDs[string(cc)]; ok { // the compiler does not copy cc for a lookup
		return id
	}
	addrs := make([]uint64, 0, len(cc)/8)
	ctx := uint8(0) // 1 + index into contextModules of the last marker
	for i := 0; i+8 <= len(cc); i += 8 {
		v := rd.bo.Uint64(cc[i:])
		if v >= contextMax {
			ctx = 0
			for k, c := range contextModules {
				if c.marker == v {
					ctx = uint8(k + 1)
				}
			}
			continue
		}
		addrs = append(addrs, v)
		if ctx != 0 && len(rd.frameContext) < maxFrameContexts {
			if rd.frameContext == nil {
				rd.frameContext = map[uint64]uint8{}
			}
			rd.frameContext[v] = ctx
		}
	}
	if len(addrs) == 0 {
		return trace.NoStack
	}
	id := trace.StackID(len(rd.stacks))
	rd.stacks = append(rd.stacks, addrs)
	rd.stackIDs[string(cc)] = id
	return id
}

// maxFrameContexts bounds the addresses whose call-chain context a reader
// remembers (FrameModule); later ones go without.
const maxFrameContexts = 1 << 20

// FrameModule names the context a call-chain address was recorded in, as
// the PERF_CONTEXT_* marker before it said: "[kernel.kallsyms]",
// "[user]", "[hypervisor]", "[guest.kernel.kallsyms]"…; ok is false for
// an address no marker announced. perf script shows unresolved frames
// with the same module names. Call it once reading has finished (it is
// then safe from many goroutines).
func (rd *Reader) FrameModule(addr uint64) (module string, ok bool) {
	ctx := rd.frameContext[addr]
	if ctx == 0 {
		return "", false
	}
	return contextModules[ctx-1].module, true
}

// activityLabels interns the activity ids of an event (big-endian RFC
// 4122 bytes, as EventHeader writes them, or Windows layout for .NET).
func (rd *Reader) activityLabels(act, related []byte, windows bool) trace.LabelsID {
	var key [33]byte
	copy(key[:16], act)
	copy(key[16:32], related)
	if related != nil {
		key[32] |= 1
	}
	if windows {
		key[32] |= 2
	}
	if rd.lastLabels > 0 && key == rd.lastLabelKey {
		return rd.lastLabels
	}
	if id, ok := rd.labelIDs[key]; ok {
		rd.lastLabelKey, rd.lastLabels = key, id
		return id
	}
	guid := func(b []byte) trace.Value {
		var g [16]byte
		copy(g[:], b)
		if !windows { // RFC 4122 → Windows layout for trace.GUIDValue
			g[0], g[1], g[2], g[3] = g[3], g[2], g[1], g[0]
			g[4], g[5] = g[5], g[4]
			g[6], g[7] = g[7], g[6]
		}
		return trace.GUIDValue(g)
	}
	var l []trace.Label
	if act != nil {
		l = append(l, trace.Label{Key: "ActivityId", Value: guid(act)})
	}
	if related != nil {
		l = append(l, trace.Label{Key: "RelatedActivityId", Value: guid(related)})
	}
	id := trace.LabelsID(len(rd.labels))
	rd.labels = append(rd.labels, l)
	rd.labelIDs[key] = id
	return id
}

// eventHeader gives an EventHeader sample its own event type and labels.
func (rd *Reader) eventHeader(a *attr, s parsedSample, ev *trace.Event) {
	off := a.tp.Fields[a.tp.Common].Offset
	if off > len(s.raw) {
		return
	}
	e, err := eventheader.Parse(s.raw[off:])
	if err != nil || e.Metadata == nil {
		return
	}
	h := [7]byte{e.Header.Version, byte(e.Header.ID), byte(e.Header.ID >> 8), byte(e.Header.Tag), byte(e.Header.Tag >> 8), e.Header.Opcode, e.Header.Level}
	ev.Type = -1
	for i := range a.recent {
		r := &a.recent[i]
		if r.id >= 0 && h == r.hdr && bytes.Equal(e.Metadata, r.meta) {
			ev.Type = r.id
			break
		}
	}
	if ev.Type < 0 {
		ev.Type = rd.eventHeaderType(a, &e, h)
		if ev.Type == a.typeID {
			return
		}
		r := &a.recent[a.nextRecent]
		a.nextRecent = (a.nextRecent + 1) % len(a.recent)
		r.id, r.hdr = ev.Type, h
		r.meta = append(r.meta[:0], e.Metadata...)
	}
	if e.Activity != nil {
		ev.Labels = rd.activityLabels(e.Activity, e.Related, false)
	}
}

// eventHeaderType returns the event type of an EventHeader event, adding
// it on first sight; the attr's own type when the event does not follow
// the EventHeader rules.
func (rd *Reader) eventHeaderType(a *attr, e *eventheader.Event, h [7]byte) trace.TypeID {
	tpName := a.tp.Name
	// Key: attr, header (without flags), metadata bytes.
	k := rd.keyBuf[:0]
	k = binary.LittleEndian.AppendUint32(k, uint32(a.index))
	k = append(k, h[:]...)
	k = append(k, e.Metadata...)
	rd.keyBuf = k
	if id, ok := rd.ehTypes[string(k)]; ok {
		return id
	}
	{
		tn, ok := eventheader.ParseTracepointName(tpName)
		if !ok || tn.Level != e.Header.Level {
			return a.typeID
		}
		schema, err := eventheader.ParseMetadata(e.Metadata, e.BigEndian())
		if err != nil {
			return a.typeID
		}
		et := trace.EventType{
			Provider: tn.Provider,
			Name:     schema.Name,
			ID:       int64(e.Header.ID),
			Version:  int(e.Header.Version),
			Level:    int(e.Header.Level),
			Opcode:   int(e.Header.Opcode),
			Keywords: tn.Keyword,
			Fields:   schema.Specs(),
		}
		id := rd.addType(et, typeInfo{attr: a, schema: schema, tag: e.Header.Tag})
		rd.ehTypes[string(k)] = id
		return id
	}
}
