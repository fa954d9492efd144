package span

import (
	"cmp"
	"errors"
	"io"
	"slices"

	"viewer/trace"
)

// Builder collects what derivers derive. The zero Builder is not ready:
// use [NewBuilder].
type Builder struct {
	set    Set
	tracks map[Track]TrackID
	names  map[string]NameID
	first  trace.Time
	last   trace.Time
	seen   bool
	// Slices and samples are kept per track until Finish: growing one
	// slice of millions would copy it again and again, and most derivers
	// add a track's slices in start order, which Finish then need not
	// sort.
	per     []perTrack
	nslices int
	nsample int
}

type perTrack struct {
	// lastStart, lastDepth and unsorted lie beside the fields of slices
	// that adding a slice uses (Column): adding one reads and writes a
	// cache line or two of the track's.
	lastStart trace.Time // of the latest slice added
	lastDepth uint16
	unsorted  bool // slices were not added in (start, depth) order
	unsamp    bool // samples were not added in time order
	slices    Column
	samples   []Sample
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		set:    Set{Args: [][]trace.Field{nil}},
		tracks: map[Track]TrackID{},
		names:  map[string]NameID{},
	}
}

// See records that the trace reached time t; the driver of derivation
// calls it with the first event's time, and with the latest before a
// deriver on its goroutine is shown an event or finishes.
func (b *Builder) See(t trace.Time) {
	if !b.seen {
		b.first, b.seen = t, true
	}
	if t > b.last || b.last < b.first {
		b.last = t
	}
}

// First returns the time of the trace's first event (0 before any).
func (b *Builder) First() trace.Time { return b.first }

// Last returns the time of the latest event seen so far.
func (b *Builder) Last() trace.Time { return b.last }

// Track returns the id of a derived track, adding it on first use; -1
// when the Builder holds MaxTracks tracks already.
func (b *Builder) Track(t Track) TrackID {
	if id, ok := b.tracks[t]; ok {
		return id
	}
	if len(b.set.Tracks) >= MaxTracks {
		b.set.Dropped++
		return -1
	}
	id := TrackID(len(b.set.Tracks))
	b.set.Tracks = append(b.set.Tracks, t)
	b.per = append(b.per, perTrack{slices: Column{track: id}})
	b.tracks[t] = id
	return id
}

// Name returns the id of a slice name, adding it on first use.
func (b *Builder) Name(s string) NameID {
	if id, ok := b.names[s]; ok {
		return id
	}
	id := NameID(len(b.set.Names))
	b.set.Names = append(b.set.Names, s)
	b.names[s] = id
	return id
}

// Args stores an argument list and returns its id (NoArgs for an empty
// one). The Builder keeps f: the caller must not change it afterwards.
func (b *Builder) Args(f []trace.Field) ArgsID {
	if len(f) == 0 || len(b.set.Args) >= MaxSlices {
		return NoArgs
	}
	b.set.Args = append(b.set.Args, f)
	return ArgsID(len(b.set.Args) - 1)
}

// Add adds a slice. A slice on no track (a negative id, as Track returns
// past its limit) or past MaxSlices is counted as dropped; an end before
// the start is moved to the start; depth is capped at MaxDepth.
func (b *Builder) Add(s Slice) {
	if s.Track < 0 || int(s.Track) >= len(b.per) || b.nslices >= MaxSlices {
		b.set.Dropped++
		return
	}
	if s.End < s.Start {
		s.End = s.Start
	}
	s.Depth = min(s.Depth, MaxDepth)
	p := &b.per[s.Track]
	if p.slices.n > 0 && (s.Start < p.lastStart || s.Start == p.lastStart && s.Depth < p.lastDepth) {
		p.unsorted = true
	}
	p.lastStart, p.lastDepth = s.Start, s.Depth
	p.slices.push(s)
	b.nslices++
}

// Key stands for the attributes of a track's slices (all but their
// times: track, name, arguments, thread, depth, flags), looked up once
// by [Builder.Key] so that a deriver adding many slices that share them
// spares [Builder.Add]'s lookup of every slice's. The zero Key stands
// for none: a slice added with it is dropped.
type Key struct {
	track TrackID
	depth uint16
	k     uint32 // index into the track's column's attributes, + 1
}

