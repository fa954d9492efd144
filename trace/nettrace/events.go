package nettrace

import (
	"slices"
	"strconv"

	"viewer/trace"
)

// clock converts ticks to nanoseconds with a multiply when the frequency
// divides 1e9, else with trace.Clock's exact division.
type clock struct {
	c      trace.Clock
	mul    int64
	span   uint64 // 2·lim-1: d is in (-lim, lim) when d+lim-1 < span, unsigned
	lim1   uint64 // lim-1
	origin int64
}

func newClock(c trace.Clock) clock {
	k := clock{c: c, origin: c.OriginTicks}
	if c.TicksPerSecond <= 1e9 && 1e9%c.TicksPerSecond == 0 {
		k.mul = int64(1e9 / c.TicksPerSecond)
		lim := uint64((1<<63 - 1) / k.mul)
		k.span, k.lim1 = 2*lim-1, lim-1
	}
	return k
}

func (k *clock) time(ticks int64) trace.Time {
	d := ticks - k.origin
	// |d| < lim, so d·mul fits (span is 0 when mul is); d wraps like
	// trace.Clock's
	if uint64(d)+k.lim1 < k.span {
		return trace.Time(d * k.mul)
	}
	return k.c.Time(ticks)
}

// header is the decoder state of event headers within one block (NOTES.md §header).
type header struct {
	meta    uint32
	seq     uint32
	capture uint64
	proc    uint32
	thread  uint64
	stack   uint32
	ts      uint64
	act     [32]byte // ActivityId, RelatedActivityId (≤v5)
	hasAct  bool     // act is not all zero
	label   uint32   // v6
	size    uint32
}

// events decodes the records of a v4+ event block, or of a v4/v5 metadata
// block (meta) whose records define metadata (NOTES.md §blocks).
func (r *Reader) events(d *dec, meta bool) error {
	blockStart := d.pos()
	hsize := int(d.u16())
	flags := d.u16()
	if d.bad {
		return r.truncated(blockStart, "in a block header")
	}
	if hsize > len(d.b) {
		return r.blockShort(d, "event block header")
	}
	if hsize < 20 {
		return r.errorf(blockStart, "event block header size %d", hsize)
	}
	d.off = hsize
	var h header
	r.cache.threadOK, r.cache.captureOK = false, false
	compressed := flags&1 != 0
	v6 := r.version == 6
	for d.left() > 0 {
		start := d.off
		var payloadOff int
		if compressed {
			f := d.u8()
			if f&0x01 != 0 {
				h.meta = d.uvarint32()
			}
			if f&0x02 != 0 {
				h.seq += d.uvarint32() + 1
				h.capture = d.uvarint64()
				h.proc = d.uvarint32()
				r.cache.captureOK = false
			} else if h.meta != 0 {
				h.seq++
			}
			if f&0x04 != 0 {
				h.thread = d.uvarint64()
				r.cache.threadOK = false
			}
			if f&0x08 != 0 {
				h.stack = d.uvarint32()
			}
			h.ts += d.uvarint64()
			if v6 {
				if f&0x10 != 0 {
					h.label = d.uvarint32()
				}
			} else {
				if f&0x10 != 0 {
					copy(h.act[:16], d.bytes(16))
				}
				if f&0x20 != 0 {
					copy(h.act[16:], d.bytes(16))
				}
				if f&0x30 != 0 {
					h.hasAct = h.act != [32]byte{}
				}
			}
			if f&0x80 != 0 {
				h.size = d.uvarint32()
			}
			payloadOff = d.off
			d.skip(int(h.size))
		} else {
			size := int(d.u32())
			if d.bad || size < 0 || size > d.left() {
				d.fail()
			} else {
				rec := dec{b: d.b[:d.off+size], off: d.off}
				id := rec.u32()
				h.meta = id & 0x7fff_ffff
				h.seq = rec.u32()
				h.thread = rec.u64()
				h.capture = rec.u64()
				h.proc = rec.u32()
				h.stack = rec.u32()
				h.ts = rec.u64()
				if v6 {
					h.label = rec.u32()
				} else {
					copy(h.act[:], rec.bytes(32))
					h.hasAct = h.act != [32]byte{}
				}
				h.size = rec.u32()
				payloadOff = rec.off
				rec.skip(int(h.size))
				if rec.bad {
					return r.errorf(d.base+int64(start), "event record of %d bytes holds a %d-byte payload", size, h.size)
				}
				r.cache.threadOK, r.cache.captureOK = false, false
				d.off += size
				if !v6 { // padding to a 4-byte file offset (NOTES.md §header-uncompressed)
					pad := int((4 - (d.base+int64(d.off))%4) % 4)
					d.off = min(d.off+pad, len(d.b))
				}
			}
		}
		if d.bad {
			return r.incomplete(d, start)
		}
		off := d.base + int64(payloadOff)
		if meta || h.meta == 0 {
			if v6 {
				return r.errorf(d.base+int64(start), "event record with metadata id 0")
			}
			if err := r.defineV5(d.b[payloadOff:payloadOff+int(h.size)], off); err != nil {
				return err
			}
			continue
		}
		if err := r.event(&h, off, int(h.size)); err != nil {
			return err
		}
	}
	return nil
}

