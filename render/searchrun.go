package render

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"viewer/trace"
)

// A forward query whose conditions need spilled records (a field
// predicate, free text) decides a track's candidates a spill run at a
// time (query.decideRun) rather than one candidate at a time: one pass
// over the run's type codes (four at a time, nextAction), the run's
// records read in place in the mapped spill file, each record wanted
// reached from its block (the run's block table, spill.go) by stepping
// over at most 15 others (skipRecords), and only the records of types
// that can match decoded, so a field predicate on one type costs a scan
// of the type column plus that type's records and the bytes around
// them. The cursor then hands out the run's hits; the merge of the
// tracks in time order sees hits, not candidates.

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
	found
	k   int
	end int // the first index not decided
	err error
}

// found is the hits of a run: their indexes and times (kept so that the
// merge does not go back to the track's time column for them).
type found struct {
	idx []int32
	tm  []trace.Time
}

func (f *found) add(i int, tm trace.Time) {
	f.idx = append(f.idx, int32(i))
	f.tm = append(f.tm, tm)
}

// cut keeps the first n hits.
func (f *found) cut(n int) { f.idx, f.tm = f.idx[:n], f.tm[:n] }

// decider decides runs for a query on one goroutine: the query's own,
// or a helper's (a Matcher is not safe for concurrent use).
type decider struct {
	q     *query
	m     *Matcher
	buf   []byte      // a run's records, when they are read with pread
	slots slotRecords // the run's records decoded last, per slot
}

// nextAction returns the first index from j of a code in ch whose action
// is not actNone, or len(ch): a scan of the type column that looks four
// codes at a time, as most codes of a selective query have nothing to do.
// When few codes have an action (few holds each repeated in four 16-bit
// lanes, see fewActions), four codes are compared with each at once, as
// the lanes of a uint64: a lane equal to the code is a zero lane of
// their exclusive or.
func nextAction(ch []uint16, j int, act *[typeEscape + 1]uint8, few []uint64) int {
	if len(few) > 0 && j+4 <= len(ch) {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&ch[0])), 2*len(ch))
		for ; j+4 <= len(ch); j += 4 {
			v := binary.NativeEndian.Uint64(b[2*j:])
			var z uint64
			for _, w := range few {
				x := v ^ w
				z |= (x - lanes) &^ x // a lane's top bit: that lane of x may be zero (it is, in the lowest such lane)
			}
			if z&(lanes<<15) != 0 {
				break
			}
		}
	} else {
		for ; j+4 <= len(ch); j += 4 {
			c := ch[j : j+4 : j+4]
			if act[c[0]]|act[c[1]]|act[c[2]]|act[c[3]] != 0 {
				break
			}
		}
	}
	for ; j < len(ch) && act[ch[j]] == actNone; j++ {
	}
	return j
}

// lanes is 1 in each 16-bit lane of a uint64.
const lanes = 0x0001_0001_0001_0001

// maxFew is the most codes with an action for which nextAction compares
// codes (more cost more than looking their actions up).
const maxFew = 2

// fewActions returns the codes whose action is not actNone, each
// repeated in the four lanes of a uint64, when there are at most maxFew
// of them; else nil.
func fewActions(act *[typeEscape + 1]uint8) []uint64 {
	var few []uint64
	for c, a := range act {
		if a != actNone {
			if len(few) == maxFew {
				return nil
			}
			few = append(few, uint64(c)*lanes)
		}
	}
	return few
}

// reserve takes up to n events of the query's budget (all n when it has
// none) and returns how many it took.
func (q *query) reserve(n int) int {
	if q.budget <= 0 {
		q.reads.Add(int64(n))
		return n
	}
	for {
		r := q.reads.Load()
		g := min(int64(n), q.budget-r)
		if g <= 0 {
			return 0
		}
		if q.reads.CompareAndSwap(r, r+g) {
			return int(g)
		}
	}
}

