package perf

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"viewer/trace"
)

// chunkSize is how much of the file chunkBuf reads at a time.
const chunkSize = 1 << 20

// maxHeld bounds the bytes of the chunks chunkBuf keeps behind the
// current one. Rounds larger than that (many CPUs' buffers) leave some
// payloads unheld: their readers read them again (rawAt, Sched's window).
const maxHeld = 32 << 20

// chunkBuf reads a file's records through a buffer of about chunkSize
// bytes. It keeps the chunks before the current one that hold payloads of
// events not yet handed out, and of those handed out since the last
// release (NOTES.md §ordering: the events of a round are handed out after
// the next round is read), so that their payloads are still here (held)
// rather than read again.
type chunkBuf struct {
	r     io.ReaderAt
	limit int64 // end of the readable region
	base  int64
	b     []byte
	// kept are the earlier chunks, oldest first; free are buffers to read
	// the next ones into.
	kept []chunk
	free [][]byte
	// keep is the offset from which the payloads are wanted: chunks that
	// end at or before it are dropped when the next one is read.
	keep func() int64
}

// chunk is bytes of the file at an offset.
type chunk struct {
	base int64
	b    []byte
}

// at returns the n bytes at off, valid until the next call that reads
// past the current chunk, or held longer (held). It returns
// io.ErrUnexpectedEOF when they run past the limit or the file.
func (c *chunkBuf) at(off int64, n int) ([]byte, error) {
	if off >= c.base && off+int64(n) <= c.base+int64(len(c.b)) {
		return c.b[off-c.base : off-c.base+int64(n)], nil
	}
	if off+int64(n) > c.limit {
		return nil, io.ErrUnexpectedEOF
	}
	want := max(int64(n), min(chunkSize, c.limit-off))
	if g, ok := c.r.(trace.Growing); ok { // read no further than has arrived
		want = max(int64(n), min(want, g.Available()-off))
	}
	if c.b != nil {
		c.kept = append(c.kept, chunk{c.base, c.b})
	}
	c.drop()
	var next []byte
	if k := len(c.free) - 1; k >= 0 && int64(cap(c.free[k])) >= want {
		next, c.free = c.free[k], c.free[:k]
	} else {
		next = make([]byte, want)
	}
	next = next[:want]
	m, err := c.r.ReadAt(next, off)
	c.base, c.b = off, next[:m]
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return c.b[:n], nil
}

// drop forgets the kept chunks nobody wants any more (all but the newest
// without keep), and the oldest past maxHeld. Those nobody wants go to the
// free list; those past maxHeld are left to the garbage collector, since
// a batch Sched noted may still read them (Sched.Take).
func (c *chunkBuf) drop() {
	from := int64(1<<63 - 1)
	if c.keep != nil {
		from = c.keep()
	}
	held := 0
	for _, k := range c.kept {
		held += len(k.b)
	}
	i := 0
	for ; i < len(c.kept)-1; i++ {
		k := c.kept[i]
		if k.base+int64(len(k.b)) > from && held <= maxHeld {
			break
		}
		held -= len(k.b)
		if cap(k.b) >= chunkSize && k.base+int64(len(k.b)) <= from {
			c.free = append(c.free, k.b[:0])
		}
	}
	c.kept = append(c.kept[:0], c.kept[i:]...)
}

// first returns the offset of the first byte the chunks hold.
func (c *chunkBuf) first() int64 {
	if len(c.kept) > 0 {
		return c.kept[0].base
	}
	return c.base
}

// appendChunks appends the kept chunks and the current one to cs.
func (c *chunkBuf) appendChunks(cs []chunk) []chunk {
	cs = append(cs, c.kept...)
	return append(cs, chunk{c.base, c.b})
}

// heldIn returns the n bytes at off when one of cs holds them.
func heldIn(cs []chunk, off, n int64) ([]byte, bool) {
	for i := len(cs) - 1; i >= 0; i-- {
		k := cs[i]
		if o := off - k.base; off >= k.base && o <= int64(len(k.b))-n {
			return k.b[o : o+n], true
		}
	}
	return nil, false
}

// held returns the bytes of l when the current or a kept chunk holds
// them.
func (c *chunkBuf) held(l trace.Loc) ([]byte, bool) {
	if l.Len < 0 {
		return nil, false
	}
	if o := l.Off - c.base; l.Off >= c.base && o <= int64(len(c.b))-int64(l.Len) {
		return c.b[o : o+int64(l.Len)], true
	}
	return heldIn(c.kept, l.Off, int64(l.Len))
}

// zspill holds the raw data of the samples found in COMPRESSED data, so
// that Details can find payloads that are not in the file as-is. It is an
// unlinked temporary file read back by offset (as render's spill file is):
// a file whose records decompress to gigabytes costs disk, not memory.
// Bytes not yet written stay in buf, at file offset flushed.
type zspill struct {
	dir     string
	f       *os.File
	buf     []byte
	flushed int64 // bytes in the file
	err     error // the first write error: later adds fail with it
}