// incomplete reports a record that runs past the end of its block: a
// truncation when the block was cut by the end of the file, else damage.
func (r *Reader) incomplete(d *dec, start int) error {
	off := d.base + int64(start)
	if d.base+int64(len(d.b)) >= r.size {
		return r.truncated(off, "in an event record")
	}
	return r.errorf(off, "event record overruns its block")
}

// event resolves one non-metadata record and appends it to the region.
func (r *Reader) event(h *header, payloadOff int64, payloadLen int) error {
	typ, ok := r.typeOf(h.meta)
	if !ok {
		return r.errorf(payloadOff, "event refers to undefined metadata id %d", h.meta)
	}
	if typ == r.processInfo {
		r.addProcessInfo(typ, payloadOff, payloadLen)
	}
	c := &r.cache
	if !c.threadOK || c.thread != h.thread {
		t, err := r.threadTrack(h.thread, payloadOff)
		if err != nil {
			return err
		}
		c.thread, c.threadTrack, c.threadOK = h.thread, t, true
	}
	if !c.captureOK || c.capture != h.capture {
		t, err := r.threadTrack(h.capture, payloadOff)
		if err != nil {
			return err
		}
		c.capture, c.captureTrk, c.captureOK = h.capture, t, true
	}
	n := len(r.region)
	if n == cap(r.region) {
		r.grow()
	}
	r.region = r.region[:n+1]
	e := &r.region[n] // written in place; dropped again on error
	*e = trace.Event{
		Time:    r.clock.time(int64(h.ts)),
		Track:   c.threadTrack,
		Type:    typ,
		Seq:     h.seq,
		Capture: trace.NoTrack,
		CPU:     trace.NoCPU,
		Payload: trace.Loc{Off: payloadOff, Len: int32(payloadLen)},
	}
	if c.captureTrk != c.threadTrack {
		e.Capture = c.captureTrk
	} else if h.proc != 0xffff_ffff {
		e.CPU = int32(h.proc)
	}
	// lost events: per capture thread sequence numbers (NOTES.md §lost-events)
	if c.seq == nil || c.seqKey != h.capture {
		st := r.seqs[h.capture]
		if st == nil {
			st = &seqState{last: h.seq - 1, track: c.captureTrk}
			r.seqs[h.capture] = st
		}
		c.seq, c.seqKey = st, h.capture
	}
	if gap := int32(h.seq - 1 - c.seq.last); gap > 0 {
		r.lost(e.Time, c.seq.track, int64(gap))
	}
	c.seq.last = h.seq
	// stacks
	if h.stack != 0 && !r.types[typ].noStack {
		if !c.stackOK || c.stack != h.stack {
			id, ok := r.fileStack(h.stack)
			if !ok {
				r.region = r.region[:n]
				return r.errorf(payloadOff, "event refers to undefined stack id %d", h.stack)
			}
			c.stack, c.stackID, c.stackOK = h.stack, id, true
		}
		e.Stack = c.stackID
	}
	// labels
	if r.version == 6 {
		if h.label != 0 {
			if !c.labelOK || c.label != h.label {
				id, ok := r.fileLabels[h.label]
				if !ok {
					r.region = r.region[:n]
					return r.errorf(payloadOff, "event refers to undefined label list %d", h.label)
				}
				c.label, c.labelID, c.labelOK = h.label, id, true
			}
			e.Labels = c.labelID
			if r.labelOver[e.Labels].set != 0 {
				e.Type = r.derive(e.Type, e.Labels)
			}
		}
	} else if h.hasAct {
		if c.act != h.act || c.actID == 0 {
			c.act, c.actID = h.act, r.activity(h.act)
		}
		e.Labels = c.actID
	}
	if e.Time < r.tail && n > 0 {
		r.runStarts = append(r.runStarts, int32(n))
	}
	r.tail = e.Time
	return nil
}

