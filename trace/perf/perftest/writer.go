package perftest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"

	"viewer/trace/perf/tracefs/tracefstest"
)

// Attr describes one event (perf_event_attr) of a file a [Writer]
// makes.
type Attr struct {
	Name        string // "system:event", written to EVENT_DESC (file) or EVENT_UPDATE (pipe)
	Type        uint32 // Type…; TypeTracepoint for tracepoints
	Config      uint64 // tracefs id for tracepoints
	SampleType  uint64 // Sample… bits
	ReadFormat  uint64 // Read… bits
	SampleIDAll bool
	ClockID     int32    // written with use_clockid when not 0
	IDs         []uint64 // sample ids; samples and trailers carry the first
}

// WriterOptions configure a [Writer]: mode, byte order, sizes, the
// tracepoint formats (TRACING_DATA), the events and the header features.
type WriterOptions struct {
	Pipe      bool
	BigEndian bool
	// AttrSize is the perf_event_attr size written (64 … 136 and larger);
	// 0 means 136.
	AttrSize int
	// TracingHeaderSize is the header.size of the pipe-mode
	// HEADER_TRACING_DATA record: 12 (perf 6.6) or 16 (perf 6.1); 0 means 12.
	TracingHeaderSize                  int
	LongSize                           int // the traced kernel's word size in TRACING_DATA; 0 means 8
	Formats                            []tracefstest.Format
	Attrs                              []Attr
	Hostname, OSRelease, Arch, Cmdline string
	// WallNS and ClockNS, when WallNS is not 0, make a CLOCK_DATA feature:
	// the wall-clock time at sample time ClockNS.
	WallNS, ClockNS uint64
	// Compress puts the records written between rounds into COMPRESSED
	// records (one zstd stream, flushed at each round).
	Compress bool
	// Compress2 writes COMPRESSED2 records, as perf 6.16 and later do,
	// instead of COMPRESSED: a u64 data_size after the header and zero
	// padding to a multiple of 8 bytes. It implies Compress.
	Compress2 bool
	// NoEventDesc leaves out EVENT_DESC (names then come from tracefs).
	NoEventDesc bool
}

// Sample is one SAMPLE record; fields are written when the attr's
// sample_type asks for them.
type Sample struct {
	Attr      int // index into WriterOptions.Attrs
	IP        uint64
	PID, TID  int32
	Time      uint64
	Addr      uint64
	StreamID  uint64
	CPU       uint32
	Period    uint64
	Read      []uint64 // the READ values as perf lays them out
	Callchain []uint64
	Raw       []byte
}

// Writer writes perf.data files for fixtures and benchmarks: file mode
// (to an io.WriteSeeker) or pipe mode, either byte order, tracefs formats,
// any sample layout, side-band records and optional zstd compression.
type Writer struct {
	w           *bufio.Writer
	ws          io.WriteSeeker
	opts        WriterOptions
	bo          binary.AppendByteOrder
	bord        binary.ByteOrder
	n           int64 // bytes written
	data        int64 // offset of the data section
	rec         []byte
	zbuf        []byte // records awaiting compression
	zout        bytes.Buffer
	zenc        *zstd.Encoder
	first, last uint64
	err         error
}