// Key returns the Key of s's attributes (its times do not matter),
// adding them to its track's table of attributes if need be; the zero
// Key when s is on no track (as Add drops it).
func (b *Builder) Key(s Slice) Key {
	if s.Track < 0 || int(s.Track) >= len(b.per) {
		return Key{}
	}
	s.Depth = min(s.Depth, MaxDepth)
	return Key{track: s.Track, depth: s.Depth, k: b.per[s.Track].slices.attrKey(s) + 1}
}

// AddKeyed adds a slice from start to end with the attributes k stands
// for: what Add does with a Slice of those attributes and times.
func (b *Builder) AddKeyed(k Key, start, end trace.Time) {
	if k.k == 0 || b.nslices >= MaxSlices {
		b.set.Dropped++
		return
	}
	end = max(end, start)
	p := &b.per[k.track]
	if p.slices.n > 0 && (start < p.lastStart || start == p.lastStart && k.depth < p.lastDepth) {
		p.unsorted = true
	}
	p.lastStart, p.lastDepth = start, k.depth
	p.slices.pushKey(start, end, k.k-1)
	b.nslices++
}

// AddSample adds a counter sample.
func (b *Builder) AddSample(s Sample) {
	if s.Track < 0 || int(s.Track) >= len(b.per) || b.nsample >= MaxSlices {
		b.set.Dropped++
		return
	}
	p := &b.per[s.Track]
	if n := len(p.samples); n > 0 && s.Time < p.samples[n-1].Time {
		p.unsamp = true
	}
	p.samples = append(p.samples, s)
	b.nsample++
}

// Finish sorts what was built and returns it; the Builder must not be
// used afterwards.
func (b *Builder) Finish() *Set {
	s := &b.set
	s.slices = make([]Column, len(b.per))
	s.samples = make([][]Sample, len(b.per))
	s.nslices = b.nslices
	for i := range b.per {
		p := &b.per[i]
		p.slices.finish()
		if p.unsorted {
			p.slices.sort()
		}
		if p.unsamp {
			slices.SortStableFunc(p.samples, func(x, y Sample) int { return cmp.Compare(x.Time, y.Time) })
		}
		s.slices[i], s.samples[i] = p.slices, slices.Clip(p.samples)
		b.per[i] = perTrack{}
	}
	b.tracks, b.names, b.per = nil, nil, nil
	return s
}