// push appends an event to the region, noting where an ascending run ends.
func (r *Reader) push(e trace.Event) {
	if n := len(r.region); e.Time < r.tail && n > 0 {
		r.runStarts = append(r.runStarts, int32(n))
	}
	r.tail = e.Time
	if len(r.region) == cap(r.region) {
		r.grow()
	}
	r.region = append(r.region, e)
}

// grow doubles the region's capacity: append grows big slices by 1.25,
// which copies a region of a million events many times over.
func (r *Reader) grow() {
	grown := make([]trace.Event, len(r.region), max(4096, 2*cap(r.region)))
	copy(grown, r.region)
	r.region = grown
}

func (r *Reader) lost(t trace.Time, track trace.TrackID, n int64) {
	if k := len(r.meta.Lost) - 1; k >= 0 && r.meta.Lost[k].Time == t && r.meta.Lost[k].Track == track {
		r.meta.Lost[k].Count += n
		return
	}
	r.meta.Lost = append(r.meta.Lost, trace.Gap{Time: t, Track: track, Count: n})
}

func (r *Reader) typeOf(id uint32) (trace.TypeID, bool) {
	if int(id) < len(r.metaID) {
		t := r.metaID[id]
		return t - 1, t != 0
	}
	t, ok := r.metaHi[id]
	return t, ok
}

// define adds an event type for a metadata definition.
func (r *Reader) define(m metadata, off int64) error {
	if _, dup := r.typeOf(m.id); dup {
		return r.errorf(off, "metadata id %d defined twice", m.id)
	}
	if m.id == 0 {
		return r.errorf(off, "metadata defines id 0")
	}
	t := trace.TypeID(len(r.meta.Types))
	if m.typ.Provider == providerEventPipe && m.typ.ID == 1 {
		r.processInfo = t
	}
	manifest, maps := describe(r.schema, &m)
	m.typ.Fields = Spec(m.fields)
	if manifest != nil {
		m.typ.Fields = Spec(manifest)
	}
	r.meta.Types = append(r.meta.Types, m.typ)
	ti := typeInfo{name: labelName(m.typ), fields: m.fields, manifest: manifest, maps: maps, noStack: bookkeeping(m.typ)}
	ti.keys, ti.mapped = labelKeys(ti.schema()), mappedFields(maps)
	ti.flat = newFlatPlan(ti.schema(), maps, ti.keys)
	r.types = append(r.types, ti)
	r.publishTypes()
	if m.id < 1<<16 {
		for int(m.id) >= len(r.metaID) {
			r.metaID = append(r.metaID, 0)
		}
		r.metaID[m.id] = t + 1
	} else {
		r.metaHi[m.id] = t
	}
	return nil
}

func (r *Reader) defineV5(payload []byte, off int64) error {
	m, ok := parseMetadataV5(payload)
	if !ok {
		return r.errorf(off, "metadata record of %d bytes is too short", len(payload))
	}
	if m.tagged && r.version == 4 && !r.started {
		r.meta.Version = 5 // v5 shows only in tags (NOTES.md §versions); said before any event is out
	}
	return r.define(m, off)
}

const (
	providerRuntime = "Microsoft-Windows-DotNETRuntime"
	providerRundown = "Microsoft-Windows-DotNETRuntimeRundown"
)

// bookkeeping reports the events whose stacks TraceEvent drops: all
// rundown events and runtime method events 140–144 and 190 (NOTES.md §stacks).
func bookkeeping(t trace.EventType) bool {
	return t.Provider == providerRundown ||
		t.Provider == providerRuntime && (t.ID >= 140 && t.ID <= 144 || t.ID == 190)
}

