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
// appended to a chain whose last event is no later than the run's first.
// The chains are then merged with a small heap ordered by (time, position
// in the file), which gives exactly the order of a stable sort by time.

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
	pos   int32 // index into region
	end   int32 // end of the current span
	chain int32
	span  int32 // index of the current span in the chain
}

// order sorts r.region by time, stably.
func (r *Reader) order() {
	if len(r.runStarts) == 0 {
		return
	}
	ev := r.region
	chains := r.chains[:0]
	starts := append(r.runStarts, int32(len(ev)))
	prev := int32(0)
	for _, end := range starts {
		s := span{prev, end}
		prev = end
		if s.start == s.end {
			continue
		}
		first, last := ev[s.start].Time, ev[s.end-1].Time
		best := -1
		for i := range chains { // the chain with the latest tail that fits
			if chains[i].last <= first && (best < 0 || chains[i].last > chains[best].last) {
				best = i
			}
		}
		if best < 0 {
			if len(chains) == maxChains {
				slices.SortStableFunc(ev, byTime)
				r.runStarts = r.runStarts[:0]
				return
			}
			chains = append(chains, chain{spans: nil})
			best = len(chains) - 1
		}
		chains[best].spans = append(chains[best].spans, s)
		chains[best].last = last
	}
	r.chains = chains
	out := slices.Grow(r.spare[:0], len(ev))[:len(ev)]
	h := r.heap[:0]
	for i, c := range chains {
		h = append(h, cursor{pos: c.spans[0].start, end: c.spans[0].end, chain: int32(i)})
	}
	less := func(a, b cursor) bool {
		ta, tb := ev[a.pos].Time, ev[b.pos].Time
		return ta < tb || ta == tb && a.pos < b.pos
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				m = r
			}
			if !less(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for n := range out {
		c := &h[0]
		out[n] = ev[c.pos]
		c.pos++
		if c.pos == c.end {
			sp := chains[c.chain].spans
			if c.span+1 < int32(len(sp)) {
				c.span++
				c.pos, c.end = sp[c.span].start, sp[c.span].end
			} else {
				h[0] = h[len(h)-1]
				h = h[:len(h)-1]
			}
		}
		if len(h) > 0 {
			down(0)
		}
	}
	for i := range chains {
		chains[i].spans = chains[i].spans[:0]
	}
	r.heap = h[:0]
	r.spare, r.region = ev, out
	r.runStarts = r.runStarts[:0]
}