// zspillBuffer is how many bytes zspill buffers before writing.
const zspillBuffer = 1 << 20

// add appends b and returns its offset.
func (z *zspill) add(b []byte) (int64, error) {
	if z.err != nil {
		return 0, z.err
	}
	if z.buf == nil {
		z.buf = make([]byte, 0, zspillBuffer)
	}
	if len(z.buf)+len(b) > cap(z.buf) {
		if err := z.flush(); err != nil {
			return 0, err
		}
	}
	off := z.flushed + int64(len(z.buf))
	z.buf = append(z.buf, b...)
	return off, nil
}

// flush writes the buffered bytes to the file, creating it on first use.
func (z *zspill) flush() error {
	if z.err != nil || len(z.buf) == 0 {
		return z.err
	}
	if z.f == nil {
		f, err := os.CreateTemp(z.dir, "viewer-perf-*.zspill")
		if err != nil {
			z.err = spillErr("create", err)
			return z.err
		}
		// The file lives until Close (or until the reader is collected);
		// removing the name now means a crash leaves nothing behind.
		os.Remove(f.Name())
		z.f = f
	}
	if _, err := z.f.WriteAt(z.buf, z.flushed); err != nil {
		z.err = spillErr("write", err)
		return z.err
	}
	z.flushed += int64(len(z.buf))
	z.buf = z.buf[:0]
	return nil
}

// finish writes what is buffered and drops the buffer: once reading has
// finished, Details reads the file only, so concurrent calls are safe.
func (z *zspill) finish() {
	if z.flush() == nil {
		z.buf = nil
	}
}

// at returns n bytes at offset off, in buf when they come from the file.
func (z *zspill) at(off int64, n int, buf []byte) []byte {
	if off < 0 || n < 0 || off+int64(n) > z.flushed+int64(len(z.buf)) {
		return nil
	}
	if off >= z.flushed {
		return z.buf[off-z.flushed : off-z.flushed+int64(n)]
	}
	if off+int64(n) > z.flushed || z.f == nil {
		return nil // straddles the buffer: add never splits a payload, so this is damage
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := z.f.ReadAt(buf, off); err != nil {
		return nil
	}
	return buf
}

// close removes the file.
func (z *zspill) close() error {
	z.buf = nil
	if z.f == nil {
		return nil
	}
	err := z.f.Close()
	z.f = nil
	return err
}

// spillErr names a failure of the temporary file without its path.
func spillErr(op string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	msg := "perf: cannot " + op + " the temporary file of decompressed samples: " + err.Error()
	if errors.Is(err, syscall.ENOSPC) {
		msg = "perf: disk full: no space for the temporary file of decompressed samples"
	}
	return &spillError{msg: msg, err: err}
}

type spillError struct {
	msg string
	err error
}

func (e *spillError) Error() string { return e.msg }
func (e *spillError) Unwrap() error { return e.err }

// zstream decompresses the COMPRESSED records of a file as one zstd
// stream (NOTES.md §compressed). Its input walks the file's COMPRESSED records on its own cursor;
// idx counts the COMPRESSED records it has begun to feed. Because perf
// flushes at the end of each COMPRESSED record and the decoder reads its
// input block by block, a record that the decoder produces after idx moved
// past the record being processed belongs to a later COMPRESSED record.
type zstream struct {
	rd     *Reader
	dec    *zstd.Decoder
	active bool // the current COMPRESSED record may still yield records
	failed bool // the stream is damaged: no more records from it
	cur    int  // index of the COMPRESSED record being processed
	cur0   int64
	// input cursor
	in      chunkBuf
	inPos   int64
	payload []byte
	idx     int
	inErr   error
	held    []byte // a record read ahead that belongs to a later COMPRESSED record
	heldIdx int
	total   int64
	fed     int64 // compressed bytes handed to the decoder
	hdr     [recordHeaderSize]byte
	rec     []byte
}

// Read feeds the decoder the payloads of successive COMPRESSED records.
func (z *zstream) Read(p []byte) (int, error) {
	for len(z.payload) == 0 {
		if z.inErr != nil {
			return 0, z.inErr
		}
		z.nextPayload()
	}
	n := copy(p, z.payload)
	z.payload = z.payload[n:]
	z.fed += int64(n)
	return n, nil
}

// nextPayload finds the next COMPRESSED record from inPos.
func (z *zstream) nextPayload() {
	rd := z.rd
	for z.inPos < rd.end {
		hdr, err := z.in.at(z.inPos, recordHeaderSize)
		if err != nil {
			break
		}
		typ := rd.bo.Uint32(hdr)
		size := int64(rd.bo.Uint16(hdr[6:]))
		if size < recordHeaderSize {
			break
		}
		next := z.inPos + size
		switch typ {
		case recTracingData:
			if b, err := z.in.at(z.inPos, 12); err == nil {
				next += int64(rd.bo.Uint32(b[8:]))
			}
		case recAuxtrace:
			if b, err := z.in.at(z.inPos, 16); err == nil {
				next += int64(min(rd.bo.Uint64(b[8:]), uint64(rd.end)))
			}
		case recCompressed, recCompressed2:
			rec, err := z.in.at(z.inPos, int(size))
			if err != nil {
				z.inErr = io.ErrUnexpectedEOF
				return
			}
			p, err := rd.compressedPayload(rec, z.inPos)
			if err != nil {
				z.inErr = err
				return
			}
			z.payload = append(z.payload[:0], p...)
			z.idx++
			z.inPos = next
			return
		}
		z.inPos = next
	}
	z.inErr = io.EOF
}

// startCompressed begins processing the COMPRESSED record at off.
func (rd *Reader) startCompressed(off int64) error {
	if rd.z == nil {
		z := &zstream{rd: rd, inPos: off}
		z.in = chunkBuf{r: rd.r, limit: rd.end}
		dec, err := zstd.NewReader(z, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxDecompressed), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return err
		}
		z.dec = dec
		rd.z = z
	}
	rd.z.cur++
	rd.z.cur0 = off
	rd.z.active = true
	return nil
}