// threadTrack returns the track of a thread key: an OS thread id (≤v5) or
// a thread index (v6; index 0 is no thread).
func (r *Reader) threadTrack(key uint64, off int64) (trace.TrackID, error) {
	if t, ok := r.threads[key]; ok {
		return t, nil
	}
	if r.version == 6 {
		if key == 0 {
			return trace.NoTrack, nil
		}
		return 0, r.errorf(off, "event refers to unknown thread index %d", key)
	}
	t := r.addTrack(r.pid, int64(key), "", int64(key))
	r.threads[key] = t
	return t, nil
}

// addTrack returns the track of (pid, tid), creating it when new. tid < 0
// (unknown) always creates a track.
func (r *Reader) addTrack(pid, tid int64, name string, code int64) trace.TrackID {
	k := [2]int64{pid, tid}
	if tid >= 0 {
		if t, ok := r.trackKeys[k]; ok {
			if name != "" && name != r.meta.Tracks[t].Name {
				// A new array: a copy of Meta taken earlier keeps the
				// old name (see trace.PayloadDecoder).
				r.meta.Tracks = slices.Clone(r.meta.Tracks)
				r.meta.Tracks[t].Name = name
			}
			return t
		}
	}
	if name == "" {
		name = "Thread " + strconv.FormatInt(tid, 10)
		if tid < 0 {
			name = "Thread #" + strconv.FormatInt(code, 10)
		}
	}
	t := trace.TrackID(len(r.meta.Tracks))
	r.meta.Tracks = append(r.meta.Tracks, trace.Track{
		Kind: trace.TrackThread, Name: name, PID: pid, TID: tid, CPU: -1, Parent: trace.NoTrack, Code: code,
	})
	if tid >= 0 {
		r.trackKeys[k] = t
	}
	return t
}

// activity interns the activity-id label list of ≤v5 events.
func (r *Reader) activity(k [32]byte) trace.LabelsID {
	if id, ok := r.activityIdx[k]; ok {
		return id
	}
	var l []trace.Label
	if a := [16]byte(k[:16]); a != ([16]byte{}) {
		l = append(l, trace.Label{Key: "ActivityId", Value: trace.GUIDValue(a)})
	}
	if a := [16]byte(k[16:]); a != ([16]byte{}) {
		l = append(l, trace.Label{Key: "RelatedActivityId", Value: trace.GUIDValue(a)})
	}
	id := r.addLabels(l, override{})
	r.activityIdx[k] = id
	return id
}

func (r *Reader) addLabels(l []trace.Label, o override) trace.LabelsID {
	id := trace.LabelsID(len(r.labels))
	r.labels = append(r.labels, l)
	r.labelOver = append(r.labelOver, o)
	return id
}

// internStack returns the id of a stack given as raw pointer-sized
// addresses.
func (r *Reader) internStack(raw []byte) trace.StackID {
	ps := r.meta.PointerSize
	n := len(raw) / ps
	if n == 0 {
		return trace.NoStack
	}
	raw = raw[:n*ps]
	if id, ok := r.stackIdx[string(raw)]; ok {
		return id
	}
	s := make([]uint64, n)
	for i := range s {
		if ps == 4 {
			s[i] = uint64(le.Uint32(raw[4*i:]))
		} else {
			s[i] = le.Uint64(raw[8*i:])
		}
	}
	id := trace.StackID(len(r.stacks))
	r.stacks = append(r.stacks, s)
	r.stackIdx[string(raw)] = id
	return id
}

// maxDenseStackID bounds the file stack ids kept in a slice; larger ones
// go to a map.
const maxDenseStackID = 1 << 16

func (r *Reader) fileStack(id uint32) (trace.StackID, bool) {
	if id < uint32(len(r.stackTab)) {
		s := r.stackTab[id]
		return s - 1, s != 0
	}
	s, ok := r.fileStacks[id]
	return s, ok
}

func (r *Reader) setFileStack(id uint32, s trace.StackID) {
	if id >= maxDenseStackID {
		r.fileStacks[id] = s
		return
	}
	for id >= uint32(len(r.stackTab)) {
		r.stackTab = append(r.stackTab, 0)
	}
	r.stackTab[id] = s + 1
}