// NewWriter starts a perf.data file. File mode needs w to be an
// io.WriteSeeker (the header is rewritten on Close).
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	if opts.AttrSize == 0 {
		opts.AttrSize = 136
	}
	if opts.AttrSize < attrSizeVer0 {
		return nil, errors.New("perftest: attr size below 64")
	}
	if opts.TracingHeaderSize == 0 {
		opts.TracingHeaderSize = 12
	}
	if opts.LongSize == 0 {
		opts.LongSize = 8
	}
	if opts.Compress2 {
		opts.Compress = true
	}
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<20), opts: opts, bo: binary.LittleEndian, bord: binary.LittleEndian}
	if opts.BigEndian {
		wr.bo, wr.bord = binary.BigEndian, binary.BigEndian
	}
	if opts.Compress {
		// A 512 KiB window, as perf record -z's default level 1 uses: a
		// reader holds one window of history.
		enc, err := zstd.NewWriter(&wr.zout, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<19))
		if err != nil {
			return nil, err
		}
		wr.zenc = enc
	}
	magic := magicLE
	if opts.BigEndian {
		magic = magicBE
	}
	if opts.Pipe {
		wr.write(wr.bo.AppendUint64([]byte(magic), pipeHeaderSize))
		for i := range opts.Attrs {
			a := &opts.Attrs[i]
			b := wr.attr(nil, a)
			for _, id := range a.IDs {
				b = wr.bo.AppendUint64(b, id)
			}
			wr.record(recHeaderAttr, 0, b)
		}
		for _, a := range opts.Attrs {
			if a.Name != "" && len(a.IDs) > 0 {
				b := wr.bo.AppendUint64(nil, eventUpdateName)
				b = wr.bo.AppendUint64(b, a.IDs[0])
				b = append(b, a.Name...)
				b = append(b, make([]byte, 8-len(a.Name)%8)...)
				wr.record(recEventUpdate, 0, b)
			}
		}
		for _, f := range wr.features() {
			wr.record(recHeaderFeature, 0, append(wr.bo.AppendUint64(nil, uint64(f.bit)), f.data...))
		}
		if len(opts.Formats) > 0 {
			td := tracefstest.AppendTracingData(nil, opts.BigEndian, opts.LongSize, opts.Formats)
			for len(td)%8 != 0 {
				td = append(td, 0)
			}
			hdr := wr.bo.AppendUint32(nil, uint32(len(td)))
			hdr = append(hdr, make([]byte, opts.TracingHeaderSize-12)...)
			wr.record(recTracingData, 0, hdr)
			wr.write(td)
		}
		wr.record(recHeaderFeature, 0, wr.bo.AppendUint64(nil, featLast))
		wr.record(recFinishedInit, 0, nil)
		return wr, wr.err
	}
	ws, ok := w.(io.WriteSeeker)
	if !ok {
		return nil, errors.New("perftest: file mode needs an io.WriteSeeker")
	}
	wr.ws = ws
	wr.write(make([]byte, fileHeaderSize))
	wr.data = wr.n
	return wr, wr.err
}

func (wr *Writer) write(b []byte) {
	if wr.err != nil {
		return
	}
	_, wr.err = wr.w.Write(b)
	wr.n += int64(len(b))
}

// attr appends a perf_event_attr of the configured size.
func (wr *Writer) attr(dst []byte, a *Attr) []byte {
	full := make([]byte, max(wr.opts.AttrSize, 96))
	bo := wr.bord
	bo.PutUint32(full[0:], a.Type)
	bo.PutUint32(full[4:], uint32(wr.opts.AttrSize))
	bo.PutUint64(full[8:], a.Config)
	bo.PutUint64(full[16:], 1)
	bo.PutUint64(full[24:], a.SampleType)
	bo.PutUint64(full[32:], a.ReadFormat)
	var flags uint64
	if a.SampleIDAll {
		flags |= attrSampleIDAll
	}
	if a.ClockID != 0 {
		flags |= attrUseClockID
		bo.PutUint32(full[attrClockIDOff:], uint32(a.ClockID))
	}
	bo.PutUint64(full[40:], flags)
	return append(dst, full[:wr.opts.AttrSize]...)
}

// record writes one record (or queues it for compression).
func (wr *Writer) record(typ uint32, misc uint16, body []byte) {
	wr.rec = wr.bo.AppendUint32(wr.rec[:0], typ)
	wr.rec = wr.bo.AppendUint16(wr.rec, misc)
	wr.rec = wr.bo.AppendUint16(wr.rec, uint16(recordHeaderSize+len(body)))
	wr.rec = append(wr.rec, body...)
	if wr.zenc != nil && typ < recHeaderAttr {
		wr.zbuf = append(wr.zbuf, wr.rec...)
		return
	}
	wr.write(wr.rec)
}

