package clr

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// spans are the methods of a map that keeps ranges only (RangesOnly): in
// insertion order, in fixed chunks (no copy when they grow, no transient
// second copy), 16 bytes each. A trace of a million rundown entries
// (every method of a big process, listed at the start and at the end of
// the session) fits in 16 MB and is never sorted: CountResolved sorts the
// frames instead, which are few.
type spans struct {
	chunks [][]addrRange
	n      int
	// times are the validity of the spans not valid for the whole trace
	// (loads during the session, unloaded entries); addrRange.times-1 indexes
	// it.
	times [][2]trace.Time
}

type addrRange struct {
	start uint64
	size  uint32
	times uint32 // 0: valid from Always to MaxTime; else 1 + index in spans.times
}

// validity returns when sp is valid.
func (s *spans) validity(sp *addrRange) (loaded, unloaded trace.Time) {
	if sp.times == 0 {
		return Always, MaxTime
	}
	t := s.times[sp.times-1]
	return t[0], t[1]
}

const spanChunk = 4096

func (s *spans) add(start uint64, size uint32, loaded trace.Time) {
	sp := addrRange{start: start, size: size}
	if loaded != Always {
		s.times = append(s.times, [2]trace.Time{loaded, MaxTime})
		sp.times = uint32(len(s.times))
	}
	if k := len(s.chunks); k == 0 || len(s.chunks[k-1]) == spanChunk {
		s.chunks = append(s.chunks, make([]addrRange, 0, spanChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, sp)
	s.n++
}

// unload is MethodMap.Unload: the newest span starting at start that is
// valid at t ends at t.
func (s *spans) unload(t trace.Time, start uint64) {
	for k := len(s.chunks) - 1; k >= 0; k-- {
		c := s.chunks[k]
		for i := len(c) - 1; i >= 0; i-- {
			sp := &c[i]
			if sp.start != start {
				continue
			}
			if loaded, unloaded := s.validity(sp); unloaded == MaxTime && loaded <= t {
				if sp.times == 0 {
					s.times = append(s.times, [2]trace.Time{Always, t})
					sp.times = uint32(len(s.times))
				} else {
					s.times[sp.times-1][1] = t
				}
				return
			}
		}
	}
}

// covers reports whether a span holds addr at t: Resolve's ok, by a scan
// of every span (RangesOnly maps are for CountResolved).
func (s *spans) covers(t trace.Time, addr uint64) bool {
	for _, c := range s.chunks {
		for i := range c {
			sp := &c[i]
			if addr < sp.start || addr-sp.start >= uint64(sp.size) {
				continue
			}
			if loaded, unloaded := s.validity(sp); t >= loaded && t < unloaded {
				return true
			}
		}
	}
	return false
}

// FrameAt is a stack frame of a sample: its address and the sample's time.
type FrameAt struct {
	Time trace.Time
	Addr uint64
}

// CountResolved returns how many of frames Resolve would resolve. For a
// map that keeps ranges only it sorts the frames by address and lets each
// method mark the frames it holds: methods valid over the whole trace
// (rundown entries never unloaded) each mark a run of addresses, skipping
// the frames already marked, so that a million of them cost a binary
// search each; the others, which loads and unloads during the session
// make and which are few, go through a sorted map as Resolve does. frames
// is reordered.
func (m *MethodMap) CountResolved(frames []FrameAt) int64 {
	if m.ranges == nil {
		m.sort()
		var n int64
		for _, f := range frames {
			if _, ok := m.Resolve(f.Time, f.Addr); ok {
				n++
			}
		}
		return n
	}
	// No method holds anything at MaxTime (it is valid before its unload).
	frames = slices.DeleteFunc(frames, func(f FrameAt) bool { return f.Time == MaxTime })
	slices.SortFunc(frames, func(a, b FrameAt) int { return cmp.Compare(a.Addr, b.Addr) })
	// next[i] is the first unmarked frame at or after i (path-halved).
	next := make([]int32, len(frames)+1)
	for i := range next {
		next[i] = int32(i)
	}
	find := func(i int) int {
		for int(next[i]) != i {
			next[i] = next[next[i]]
			i = int(next[i])
		}
		return i
	}
	resolved := int64(0)
	timed := NewMethodMap()
	for _, c := range m.ranges.chunks {
		for i := range c {
			sp := &c[i]
			if sp.times != 0 {
				loaded, unloaded := m.ranges.validity(sp)
				timed.add(Method{Start: sp.start, Size: sp.size, Loaded: loaded, Unloaded: unloaded})
				continue
			}
			end := sp.start + uint64(sp.size)
			lo, _ := slices.BinarySearchFunc(frames, sp.start, func(f FrameAt, a uint64) int { return cmp.Compare(f.Addr, a) })
			for j := find(lo); j < len(frames) && frames[j].Addr < end; j = find(j) {
				next[j] = int32(j + 1)
				resolved++
			}
		}
	}
	if timed.Len() == 0 {
		return resolved
	}
	timed.sort()
	for j := find(0); j < len(frames); j = find(j + 1) {
		if _, ok := timed.Resolve(frames[j].Time, frames[j].Addr); ok {
			resolved++
		}
	}
	return resolved
}