// stackBlock reads a StackBlock (NOTES.md §stacks).
func (r *Reader) stackBlock(d *dec) error {
	first := d.u32()
	count := int(d.u32())
	if d.bad {
		return r.blockShort(d, "stack block header")
	}
	if count > d.left()/4 {
		return r.blockShort(d, strconv.Itoa(count)+" stacks")
	}
	for i := range count {
		start := d.pos()
		n := int(d.u32())
		if n > MaxStackBytes {
			return r.errorf(start, "stack of %d bytes exceeds the maximum %d", n, MaxStackBytes)
		}
		raw := d.bytes(n)
		if d.bad {
			return r.blockShort(d, "stack "+strconv.Itoa(i))
		}
		r.setFileStack(first+uint32(i), r.internStack(raw))
	}
	r.cache.stackOK = false
	return nil
}

// blockShort reports a block whose contents overrun it: truncation when
// the block reaches the end of the file.
func (r *Reader) blockShort(d *dec, what string) error {
	if d.base+int64(len(d.b)) >= r.size {
		return r.truncated(d.base, "in "+what)
	}
	return r.errorf(d.base, "%s overruns its block", what)
}

// seqPoint reads a sequence point (NOTES.md §sequence-points), checks the listed sequence
// numbers for lost events and ends the region: stack ids, label lists and,
// when flagged, threads and metadata are forgotten.
func (r *Reader) seqPoint(d *dec) error {
	ts := d.u64()
	var flags uint32
	if r.version == 6 {
		flags = d.u32()
	}
	count := int(d.u32())
	if d.bad {
		return r.blockShort(d, "sequence point")
	}
	t := r.clock.time(int64(ts))
	min := 12
	if r.version == 6 {
		min = 2
	}
	if count > d.left()/min {
		return r.blockShort(d, "sequence point with "+strconv.Itoa(count)+" threads")
	}
	for range count {
		var key uint64
		var seq uint32
		if r.version == 6 {
			key, seq = d.uvarint64(), d.uvarint32()
		} else {
			key, seq = d.u64(), d.u32()
		}
		if d.bad {
			return r.blockShort(d, "sequence point")
		}
		r.checkSeq(key, seq, t)
	}
	r.meta.Markers = append(r.meta.Markers, trace.Marker{Kind: trace.MarkerSequencePoint, Time: t, Off: r.pos})
	clear(r.fileStacks)
	r.stackTab = r.stackTab[:0]
	clear(r.fileLabels)
	r.cache = cache{}
	if flags&1 != 0 {
		clear(r.threads)
		clear(r.seqs)
	}
	if flags&2 != 0 {
		r.metaID = r.metaID[:0]
		clear(r.metaHi)
	}
	return nil
}

// checkSeq applies a sequence point or RemoveThread entry to a capture
// thread's sequence state (NOTES.md §lost-events).
func (r *Reader) checkSeq(key uint64, seq uint32, t trace.Time) {
	st := r.seqs[key]
	if st == nil {
		return
	}
	if st.last == 0 && r.version < 6 {
		st.last = seq
		return // thread id assumed recycled
	}
	if gap := int32(seq - st.last); gap > 0 {
		r.lost(t, st.track, int64(gap))
	}
	st.last = seq
}

// threadBlock reads a v6 Thread block (NOTES.md §threads).
func (r *Reader) threadBlock(d *dec) error {
	for d.left() > 0 {
		start := d.pos()
		size := int(d.u16())
		row := dec{b: d.bytes(size), base: start + 2}
		if d.bad {
			return r.blockShort(d, "thread row")
		}
		index := row.uvarint64()
		pid, tid := int64(-1), int64(-1)
		var name string
		for row.left() > 0 && !row.bad {
			switch kind := row.u8(); kind {
			case 1:
				name = row.str()
			case 2:
				pid = int64(row.uvarint64() & (1<<63 - 1))
			case 3:
				tid = int64(row.uvarint64() & (1<<63 - 1))
			case 4: // key/value: the model has no place for it yet
				row.str()
				row.str()
			default:
				return r.errorf(row.pos()-1, "thread row entry of unknown kind %d", kind)
			}
		}
		if row.bad {
			return r.errorf(start, "thread row overruns its size")
		}
		if index == 0 {
			return r.errorf(start, "thread row with the reserved index 0")
		}
		if _, dup := r.threads[index]; dup {
			return r.errorf(start, "thread index %d defined twice", index)
		}
		r.threads[index] = r.addTrack(pid, tid, name, int64(index&(1<<63-1)))
	}
	r.cache.threadOK, r.cache.captureOK = false, false
	return nil
}