// stepCompressed applies the next record of the current COMPRESSED
// record. more is false when the COMPRESSED record has no more records.
func (rd *Reader) stepCompressed() (more bool, err error) {
	z := rd.z
	if z.failed {
		z.active = false
		return false, nil
	}
	if z.held != nil {
		if z.heldIdx > z.cur {
			z.active = false
			return false, nil
		}
		rec := z.held
		z.held = nil
		return true, rd.compressedRecord(rec)
	}
	if _, err := io.ReadFull(z.dec, z.hdr[:]); err != nil {
		z.active = false
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, nil // the stream is never closed: its end is normal
		}
		rd.meta.Notices = append(rd.meta.Notices, "compressed data after COMPRESSED record at byte "+strconv.FormatInt(z.cur0, 10)+" undecodable: "+err.Error()+"; later COMPRESSED records are skipped")
		z.failed = true
		return false, nil
	}
	idx := z.idx
	size := int(rd.bo.Uint16(z.hdr[6:]))
	if size < recordHeaderSize {
		z.active = false
		rd.meta.Notices = append(rd.meta.Notices, "compressed data holds a record of size "+strconv.Itoa(size)+"; the rest of it is skipped")
		z.failed = true
		return false, nil
	}
	if cap(z.rec) < size {
		z.rec = make([]byte, maxRecordSize)
	}
	rec := z.rec[:size]
	copy(rec, z.hdr[:])
	if _, err := io.ReadFull(z.dec, rec[recordHeaderSize:]); err != nil {
		z.active = false
		return false, nil
	}
	z.total += int64(size)
	if z.total > MaxDecompressed || z.total > MaxRatio*z.fed+maxRecordSize*16 {
		return false, rd.damaged(z.cur0, "compressed data expands to more than "+strconv.FormatInt(z.total, 10)+" bytes from "+strconv.FormatInt(z.fed, 10))
	}
	if idx > z.cur {
		z.held, z.heldIdx = rec, idx
		z.active = false
		return false, nil
	}
	return true, rd.compressedRecord(rec)
}

// compressedRecord applies one decompressed record.
func (rd *Reader) compressedRecord(rec []byte) error {
	rd.recs.add(rd.bo.Uint32(rec))
	return rd.record(rec, rd.z.cur0, true)
}

// rawAt returns the bytes of a payload location: from the file, or from
// the spill of decompressed samples for offsets past the end of the file.
func (rd *Reader) rawAt(l trace.Loc, buf []byte) ([]byte, error) {
	if l.Len < 0 || l.Off < 0 {
		return nil, &trace.FormatError{Format: "perf", Off: l.Off, Msg: "bad payload location"}
	}
	if l.Off >= rd.size {
		b := rd.zspill.at(l.Off-rd.size, int(l.Len), buf)
		if b == nil {
			return nil, &trace.FormatError{Format: "perf", Off: l.Off, Msg: "payload location outside the decompressed data"}
		}
		return b, nil
	}
	if b, ok, err := rd.cache.at(rd.r, rd.size, l.Off, int(l.Len)); ok {
		return b, err
	}
	if cap(buf) < int(l.Len) {
		buf = make([]byte, l.Len)
	}
	buf = buf[:l.Len]
	if _, err := rd.r.ReadAt(buf, l.Off); err != nil && !(err == io.EOF && int(l.Len) == 0) {
		return nil, err
	}
	return buf, nil
}
