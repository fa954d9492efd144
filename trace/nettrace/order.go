package nettrace

import (
	"slices"

	"viewer/trace"
)

// Ordering. Events are sorted per sequence-point region (§14). A region is
// read in file order into Reader.region while ascending runs are noted
// (runStarts: where an event is earlier than the one before). The runtime
// writes each thread's events in order into per-thread blocks, so the runs
// chain up into a few sorted sequences, about one per thread: each run is
// appended to the chain with the latest last event no later than the run's
// first. ReadEvent then pops the chains' heads from a small heap ordered by
// (time, position in the file), which gives exactly the order of a stable
// sort by time without copying the region.

// maxChains is the number of chains beyond which a region is sorted with
// slices.SortStableFunc instead (adversarial input).
const maxChains = 64

type span struct{ start, end int32 }

type chain struct {
	spans []span
	last  trace.Time
}

// cursor is a merge position: the next event of a chain.
type cursor struct {
	t     trace.Time // time of the event at pos
	pos   int32      // index into region
	end   int32      // end of the current span
	chain int32
	span  int32 // index of the current span in the chain
}

// order prepares r.region to be handed out in time order, stably: either
// it is sorted already, or it is sorted here, or r.heap is set up for pop.
func (r *Reader) order() {
	r.heap = r.heap[:0]
	if len(r.runStarts) == 0 {
		return
	}
	ev := r.region
	for i := range r.chains {
		r.chains[i].spans = r.chains[i].spans[:0]
	}
	chains := r.chains[:0]
	starts := append(r.runStarts, int32(len(ev)))
	r.runStarts = r.runStarts[:0]
	prev := int32(0)
	for _, end := range starts {
		s := span{prev, end}
		prev = end
		if s.start == s.end {
			continue
		}
		first, last := ev[s.start].Time, ev[s.end-1].Time
		best := -1
		for i := range chains {
			if chains[i].last <= first && (best < 0 || chains[i].last > chains[best].last) {
				best = i
			}
		}
		if best < 0 {
			if len(chains) == maxChains {
				slices.SortStableFunc(ev, byTime)
				r.chains = chains
				return
			}
			if len(chains) < cap(chains) {
				chains = chains[:len(chains)+1]
				chains[len(chains)-1].spans = chains[len(chains)-1].spans[:0]
			} else {
				chains = append(chains, chain{})
			}
			best = len(chains) - 1
		}
		chains[best].spans = append(chains[best].spans, s)
		chains[best].last = last
	}
	r.chains = chains
	h := r.heap
	for i, c := range chains {
		s := c.spans[0]
		h = append(h, cursor{t: ev[s.start].Time, pos: s.start, end: s.end, chain: int32(i)})
	}
	r.heap = h
	r.next = len(ev) // the region is handed out through pop
	if len(h) <= linearMerge {
		return // pop scans the few cursors instead of keeping a heap
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		r.down(i)
	}
}

// linearMerge is the number of chains up to which pop finds the earliest
// head by a scan, which is cheaper than a heap for a few chains.
const linearMerge = 8

func (c *cursor) before(d *cursor) bool {
	return c.t < d.t || c.t == d.t && c.pos < d.pos
}

func (r *Reader) down(i int) {
	h := r.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if k := l + 1; k < len(h) && h[k].before(&h[l]) {
			m = k
		}
		if !h[m].before(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pop returns the next event of a merge; r.heap must not be empty.
func (r *Reader) pop() trace.Event {
	h := r.heap
	top := 0
	if len(h) <= linearMerge {
		for i := 1; i < len(h); i++ {
			if h[i].before(&h[top]) {
				top = i
			}
		}
	}
	c := &h[top]
	e := r.region[c.pos]
	c.pos++
	if c.pos == c.end {
		sp := r.chains[c.chain].spans
		if c.span+1 == int32(len(sp)) {
			wasHeap := len(h) > linearMerge
			h[top] = h[len(h)-1]
			r.heap = h[:len(h)-1]
			if wasHeap { // at linearMerge chains or fewer the scan takes over
				r.down(0)
			}
			return e
		}
		c.span++
		c.pos, c.end = sp[c.span].start, sp[c.span].end
	}
	c.t = r.region[c.pos].Time
	if len(h) > linearMerge {
		r.down(0)
	}
	return e
}