// removeThreads reads a v6 RemoveThread block (NOTES.md §threads).
func (r *Reader) removeThreads(d *dec) error {
	t := r.lastTime()
	for d.left() > 0 {
		index := d.uvarint64()
		seq := d.uvarint32()
		if d.bad {
			return r.blockShort(d, "remove-thread entry")
		}
		r.checkSeq(index, seq, t)
		delete(r.threads, index)
		delete(r.seqs, index)
	}
	r.cache = cache{stack: r.cache.stack, stackID: r.cache.stackID, stackOK: r.cache.stackOK,
		label: r.cache.label, labelID: r.cache.labelID, labelOK: r.cache.labelOK}
	return nil
}

func (r *Reader) lastTime() trace.Time {
	if len(r.region) > 0 {
		return r.region[len(r.region)-1].Time
	}
	return 0
}

// metadataV6 reads a v6 metadata block (NOTES.md §blocks, §metadata-v6).
func (r *Reader) metadataV6(d *dec) error {
	hsize := int(d.u16())
	d.skip(hsize)
	if d.bad {
		return r.blockShort(d, "metadata block header")
	}
	for d.left() > 0 {
		start := d.pos()
		size := int(d.u16())
		row := dec{b: d.bytes(size), base: start + 2}
		if d.bad {
			return r.blockShort(d, "metadata row")
		}
		m, ok := parseMetadataV6(&row)
		if !ok {
			return r.errorf(start, "malformed metadata row")
		}
		if err := r.define(m, start); err != nil {
			return err
		}
	}
	return nil
}

// labelBlock reads a v6 LabelList block (NOTES.md §labels).
func (r *Reader) labelBlock(d *dec) error {
	first := d.u32()
	count := int(d.u32())
	if d.bad {
		return r.blockShort(d, "label list block header")
	}
	if count > d.left() {
		return r.blockShort(d, strconv.Itoa(count)+" label lists")
	}
	for i := range count {
		start := d.off
		var l []trace.Label
		var o override
		for {
			kind := d.u8()
			var lb trace.Label
			switch kind & 0x7f {
			case 1:
				lb = trace.Label{Key: "ActivityId", Value: trace.GUIDValue(d.guid())}
			case 2:
				lb = trace.Label{Key: "RelatedActivityId", Value: trace.GUIDValue(d.guid())}
			case 3:
				lb = trace.Label{Key: "TraceId", Value: trace.BytesValue(d.bytes(16))}
			case 4:
				lb = trace.Label{Key: "SpanId", Value: trace.HexValue(d.u64())}
			case 5:
				k := d.str()
				lb = trace.Label{Key: k, Value: trace.StringValue(d.str())}
			case 6:
				k := d.str()
				lb = trace.Label{Key: k, Value: trace.IntValue(d.varint64())}
			case 7:
				o.set |= 1
				o.opcode = int(d.u8())
				lb = trace.Label{Key: "Opcode", Value: trace.UintValue(uint64(o.opcode))}
			case 8:
				o.set |= 2
				o.keywords = d.u64()
				lb = trace.Label{Key: "Keywords", Value: trace.HexValue(o.keywords)}
			case 9:
				o.set |= 4
				o.level = int(d.u8())
				lb = trace.Label{Key: "Level", Value: trace.UintValue(uint64(o.level))}
			case 10:
				o.set |= 8
				o.version = int(d.u8())
				lb = trace.Label{Key: "Version", Value: trace.UintValue(uint64(o.version))}
			default:
				if d.bad {
					return r.blockShort(d, "label list")
				}
				return r.errorf(d.pos()-1, "label of unknown kind %d", kind&0x7f)
			}
			if d.bad {
				return r.blockShort(d, "label list")
			}
			l = append(l, lb)
			if kind&0x80 != 0 {
				break
			}
		}
		raw := d.b[start:d.off]
		id, ok := r.labelIdx[string(raw)]
		if !ok {
			id = r.addLabels(l, o)
			r.labelIdx[string(raw)] = id
		}
		r.fileLabels[first+uint32(i)] = id
	}
	r.cache.labelOK = false
	return nil
}