// flushCompressed compresses the queued records into COMPRESSED records.
func (wr *Writer) flushCompressed() {
	if wr.zenc == nil || len(wr.zbuf) == 0 {
		return
	}
	wr.zout.Reset()
	if _, err := wr.zenc.Write(wr.zbuf); err != nil && wr.err == nil {
		wr.err = err
	}
	if err := wr.zenc.Flush(); err != nil && wr.err == nil {
		wr.err = err
	}
	wr.zbuf = wr.zbuf[:0]
	out := wr.zout.Bytes()
	if wr.opts.Compress2 {
		// tools/perf/builtin-record.c, record__pushfn: header.size is
		// the 8-byte aligned size, data_size the zstd bytes.
		const maxPayload = (maxRecordSize-1)&^7 - recordHeaderSize - 8
		for len(out) > 0 {
			n := min(len(out), maxPayload)
			size := (recordHeaderSize + 8 + n + 7) &^ 7
			hdr := wr.bo.AppendUint32(nil, recCompressed2)
			hdr = wr.bo.AppendUint16(hdr, 0)
			hdr = wr.bo.AppendUint16(hdr, uint16(size))
			hdr = wr.bo.AppendUint64(hdr, uint64(n))
			wr.write(hdr)
			wr.write(out[:n])
			wr.write(make([]byte, size-recordHeaderSize-8-n))
			out = out[n:]
		}
		return
	}
	const maxPayload = maxRecordSize - 1 - recordHeaderSize
	for len(out) > 0 {
		n := min(len(out), maxPayload)
		hdr := wr.bo.AppendUint32(nil, recCompressed)
		hdr = wr.bo.AppendUint16(hdr, 0)
		hdr = wr.bo.AppendUint16(hdr, uint16(recordHeaderSize+n))
		wr.write(hdr)
		wr.write(out[:n])
		out = out[n:]
	}
}

// Record writes a record of any type with the given body (the bytes after
// the 8-byte header), e.g. a type the reader does not know. Types below 64
// (kernel records) are compressed when compression is on, as perf does.
func (wr *Writer) Record(typ uint32, misc uint16, body []byte) {
	if recordHeaderSize+len(body) >= maxRecordSize {
		wr.err = errors.New("perftest: record body too large")
		return
	}
	wr.record(typ, misc, body)
}

// trailer appends the sample-id trailer of the first attr to b.
func (wr *Writer) trailer(b []byte, pid, tid int32, time uint64) []byte {
	if len(wr.opts.Attrs) == 0 || !wr.opts.Attrs[0].SampleIDAll {
		return b
	}
	a := &wr.opts.Attrs[0]
	var id uint64
	if len(a.IDs) > 0 {
		id = a.IDs[0]
	}
	st := a.SampleType
	if st&SampleTID != 0 {
		b = wr.bo.AppendUint32(b, uint32(pid))
		b = wr.bo.AppendUint32(b, uint32(tid))
	}
	if st&SampleTime != 0 {
		b = wr.bo.AppendUint64(b, time)
	}
	if st&SampleID != 0 {
		b = wr.bo.AppendUint64(b, id)
	}
	if st&SampleStreamID != 0 {
		b = wr.bo.AppendUint64(b, 0)
	}
	if st&SampleCPU != 0 {
		b = wr.bo.AppendUint64(b, 0)
	}
	if st&SampleIdentifier != 0 {
		b = wr.bo.AppendUint64(b, id)
	}
	return b
}

// Sample writes a SAMPLE record.
func (wr *Writer) Sample(s Sample) {
	if s.Attr < 0 || s.Attr >= len(wr.opts.Attrs) {
		wr.err = errors.New("perftest: sample of unknown attr")
		return
	}
	a := &wr.opts.Attrs[s.Attr]
	var id uint64
	if len(a.IDs) > 0 {
		id = a.IDs[0]
	}
	st := a.SampleType
	bo := wr.bo
	b := wr.rec[:0:0]
	if st&SampleIdentifier != 0 {
		b = bo.AppendUint64(b, id)
	}
	if st&SampleIP != 0 {
		b = bo.AppendUint64(b, s.IP)
	}
	if st&SampleTID != 0 {
		b = bo.AppendUint32(b, uint32(s.PID))
		b = bo.AppendUint32(b, uint32(s.TID))
	}
	if st&SampleTime != 0 {
		b = bo.AppendUint64(b, s.Time)
	}
	if st&SampleAddr != 0 {
		b = bo.AppendUint64(b, s.Addr)
	}
	if st&SampleID != 0 {
		b = bo.AppendUint64(b, id)
	}
	if st&SampleStreamID != 0 {
		b = bo.AppendUint64(b, s.StreamID)
	}
	if st&SampleCPU != 0 {
		b = bo.AppendUint32(b, s.CPU)
		b = bo.AppendUint32(b, 0)
	}
	if st&SamplePeriod != 0 {
		b = bo.AppendUint64(b, s.Period)
	}
	if st&SampleRead != 0 {
		for _, v := range s.Read {
			b = bo.AppendUint64(b, v)
		}
	}
	if st&SampleCallchain != 0 {
		b = bo.AppendUint64(b, uint64(len(s.Callchain)))
		for _, v := range s.Callchain {
			b = bo.AppendUint64(b, v)
		}
	}
	if st&SampleRaw != 0 {
		n := len(s.Raw)
		pad := (8 - (4+n)%8) % 8
		b = bo.AppendUint32(b, uint32(n+pad))
		b = append(b, s.Raw...)
		b = append(b, make([]byte, pad)...)
	}
	if s.Time != 0 && (wr.first == 0 || s.Time < wr.first) {
		wr.first = s.Time
	}
	wr.last = max(wr.last, s.Time)
	wr.record(recSample, 2, b)
}

