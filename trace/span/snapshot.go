package span

import (
	"cmp"
	"slices"
)

// Snapshot returns the slices and samples derived so far as a Set, while
// derivation goes on (render.Build publishes growing indexes of a trace
// still being read). It is cheap: a Column is append-only and never
// copied once a chunk is full, so the Set shares the slices' chunks and
// the tables and copies only their headers; a track whose slices or
// samples came out of order is copied and sorted. Slices a deriver still
// holds open (started, not ended) are not in it: derivers add a slice
// when it ends, or at Finish. The Set may be read from any goroutine
// while the Driver goes on; it must not be called concurrently with
// Observe. It waits for the derivation of the events observed so far.
func (v *Driver) Snapshot() *Set {
	v.wait() // a panic there is raised by the next Observe
	b := v.b
	s := &Set{
		Tracks:  slices.Clip(b.set.Tracks),
		Names:   slices.Clip(b.set.Names),
		Args:    slices.Clip(b.set.Args),
		Dropped: b.set.Dropped,
		slices:  make([]Column, len(b.per)),
		samples: make([][]Sample, len(b.per)),
		nslices: b.nslices,
	}
	for i := range b.per {
		p := &b.per[i]
		c := &p.slices
		sc := Column{chunks: slices.Clone(c.chunks), n: c.n, track: c.track, attrs: slices.Clip(c.attrs), longs: slices.Clip(c.longs),
			gapped: c.gapped, lastEnd: c.lastEnd}
		if p.unsorted {
			sc.sort() // into chunks of its own: the shared ones stay
		}
		s.slices[i] = sc
		sm := slices.Clip(p.samples)
		if p.unsamp {
			sm = slices.Clone(sm)
			slices.SortStableFunc(sm, func(x, y Sample) int { return cmp.Compare(x.Time, y.Time) })
		}
		s.samples[i] = sm
	}
	return s
}
