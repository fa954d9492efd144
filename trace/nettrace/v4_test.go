package nettrace

import (
	"encoding/binary"
	"reflect"
	"testing"
	"unicode/utf16"

	"viewer/trace"
)

// v4File builds a NetTrace v4 stream by hand (no real file uses the
// uncompressed 80-byte headers or their padding): FastSerialization
// objects, a Trace object, and blocks aligned to 4-byte file offsets.
type v4File struct{ b []byte }

func newV4File() *v4File {
	f := &v4File{b: []byte("Nettrace\x14\x00\x00\x00!FastSerialization.1")}
	f.object("Trace", 4, func(b []byte) []byte {
		for _, v := range []uint16{2024, 3, 4, 28, 0, 45, 12, 640} {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		b = binary.LittleEndian.AppendUint64(b, 1000) // sync ticks
		b = binary.LittleEndian.AppendUint64(b, 1e7)  // frequency
		b = binary.LittleEndian.AppendUint32(b, 8)
		b = binary.LittleEndian.AppendUint32(b, 4242) // pid
		b = binary.LittleEndian.AppendUint32(b, 4)
		return binary.LittleEndian.AppendUint32(b, 1000000)
	}, false)
	return f
}

func (f *v4File) object(name string, version uint32, payload func([]byte) []byte, block bool) {
	b := append(f.b, tagBeginPriv, tagBeginPriv, tagNull)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = append(append(b, name...), tagEndObject)
	if block {
		p := payload(nil)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	} else {
		b = payload(b)
	}
	f.b = append(b, tagEndObject)
}

func utf16z(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

// record is an uncompressed v4 event record (NOTES.md §header-uncompressed) at file offset base+len(b).
type record struct {
	meta, seq       uint32
	thread, capture uint64
	proc, stack     uint32
	ticks           int64
	act, rel        [16]byte
	payload         []byte
	unsorted        bool
}

func appendRecords(fileOff int, recs ...record) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 20)
	b = binary.LittleEndian.AppendUint16(b, 0) // uncompressed
	b = append(b, make([]byte, 16)...)
	for _, r := range recs {
		id := r.meta
		if r.unsorted {
			id |= 1 << 31
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(76+len(r.payload)))
		b = binary.LittleEndian.AppendUint32(b, id)
		b = binary.LittleEndian.AppendUint32(b, r.seq)
		b = binary.LittleEndian.AppendUint64(b, r.thread)
		b = binary.LittleEndian.AppendUint64(b, r.capture)
		b = binary.LittleEndian.AppendUint32(b, r.proc)
		b = binary.LittleEndian.AppendUint32(b, r.stack)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.ticks))
		b = append(append(b, r.act[:]...), r.rel[:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.payload)))
		b = append(b, r.payload...)
		for (fileOff+len(b))%4 != 0 {
			b = append(b, 0)
		}
	}
	return b
}

// blockOffset is the file offset where the next block's payload starts.
func (f *v4File) blockOffset(name string) int {
	n := len(f.b) + 3 + 12 + len(name) + 1 + 4
	return n + (4-n%4)%4
}

// v4Metadata returns v4Sample's two metadata records (MetaDataId first):
// id 1 with V1 fields (Byte b, UTF16String s); id 2 with no V1 fields, an
// OpCode tag and a V2Params tag declaring an Int32 array xs.
func v4Metadata() (md1, md2 []byte) {
	md1 = binary.LittleEndian.AppendUint32(nil, 1)
	md1 = append(md1, utf16z("Prov")...)
	md1 = binary.LittleEndian.AppendUint32(md1, 10)
	md1 = append(md1, utf16z("Hello")...)
	md1 = binary.LittleEndian.AppendUint64(md1, 0x30)
	md1 = binary.LittleEndian.AppendUint32(md1, 2) // version
	md1 = binary.LittleEndian.AppendUint32(md1, 4) // level
	md1 = binary.LittleEndian.AppendUint32(md1, 2) // V1 fields
	md1 = binary.LittleEndian.AppendUint32(md1, uint32(TypeByte))
	md1 = append(md1, utf16z("b")...)
	md1 = binary.LittleEndian.AppendUint32(md1, uint32(TypeUTF16String))
	md1 = append(md1, utf16z("s")...)
	md2 = binary.LittleEndian.AppendUint32(nil, 2)
	md2 = append(md2, utf16z("Prov")...)
	md2 = binary.LittleEndian.AppendUint32(md2, 11)
	md2 = append(md2, utf16z("Arr")...)
	md2 = append(md2, make([]byte, 16)...)
	md2 = binary.LittleEndian.AppendUint32(md2, 0) // V1 count 0, then tags
	md2 = binary.LittleEndian.AppendUint32(md2, 1)
	md2 = append(md2, 1, 24) // OpCode 24
	param := utf16z("xs")
	param = binary.LittleEndian.AppendUint32(param, uint32(TypeArray))
	param = binary.LittleEndian.AppendUint32(param, uint32(TypeInt32))
	v2 := binary.LittleEndian.AppendUint32(nil, 1)
	v2 = binary.LittleEndian.AppendUint32(v2, uint32(4+len(param)))
	v2 = append(v2, param...)
	md2 = binary.LittleEndian.AppendUint32(md2, uint32(len(v2)))
	md2 = append(append(md2, 2), v2...)
	return md1, md2
}