// decideRun decides the candidates of track t (id tid) from index lo to
// the end of the spill run that holds lo, adding the hits to out. It
// returns the first index it did not decide: the run's end, or the
// candidate at which the budget ran out (err is then ErrBudget).
func (d *decider) decideRun(t *track, tid trace.TrackID, lo int, out *found) (next int, err error) {
	q := d.q
	// The columns may be in the index's store mapping, which Close
	// unmaps once the spill's reads in progress have ended: the run is
	// one such read.
	if !q.x.spill.readers.enter() {
		return lo, ErrClosed
	}
	defer q.x.spill.readers.leave()
	st := &t.spill
	k, ok := st.runOf(lo)
	if !ok {
		return lo, fmt.Errorf("render: internal error: record %d of %d not in the spill file", lo, st.n)
	}
	n0 := len(out.idx)
	r := st.runs[k]
	first, end := r.first, st.n
	if k+1 < len(st.runs) {
		end = st.runs[k+1].first
	}
	// The budget is taken for every event of the run from lo on, and
	// what the run did not read is given back.
	allow := q.reserve(end - max(lo, first))
	used := 0
	var (
		data  []byte // the run's records (its block table cut off)
		table []byte // the run's block table
		held  bool   // data is in the spill's mapping, whose reader it holds
		pos   int    // the byte offset of record at
		at    int
	)
	sl := &d.slots
	sl.set = 0 // (base looks at no slot whose bit is clear)
	defer func() {
		q.reads.Add(int64(used - allow))
		if held {
			q.x.spill.readers.leave()
		}
	}()
	act := q.act
	for i := first; i < end; {
		ch := t.types.chunk(i >> chunkBits)[i&chunkMask:]
		ch = ch[:min(len(ch), end-i)]
		tms := t.times.chunk(i >> chunkBits)[i&chunkMask:] // the columns' chunks are alike
		if len(tms) < len(ch) {
			out.cut(n0)
			return lo, fmt.Errorf("render: internal error: track %d has %d times for %d types", tid, len(tms), len(ch))
		}
		for j := 0; j < len(ch); j++ {
			if j = nextAction(ch, j, act, q.few); j == len(ch) {
				break
			}
			code, tm := ch[j], tms[j] // (the time's load overlaps the decoding below)
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
					e := trace.Event{Time: tm, Track: tid, Type: trace.TypeID(code)}
					if d.m.Match(&e) {
						out.add(i+j, e.Time)
					}
				}
				sl.code[code%nSlots] = code
				continue
			}
			x := i + j // actRecord
			if x >= lo {
				if used == allow {
					return x, ErrBudget
				}
				used++
			}
			if data == nil {
				if data, held, err = d.records(r); err != nil {
					out.cut(n0)
					return lo, fmt.Errorf("render: reading the index spill file: %w", err)
				}
				var rend int
				if table, rend, err = blockTable(data, end-first); err != nil {
					out.cut(n0)
					return lo, err
				}
				data = data[:rend]
			}
			if b := (x - first) / spillBlock; b > at/spillBlock { // start from its block
				if pos, err = blockStart(table, b, len(data)); err != nil {
					out.cut(n0)
					return lo, err
				}
				at = b * spillBlock
			}
			pos = skipRecords(data, pos, x-first-at)
			e := sl.base(code)
			if pos, err = decodeRecord(&e, data, pos); err != nil {
				out.cut(n0)
				return lo, err
			}
			at = x - first + 1
			sl.put(code, &e)
			if x < lo || code == typeEscape && !q.tf.admit(e.Type) {
				continue
			}
			e.Time, e.Track = tm, tid
			if d.m.Match(&e) {
				out.add(x, e.Time)
			}
		}
		i += len(ch)
	}
	return end, nil
}

// jobEvents is about how many events of a track one job decides: runs
// are decided until they pass it, so that a rare type's search (few
// hits per run) hands fewer jobs between goroutines.
const jobEvents = 4 * runRecords

// decideRuns is decideRun over the runs from lo until jobEvents events
// are decided, the track ends or deciding stops.
func (d *decider) decideRuns(t *track, tid trace.TrackID, lo int, out *found) (next int, err error) {
	n := t.times.len()
	next = lo
	for next < n && next-lo < jobEvents {
		if next, err = d.decideRun(t, tid, next, out); err != nil {
			return next, err
		}
	}
	return next, nil
}

