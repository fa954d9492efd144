package nettrace

import (
	"slices"

	"viewer/trace"
)

// Ordering. Events are sorted per sequence-point region (NOTES.md §ordering). A region is
// read in file order into Reader.region while ascending runs are noted
// (runStarts: where an event is earlier than the one before). The runtime
// writes each thread's events in order into per-thread blocks, so the runs
// chain up into a few sorted sequences, about one per thread: each run is
// appended to the chain with the latest last event no later than the run's
// first. ReadEvent then takes the chains' heads from a loser tree ordered
// by (time, position in the file): log2(chains) comparisons per event,
// which gives exactly the order of a stable sort by time without copying
// the region.

// maxChains is the number of chains beyond which a region is sorted with
// slices.SortStableFunc instead (adversarial input).
const maxChains = 64

// maxChains is a power of two: merge indexes its arrays with a mask
// instead of bounds checks (a uint constant cannot be negative).
const _ uint = -(maxChains & (maxChains - 1))

// merger is the state of a merge: the heads of k chains and a loser tree
// over them, in arrays so that masked indexes need no bounds checks.
type merger struct {
	heads [maxChains]cursor
	tree  [maxChains]int32 // tree[0]: the winner; tree[1:k]: losers
	k     int
}

type span struct{ start, end int32 }

type chain struct {
	spans []span
	last  trace.Time
}

// cursor is a merge position: the next event of a chain.
type cursor struct {
	t     trace.Time // time of the event at pos; maxTime when the chain is done
	pos   int32      // index into region; maxInt32 when the chain is done
	end   int32      // end of the current span
	chain int32
	span  int32 // index of the current span in the chain
}

const (
	maxTime  = trace.Time(1<<63 - 1)
	maxInt32 = 1<<31 - 1
)

// order prepares r.region to be handed out in time order, stably: either
// it is sorted already, or it is sorted here, or a merge is set up for pop
// (r.left > 0).
func (r *Reader) order() {
	r.left = 0
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
	if r.m == nil {
		r.m = new(merger)
	}
	m := r.m
	m.k = len(chains)
	for i, c := range chains {
		s := c.spans[0]
		m.heads[i] = cursor{t: ev[s.start].Time, pos: s.start, end: s.end, chain: int32(i)}
	}
	m.build()
	r.next = len(ev) // the region is handed out through pop
	r.left = len(ev)
}

// build sets up the loser tree over heads[:k]: leaf i is node k+i, node
// j's children are 2j and 2j+1, tree[j] (0 < j < k) holds the loser of
// the match played at j, and tree[0] the overall winner.
func (m *merger) build() {
	k := m.k
	var win [2 * maxChains]int32 // winners of the matches
	for i := range k {
		win[k+i] = int32(i)
	}
	for j := k - 1; j >= 1; j-- {
		a, b := win[2*j], win[2*j+1]
		if m.heads[b].before(&m.heads[a]) {
			a, b = b, a
		}
		win[j], m.tree[j] = a, b
	}
	m.tree[0] = 0
	if k > 1 {
		m.tree[0] = win[1]
	}
}

func (c *cursor) before(d *cursor) bool {
	return c.t < d.t || c.t == d.t && c.pos < d.pos
}

// pop returns the index in r.region of the next event of a merge; r.left
// must be > 0.
func (r *Reader) pop() int32 {
	const mask = maxChains - 1
	m := r.m
	w := m.tree[0]
	c := &m.heads[w&mask]
	i := c.pos
	c.pos++
	if c.pos == c.end {
		sp := r.chains[c.chain].spans
		if c.span+1 < int32(len(sp)) {
			c.span++
			c.pos, c.end = sp[c.span].start, sp[c.span].end
			c.t = r.region[c.pos].Time
		} else {
			c.t, c.pos = maxTime, maxInt32
		}
	} else {
		c.t = r.region[c.pos].Time
	}
	r.left--
	for j := (int(w) + m.k) >> 1; j >= 1; j >>= 1 {
		if l := m.tree[j&mask]; m.heads[l&mask].before(c) {
			m.tree[j&mask], w = w, l
			c = &m.heads[w&mask]
		}
	}
	m.tree[0] = w
	return i
}