// v4Sample is a v4 file with uncompressed headers, padding, V1 and
// V2Params metadata, an OpCode tag, activity ids, a stack block and a
// sequence point reporting lost events.
func v4Sample() ([]byte, [16]byte) {
	f := newV4File()
	md1, md2 := v4Metadata()
	off := f.blockOffset("MetadataBlock")
	f.object("MetadataBlock", 2, func([]byte) []byte {
		return appendRecords(off, record{payload: md1, ticks: 1}, record{payload: md2, ticks: 1})
	}, true)
	f.object("StackBlock", 2, func([]byte) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 1)
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 16)
		b = binary.LittleEndian.AppendUint64(b, 0xaaaa)
		return binary.LittleEndian.AppendUint64(b, 0xbbbb)
	}, true)
	act := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	p1 := append([]byte{7}, utf16z("hi")...) // 7 bytes: padding follows
	p2 := binary.LittleEndian.AppendUint16(nil, 2)
	p2 = binary.LittleEndian.AppendUint32(p2, 5)
	p2 = binary.LittleEndian.AppendUint32(p2, 0xffffffff)
	off = f.blockOffset("EventBlock")
	f.object("EventBlock", 2, func([]byte) []byte {
		return appendRecords(off,
			record{meta: 1, seq: 1, thread: 77, capture: 77, proc: 3, stack: 1, ticks: 3000, act: act, payload: p1},
			record{meta: 2, seq: 2, thread: 77, capture: 77, proc: 3, ticks: 2000, payload: p2, unsorted: true},
			record{meta: 1, seq: 1, thread: 78, capture: 99, proc: 1, ticks: 2500, payload: p1})
	}, true)
	f.object("SPBlock", 2, func([]byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, 4000)
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint64(b, 77)
		return binary.LittleEndian.AppendUint32(b, 5) // 3 lost after seq 2
	}, true)
	f.b = append(f.b, tagNull)
	return f.b, act
}

// TestV4Uncompressed reads v4Sample.
func TestV4Uncompressed(t *testing.T) {
	b, act := v4Sample()
	r, res := readAll(t, b)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	m := r.Meta()
	if m.Version != 5 || m.Format != "nettrace" || m.Clock.TicksPerSecond != 1e7 || len(m.Markers) != 1 {
		t.Errorf("meta %+v", m)
	}
	if len(m.Lost) != 1 || m.Lost[0].Count != 3 || m.Tracks[m.Lost[0].Track].TID != 77 {
		t.Errorf("lost %+v, want 3 on thread 77", m.Lost)
	}
	type got struct {
		time    trace.Time
		tid     int64
		capture int64
		name    string
		opcode  int
		cpu     int32
		stack   []uint64
		labels  int
		label   string
	}
	var gs []got
	for _, e := range res.Events {
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		g := got{time: e.Time, tid: m.Tracks[e.Track].TID, capture: -1, name: m.Types[e.Type].Name, opcode: m.Types[e.Type].Opcode,
			cpu: e.CPU, stack: r.Stack(e.Stack), labels: len(r.Labels(e.Labels)), label: d.Label}
		if e.Capture != trace.NoTrack {
			g.capture = m.Tracks[e.Capture].TID
		}
		gs = append(gs, g)
	}
	want := []got{
		{100000, 77, -1, "Arr/24", 24, 3, nil, 0, "Arr/24 xs=[5, -1]"}, // TraceEvent appends an explicit opcode the name does not imply
		{150000, 78, 99, "Hello", 0, -1, nil, 0, "Hello b=7 s=hi"},
		{200000, 77, -1, "Hello", 0, 3, []uint64{0xaaaa, 0xbbbb}, 1, "Hello b=7 s=hi"},
	}
	if !reflect.DeepEqual(gs, want) {
		t.Errorf("events\n %+v\nwant\n %+v", gs, want)
	}
	if l := r.Labels(res.Events[2].Labels); len(l) != 1 || l[0].Key != "ActivityId" || l[0].Value.Str() != string(act[:]) {
		t.Errorf("labels %v", l)
	}
}