// Comm writes a COMM record.
func (wr *Writer) Comm(pid, tid int32, name string, time uint64) {
	b := wr.bo.AppendUint32(nil, uint32(pid))
	b = wr.bo.AppendUint32(b, uint32(tid))
	b = append(b, name...)
	b = append(b, make([]byte, 8-len(name)%8)...)
	wr.record(recComm, 0, wr.trailer(b, pid, tid, time))
}

// Fork writes a FORK record (Exit an EXIT record).
func (wr *Writer) Fork(pid, ppid, tid, ptid int32, time uint64) {
	wr.task(recFork, pid, ppid, tid, ptid, time)
}

// Exit writes an EXIT record.
func (wr *Writer) Exit(pid, ppid, tid, ptid int32, time uint64) {
	wr.task(recExit, pid, ppid, tid, ptid, time)
}

func (wr *Writer) task(typ uint32, pid, ppid, tid, ptid int32, time uint64) {
	b := wr.bo.AppendUint32(nil, uint32(pid))
	b = wr.bo.AppendUint32(b, uint32(ppid))
	b = wr.bo.AppendUint32(b, uint32(tid))
	b = wr.bo.AppendUint32(b, uint32(ptid))
	b = wr.bo.AppendUint64(b, time)
	wr.record(typ, 0, wr.trailer(b, pid, tid, time))
}

// Lost writes a LOST record.
func (wr *Writer) Lost(id, lost uint64, time uint64) {
	b := wr.bo.AppendUint64(nil, id)
	b = wr.bo.AppendUint64(b, lost)
	wr.record(recLost, 0, wr.trailer(b, -1, -1, time))
}

// LostSamples writes a LOST_SAMPLES record.
func (wr *Writer) LostSamples(lost uint64, time uint64) {
	wr.record(recLostSamples, 0, wr.trailer(wr.bo.AppendUint64(nil, lost), -1, -1, time))
}

// Mmap2 writes an MMAP2 record (the reader skips it).
func (wr *Writer) Mmap2(pid, tid int32, addr, length uint64, file string) {
	b := wr.bo.AppendUint32(nil, uint32(pid))
	b = wr.bo.AppendUint32(b, uint32(tid))
	b = wr.bo.AppendUint64(b, addr)
	b = wr.bo.AppendUint64(b, length)
	b = append(b, make([]byte, 8+24+8)...)
	b = append(b, file...)
	b = append(b, make([]byte, 8-len(file)%8)...)
	wr.record(recMmap2, 0, b)
}

// FinishedRound ends a round (compressing the round's records first).
func (wr *Writer) FinishedRound() {
	wr.flushCompressed()
	wr.record(recFinishedRound, 0, nil)
}

type feature struct {
	bit  int
	data []byte
}

func (wr *Writer) perfString(s string) []byte {
	n := (len(s) + 1 + 7) &^ 7
	b := wr.bo.AppendUint32(nil, uint32(n))
	b = append(b, s...)
	return append(b, make([]byte, n-len(s))...)
}