// derive returns the event type t as changed by the overrides of a label
// list, creating it on first use.
func (r *Reader) derive(t trace.TypeID, l trace.LabelsID) trace.TypeID {
	k := [2]int32{int32(t), int32(l)}
	if d, ok := r.derived[k]; ok {
		return d
	}
	et := r.meta.Types[t]
	o := r.labelOver[l]
	if o.set&1 != 0 {
		et.Opcode = o.opcode
	}
	if o.set&2 != 0 {
		et.Keywords = o.keywords
	}
	if o.set&4 != 0 {
		et.Level = o.level
	}
	if o.set&8 != 0 {
		et.Version = o.version
	}
	for i, x := range r.meta.Types { // same effective type as an earlier one
		if i >= len(r.types) || !sameType(x, et) || len(r.types[i].fields) != len(r.types[t].fields) {
			continue
		}
		r.derived[k] = trace.TypeID(i)
		return trace.TypeID(i)
	}
	d := trace.TypeID(len(r.meta.Types))
	r.meta.Types = append(r.meta.Types, et)
	r.types = append(r.types, r.types[t])
	r.publishTypes()
	r.derived[k] = d
	return d
}

func sameType(a, b trace.EventType) bool {
	return a.Provider == b.Provider && a.Name == b.Name && a.ID == b.ID && a.Version == b.Version &&
		a.Level == b.Level && a.Opcode == b.Opcode && a.Keywords == b.Keywords && a.Message == b.Message
}

// eventsV3 decodes a NetPerf v3 event block: records back to back with
// inline metadata and stacks (NOTES.md §netperf-record).
func (r *Reader) eventsV3(d *dec) error {
	r.cache.threadOK, r.cache.captureOK = false, false
	for d.left() > 0 {
		start := d.off
		size := int(int32(d.u32()))
		if d.bad || size > d.left() {
			return r.incomplete(d, start)
		}
		if size < 52 {
			return r.errorf(d.base+int64(start), "event record of %d bytes", size)
		}
		rec := dec{b: d.b[:d.off+size], off: d.off, base: d.base}
		d.off += size // EventSize includes the stack and the padding
		metaID := rec.u32()
		thread := uint64(rec.u32())
		ts := rec.u64()
		var h header
		copy(h.act[:], rec.bytes(32))
		h.hasAct = h.act != [32]byte{}
		psize := int(rec.u32())
		payloadOff := rec.off
		payload := rec.bytes(psize)
		if rec.bad {
			return r.errorf(d.base+int64(start), "event record of %d bytes holds a %d-byte payload", size, psize)
		}
		var stack []byte
		if rec.left() >= 4 {
			n := int(rec.u32())
			if n > rec.left() || n > 65535-8 {
				return r.errorf(rec.pos()-4, "inline stack of %d bytes", n)
			}
			stack = rec.bytes(n)
		}
		off := d.base + int64(payloadOff)
		if metaID == 0 {
			if err := r.defineV5(payload, off); err != nil {
				return err
			}
			continue
		}
		h.meta, h.thread, h.capture, h.ts, h.proc = metaID, thread, thread, ts, 0xffff_ffff
		if err := r.eventV3(&h, off, len(payload), stack); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) eventV3(h *header, off int64, n int, stack []byte) error {
	typ, ok := r.typeOf(h.meta)
	if !ok {
		return r.errorf(off, "event refers to undefined metadata id %d", h.meta)
	}
	c := &r.cache
	if !c.threadOK || c.thread != h.thread {
		t, _ := r.threadTrack(h.thread, off)
		c.thread, c.threadTrack, c.threadOK = h.thread, t, true
	}
	e := trace.Event{
		Time: r.clock.time(int64(h.ts)), Track: c.threadTrack, Type: typ,
		Capture: trace.NoTrack, CPU: trace.NoCPU,
		Payload: trace.Loc{Off: off, Len: int32(n)},
	}
	if !r.types[typ].noStack {
		e.Stack = r.internStack(stack)
	}
	if h.hasAct {
		if c.act != h.act || c.actID == 0 {
			c.act, c.actID = h.act, r.activity(h.act)
		}
		e.Labels = c.actID
	}
	r.push(e)
	return nil
}