// Derive reads r to its end, shows every event to d through a [Driver]
// and returns what it derived: the same Set render.Build keeps beside
// its index. Like render.Build, it keeps what was derived before a
// damaged part of the trace: err is the reader's error other than
// io.EOF, with the Set of the events before it.
func Derive(r trace.Reader, d Deriver) (*Set, error) {
	v := NewDriver(r, d)
	var err error
	evs := make([]trace.Event, 0, batchEvents)
	for err == nil {
		var e trace.Event
		if e, err = r.ReadEvent(); err == nil {
			evs = append(evs, e)
		}
		if len(evs) == cap(evs) || err != nil {
			v.ObserveEvents(evs)
			evs = evs[:0]
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return v.Finish(), err
}

// batchEvents is how many events Derive reads before it shows them to
// the Driver, as render.Build does.
const batchEvents = 4096

// Driver shows a trace's events to a Deriver as an index sees them:
// an event out of time order (readers promise order; a damaged trace
// can break it) is shown at the latest time before it, as render.Build
// indexes it, and an event whose track is not in the reader's tables is
// shown on trace.NoTrack. render.Build and [Derive] both drive
// derivation through it, so that `viewer spans` prints what the page's
// index holds.
//
// A Driver derives on other goroutines what [Split] derivers can: the
// notes of a batch of events are turned into slices there, batch after
// batch, while ObserveEvents notes the next batches (up to maxRunning
// batches ahead), so that deriving a trace whose busy event types only
// Split derivers want costs its reading goroutine little more than the
// notes, and a derivation that a busy machine delays holds the reading
// up only when it falls that far behind.
type Driver struct {
	r       trace.Reader
	d       Deriver
	b       *Builder
	seen    bool       // an event was shown
	last    trace.Time // the latest event's time (the Builder's Last only when told)
	clamped int64
	tracks  int // len(r.Meta().Tracks) when last asked: it only grows
	route   router
	splits  []Split // the Split derivers
	// batch holds the Split derivers as BatchSplits when all of them are
	// and none is behind Only (whose filter NoteEvents would not apply);
	// nil otherwise.
	batch []BatchSplit
	one   [1]trace.Event // an event ObserveEvents changed, noted alone
	// done receives the end of the newest derivation running on another
	// goroutine (nil when none runs): nil, or what it or one before it
	// panicked with. Each derivation starts when the one before it has
	// ended, so its end is theirs too.
	done chan any
	// slots holds a token per derivation running or waiting to run.
	slots    chan struct{}
	panicked any // a panic of those goroutines not raised yet
}

// maxRunning is how many batches' derivations may run or wait to run on
// other goroutines while the Driver's caller reads on.
const maxRunning = 16

// NewDriver returns a Driver showing r's events to d (nil: none, the
// Set is empty).
func NewDriver(r trace.Reader, d Deriver) *Driver {
	v := &Driver{r: r, d: d, b: NewBuilder(), route: newRouter(d), slots: make(chan struct{}, maxRunning)}
	batched := true
	for _, d := range v.route.ds {
		o, wrapped := d.(only)
		if wrapped {
			d = o.d
		}
		if s, ok := d.(Split); ok {
			v.splits = append(v.splits, s)
			bs, ok := d.(BatchSplit)
			batched = batched && ok && !wrapped
			v.batch = append(v.batch, bs)
		}
	}
	if !batched {
		v.batch = nil
	}
	return v
}

// Observe shows one event, read from the Driver's reader, to the
// deriver.
func (v *Driver) Observe(e trace.Event) { v.ObserveEvents([]trace.Event{e}) }

// ObserveEvents shows events, read in this order from the Driver's
// reader, to the deriver (as many calls of Observe do, in one call).
// Split derivers note the events they want, and derive from the notes on
// another goroutine after ObserveEvents returned, or on this one before
// an event some other deriver wants (once the other goroutines are done),
// so that every deriver sees the Builder as it would with Observe alone.
// A panic on another goroutine is raised by the first call of the Driver
// that finds it ended.
func (v *Driver) ObserveEvents(evs []trace.Event) {
	v.poll()
	v.raise()
	var noted bool
	if whole, ok := v.plain(evs); ok {
		// The common batch: one run, as each would note it.
		noted = whole
		v.last = evs[len(evs)-1].Time
		v.noteRun(evs)
	} else {
		noted = v.each(evs)
	}
	if !noted {
		return
	}
	if len(evs) == 1 {
		v.wait()
		v.raise()
		v.b.See(v.last)
		v.derive()
		return
	}
	fs := make([]func(*Builder), len(v.splits))
	for i, d := range v.splits {
		fs[i] = d.Take()
	}
	v.slots <- struct{}{} // waits while maxRunning derivations are behind
	prev, done := v.done, make(chan any, 1)
	v.done = done
	go func(b *Builder) {
		defer func() { <-v.slots }()
		if prev != nil {
			if p := <-prev; p != nil {
				done <- p // the Builder is not fit to go on
				return
			}
		}
		defer func() { done <- recover() }()
		for _, f := range fs {
			f(b)
		}
	}(v.b)
}

// plain reports whether evs can be noted as one run as they are (ok):
// the Driver notes runs (v.batch), has shown an event, and each of evs
// is at or after the one before it (and v.last), on trace.NoTrack or a
// track of the reader's tables, of a type only Split derivers are known
// to want or none; noted says some Split deriver wants one. It checks
// the common batch in one tight pass, sparing each's work per event.
func (v *Driver) plain(evs []trace.Event) (noted, ok bool) {
	if v.batch == nil || !v.seen || len(evs) == 0 {
		return false, false
	}
	last := v.last
	for i := range evs {
		p := &evs[i]
		if p.Time < last {
			return false, false
		}
		last = p.Time
		if tr := p.Track; tr != trace.NoTrack && (tr < 0 || int(tr) >= v.tracks) {
			if tr < 0 {
				return false, false
			}
			v.tracks = len(v.r.Meta().Tracks) // as each asks
			if int(tr) >= v.tracks {
				return false, false
			}
		}
		rt := v.route.known(p.Type)
		if rt == nil || rt.split == nil {
			return false, false
		}
		noted = noted || len(rt.split) > 0
	}
	return noted, true
}

// each shows evs to the derivers one by one, noting the runs of those
// only Split derivers want as runs, and reports whether it noted events
// that are not derived from yet.
func (v *Driver) each(evs []trace.Event) bool {
	noted := false
	// With v.batch, the events evs[run:i] are to be noted as one run:
	// those only Split derivers want (or none), shown as they are.
	run := 0
	for i := range evs {
		p := &evs[i]
		t, tr := p.Time, p.Track
		if v.seen && t < v.last {
			t = v.last
			v.clamped++
		}
		v.last = t
		if !v.seen {
			// The Builder learns the first time now, and the latest
			// before a deriver on this goroutine uses it: written per
			// event, it would share a cache line with what the
			// derivations on other goroutines write.
			v.seen = true
			v.b.See(t)
		}
		if int(tr) >= v.tracks {
			v.tracks = len(v.r.Meta().Tracks)
		}
		if tr < 0 || int(tr) >= v.tracks {
			tr = trace.NoTrack
		}
		rt := v.route.known(p.Type)
		if rt == nil {
			rt = v.route.ask(v.r, p.Type)
		}
		if rt.split != nil {
			noted = noted || len(rt.split) > 0
			switch {
			case v.batch == nil:
				e := *p
				e.Time, e.Track = t, tr
				for _, d := range rt.split {
					d.Note(v.r, e)
				}
			case t != p.Time || tr != p.Track:
				// Shown changed: the run ends before it, and it is
				// noted alone.
				v.noteRun(evs[run:i])
				v.one[0] = *p
				v.one[0].Time, v.one[0].Track = t, tr
				v.noteRun(v.one[:])
				run = i + 1
			}
			continue
		}
		v.noteRun(evs[run:i])
		run = i + 1
		e := *p
		e.Time, e.Track = t, tr
		if noted || v.done != nil {
			v.wait()
			v.raise()
			if noted {
				v.b.See(t)
				v.derive()
				noted = false
			}
		}
		v.b.See(t)
		for _, d := range rt.ds {
			d.Observe(v.r, e, v.b)
		}
	}
	v.noteRun(evs[run:])
	return noted
}

// noteRun shows a run of events to the BatchSplit derivers (v.batch).
func (v *Driver) noteRun(evs []trace.Event) {
	if len(evs) == 0 || v.batch == nil {
		return
	}
	for _, d := range v.batch {
		d.NoteEvents(v.r, evs)
	}
}

// derive derives from the notes taken so far, on the caller's goroutine.
func (v *Driver) derive() {
	for _, d := range v.splits {
		d.Take()(v.b)
	}
}

// wait waits for the derivations on other goroutines and keeps what they
// panicked with.
func (v *Driver) wait() {
	if v.done == nil {
		return
	}
	v.ended(<-v.done)
}

// poll is wait when the derivations have ended, else nothing.
func (v *Driver) poll() {
	if v.done == nil {
		return
	}
	select {
	case p := <-v.done:
		v.ended(p)
	default:
	}
}

func (v *Driver) ended(p any) {
	if p != nil && v.panicked == nil {
		v.panicked = p
	}
	v.done = nil
}

// raise raises a panic of the other goroutines on the caller's.
func (v *Driver) raise() {
	if p := v.panicked; p != nil {
		v.panicked = nil
		panic(p)
	}
}

// Clamped returns how many events Observe moved to a later time.
func (v *Driver) Clamped() int64 { return v.clamped }

// Finish ends derivation and returns the Set; the Driver must not be
// used afterwards.
func (v *Driver) Finish() *Set {
	v.wait()
	v.raise()
	if v.seen {
		v.b.See(v.last)
	}
	if v.d != nil {
		v.d.Finish(v.r, v.b)
	}
	return v.b.Finish()
}

// NameBytes is Name for a name held in bytes; it allocates only for a
// name not seen before.
func (b *Builder) NameBytes(s []byte) NameID {
	if id, ok := b.names[string(s)]; ok {
		return id
	}
	return b.Name(string(s))
}