// features returns the feature sections in bit order.
func (wr *Writer) features() []feature {
	o := &wr.opts
	var fs []feature
	if len(o.Formats) > 0 && !o.Pipe {
		fs = append(fs, feature{featTracingData, tracefstest.AppendTracingData(nil, o.BigEndian, o.LongSize, o.Formats)})
	}
	for _, s := range []struct {
		bit int
		v   string
	}{{featHostname, o.Hostname}, {featOSRelease, o.OSRelease}, {featArch, o.Arch}} {
		if s.v != "" {
			fs = append(fs, feature{s.bit, wr.perfString(s.v)})
		}
	}
	fs = append(fs, feature{featNrCPUs, wr.bo.AppendUint32(wr.bo.AppendUint32(nil, 2), 2)})
	if o.Cmdline != "" {
		fs = append(fs, feature{featCmdline, append(wr.bo.AppendUint32(nil, 1), wr.perfString(o.Cmdline)...)})
	}
	if !o.NoEventDesc && len(o.Attrs) > 0 {
		b := wr.bo.AppendUint32(nil, uint32(len(o.Attrs)))
		b = wr.bo.AppendUint32(b, uint32(o.AttrSize))
		for i := range o.Attrs {
			a := &o.Attrs[i]
			b = wr.attr(b, a)
			b = wr.bo.AppendUint32(b, uint32(len(a.IDs)))
			name := wr.perfString(a.Name)[4:]
			b = wr.bo.AppendUint32(b, uint32(len(name)))
			b = append(b, name...)
			for _, id := range a.IDs {
				b = wr.bo.AppendUint64(b, id)
			}
		}
		fs = append(fs, feature{featEventDesc, b})
	}
	if !o.Pipe {
		fs = append(fs, feature{featSampleTime, wr.bo.AppendUint64(wr.bo.AppendUint64(nil, wr.first), wr.last)})
	}
	if o.WallNS != 0 {
		fs = append(fs, feature{featClockID, wr.bo.AppendUint64(nil, 1)})
	}
	if o.Compress {
		b := wr.bo.AppendUint32(nil, 0)
		for _, v := range []uint32{1, 1, 16, 528384} {
			b = wr.bo.AppendUint32(b, v)
		}
		fs = append(fs, feature{featCompressed, b})
	}
	if o.WallNS != 0 {
		b := wr.bo.AppendUint32(nil, 1)
		b = wr.bo.AppendUint32(b, 1)
		b = wr.bo.AppendUint64(b, o.WallNS)
		b = wr.bo.AppendUint64(b, o.ClockNS)
		fs = append(fs, feature{featClockData, b})
	}
	return fs
}

// Close finishes the file: in file mode the feature sections (their
// table right after the data), the attrs and the header.
func (wr *Writer) Close() error {
	wr.flushCompressed()
	if wr.opts.Pipe {
		if wr.err == nil {
			wr.err = wr.w.Flush()
		}
		return wr.err
	}
	o := &wr.opts
	bo := wr.bo
	dataEnd := wr.n
	fs := wr.features()
	off := dataEnd + int64(16*len(fs))
	var table []byte
	var bitmap [4]uint64
	for _, f := range fs {
		table = bo.AppendUint64(table, uint64(off))
		table = bo.AppendUint64(table, uint64(len(f.data)))
		off += int64(len(f.data))
		bitmap[f.bit/64] |= 1 << (f.bit % 64)
	}
	wr.write(table)
	for _, f := range fs {
		wr.write(f.data)
	}
	idOffs := make([]int64, len(o.Attrs))
	for i, a := range o.Attrs {
		idOffs[i] = wr.n
		var b []byte
		for _, id := range a.IDs {
			b = bo.AppendUint64(b, id)
		}
		wr.write(b)
	}
	attrsOff := wr.n
	for i := range o.Attrs {
		b := wr.attr(nil, &o.Attrs[i])
		b = bo.AppendUint64(b, uint64(idOffs[i]))
		b = bo.AppendUint64(b, uint64(8*len(o.Attrs[i].IDs)))
		wr.write(b)
	}
	attrsEnd := wr.n
	if wr.err != nil {
		return wr.err
	}
	if err := wr.w.Flush(); err != nil {
		return err
	}
	magic := magicLE
	if o.BigEndian {
		magic = magicBE
	}
	h := []byte(magic)
	h = bo.AppendUint64(h, fileHeaderSize)
	h = bo.AppendUint64(h, uint64(o.AttrSize+16))
	h = bo.AppendUint64(h, uint64(attrsOff))
	h = bo.AppendUint64(h, uint64(attrsEnd-attrsOff))
	h = bo.AppendUint64(h, uint64(wr.data))
	h = bo.AppendUint64(h, uint64(dataEnd-wr.data))
	h = bo.AppendUint64(h, 0)
	h = bo.AppendUint64(h, 0)
	for _, w := range bitmap {
		h = bo.AppendUint64(h, w)
	}
	if _, err := wr.ws.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := wr.ws.Write(h); err != nil {
		return err
	}
	_, err := wr.ws.Seek(0, io.SeekEnd)
	return err
}