// records returns the bytes of run r: in place in the spill's mapping,
// holding its reader (held), or read into d.buf.
func (d *decider) records(r run) (data []byte, held bool, err error) {
	s := d.q.x.spill
	m, err := s.view()
	if err != nil {
		return nil, false, err
	}
	if m != nil {
		if data, err = runBytes(m, r); err != nil {
			s.readers.leave()
			return nil, false, err
		}
		return data, true, nil
	}
	if cap(d.buf) < int(r.size) {
		d.buf = make([]byte, r.size)
	}
	data = d.buf[:r.size]
	if _, err := s.f.ReadAt(data, r.off); err != nil {
		return nil, false, err
	}
	return data, false, nil
}

// helpers are the goroutines that decide the cursors' next runs while
// the merge hands out the hits of their current ones (on a machine of
// one core there are none). A cursor queues one job ahead; whichever of
// the merge and a helper takes the job first decides it, so the merge
// never waits for a job no helper has started.
type helpers struct {
	jobs chan *runJob
	quit chan struct{}
}

// runJob is the deciding of one run of a cursor's track.
type runJob struct {
	t     *track
	track trace.TrackID
	lo    int
	taken atomic.Bool
	done  sync.WaitGroup // done when a helper has decided it (no channel to allocate per run)
	out   found
	end   int
	err   error
}

// maxHelpers bounds the helper goroutines of one query.
const maxHelpers = 3

// maxQueued bounds the jobs queued for a query's helpers (a cursor
// whose job does not fit decides its next run itself).
const maxQueued = 1024

// startHelpers starts the helpers of a query whose cursors number n; it
// returns nil when there is one core.
func (q *query) startHelpers(ctx context.Context, n int) (*helpers, error) {
	k := min(runtime.GOMAXPROCS(0)-1, maxHelpers)
	if k <= 0 {
		return nil, nil
	}
	h := &helpers{jobs: make(chan *runJob, min(n, maxQueued)+1), quit: make(chan struct{})}
	for range k {
		m, err := NewMatcher(q.f, q.r)
		if err != nil {
			return nil, err
		}
		d := &decider{q: q, m: m}
		go func() {
			for {
				select {
				case j := <-h.jobs:
					select {
					case <-h.quit: // the scan ended: its jobs are moot
						return
					default:
					}
					if !j.taken.CompareAndSwap(false, true) {
						continue
					}
					if j.err = ctx.Err(); j.err == nil {
						j.end, j.err = d.decideRuns(j.t, j.track, j.lo, &j.out)
					}
					j.done.Done()
				case <-h.quit:
					return
				}
			}
		}()
	}
	return h, nil
}

// stop ends the helpers; a run they are deciding is left to finish.
func (h *helpers) stop() {
	if h != nil {
		close(h.quit)
	}
}

// decide decides the run at c.i: with the result of the job queued for
// it when a helper has taken that job, else here. Then it queues the
// next run for the helpers.
func (c *cursor) decide() {
	b := c.run
	var spare found // buffers for the next job
	j := c.ahead
	c.ahead = nil
	mine := true
	if j != nil {
		if !j.taken.CompareAndSwap(false, true) { // a helper has it
			j.done.Wait()
			mine = j.lo != c.i
		}
		if mine {
			spare = j.out
		} else {
			spare, b.found = b.found, j.out
			b.end, b.err = j.end, j.err
		}
	}
	if mine {
		b.cut(0)
		b.end, b.err = c.q.own.decideRuns(c.t, c.track, c.i, &b.found)
	}
	b.k = 0
	if c.help == nil || b.err != nil || b.end >= c.t.times.len() {
		return
	}
	spare.cut(0)
	nj := &runJob{t: c.t, track: c.track, lo: b.end, out: spare}
	nj.done.Add(1)
	select {
	case c.help.jobs <- nj:
		c.ahead = nj
	default: // the queue is full: decide it here when its turn comes
	}
}
