package render

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"viewer/trace"
)

// A forward query whose conditions need spilled records (a field
// predicate, free text) decides a track's candidates a spill run at a
// time (query.decideRun) rather than one candidate at a time: one pass
// over the run's type codes, reading the run once, stepping over the
// records of types that cannot match many at a time (skipRecords) and
// decoding only the records of types that can, so a field predicate on
// one type costs a scan of the type column plus that type's records.
// The cursor then hands out the run's hits; the merge of the tracks in
// time order sees hits, not candidates.

// What decideRun does with the record of a type code.
const (
	actNone   = iota // nothing: the type cannot match, and shares no slot with one that needs its record
	actBreak         // the type cannot match, but shares a slot with one that needs its record
	actHeader        // decide the event by its time, track and type
	actRecord        // decode the record, then decide the event
)

// runHits is what a cursor has decided of its track: the matching
// indexes below end, in order, from k on not yet handed out.
type runHits struct {
	hits []int32
	k    int
	end  int // the first index not decided
	err  error
}

// skipRecords returns the index after the n records at b[i:]: after
// their 8n-th varint terminator (a byte below 0x80), counted eight bytes
// at a time.
func skipRecords(b []byte, i, n int) int {
	need := 8 * n
	if need == 0 {
		return i
	}
	for i+8 <= len(b) {
		m := ^binary.LittleEndian.Uint64(b[i:]) & 0x8080808080808080
		if c := bits.OnesCount64(m); c < need {
			need -= c
			i += 8
			continue
		}
		for ; need > 1; need-- {
			m &= m - 1
		}
		return i + bits.TrailingZeros64(m)/8 + 1
	}
	for ; i < len(b); i++ {
		if b[i] < 0x80 {
			if need--; need == 0 {
				return i + 1
			}
		}
	}
	return len(b) + 1 // damaged: decodeRecord will say so
}

// decideRun decides the candidates of track t (id tid) from index lo to
// the end of the spill run that holds lo, appending the matching indexes
// to hits. It returns the first index it did not decide: the run's end,
// or the candidate at which the budget ran out (err is then ErrBudget).
func (q *query) decideRun(t *track, tid trace.TrackID, lo int, hits []int32) ([]int32, int, error) {
	st := &t.spill
	k, ok := st.runOf(lo)
	if !ok {
		return hits, lo, fmt.Errorf("render: internal error: record %d of %d not in the spill file", lo, st.n)
	}
	n0 := len(hits)
	r := st.runs[k]
	first, end := r.first, st.n
	if k+1 < len(st.runs) {
		end = st.runs[k+1].first
	}
	var (
		data []byte
		pos  int // the byte offset of record at
		at   int
		sl   slotRecords
	)
	act := q.act
	for i := first; i < end; {
		ch := t.types.chunk(i >> chunkBits)[i&chunkMask:]
		ch = ch[:min(len(ch), end-i)]
		for j := 0; j < len(ch); j++ {
			code := ch[j]
			switch act[code] {
			case actNone:
				continue
			case actBreak:
				// A record based on its slot's last record must be of
				// that record's type: one of another type between them
				// makes the slot's next record start from zero.
				sl.code[code%nSlots] = code
				continue
			case actHeader: // decided by its time, track and type
				if i+j >= lo {
					e := trace.Event{Time: t.times.at(i + j), Track: tid, Type: trace.TypeID(code)}
					if q.m.Match(&e) {
						hits = append(hits, int32(i+j))
					}
				}
				sl.code[code%nSlots] = code
				continue
			}
			x := i + j // actRecord
			if x >= lo {
				if q.budget > 0 && q.reads >= q.budget {
					return hits, x, ErrBudget
				}
				q.reads++
			}
			if data == nil {
				if cap(q.buf) < int(r.size) {
					q.buf = make([]byte, r.size)
				}
				data = q.buf[:r.size]
				if _, err := q.x.spill.f.ReadAt(data, r.off); err != nil {
					return hits[:n0], lo, fmt.Errorf("render: reading the index spill file: %w", err)
				}
			}
			pos = skipRecords(data, pos, x-first-at)
			e := sl.base(code)
			var err error
			if pos, err = decodeRecord(&e, data, pos); err != nil {
				return hits[:n0], lo, err
			}
			at = x - first + 1
			sl.put(code, &e)
			if x < lo || code == typeEscape && !q.tf.admit(e.Type) {
				continue
			}
			e.Time, e.Track = t.times.at(x), tid
			if q.m.Match(&e) {
				hits = append(hits, int32(x))
			}
		}
		i += len(ch)
	}
	return hits, end, nil
}
