package render

import (
	"context"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"viewer/trace"
)

// Filter selects events for [Index.Search]. Its conditions all apply; an
// empty Filter matches every event.
type Filter struct {
	Types  []trace.TypeID  // the event's type is one of these; empty: any type
	Name   string          // case-insensitive substring of the type's "provider/name" (or name); empty: any
	Where  []Predicate     // conditions on decoded fields, all must hold
	Tracks []trace.TrackID // the event is on one of these tracks; empty: any track
	Expr   Expr            // a condition of and, or, not (package render/query parses it)
	// Budget bounds the events whose payload or spilled header a query
	// reads to decide them; past it the query ends with [ErrBudget]. 0:
	// no bound (the context's deadline still holds).
	Budget int64
}

// Op is a comparison of a [Predicate]; the comments give its spelling in
// a search query.
type Op uint8

const (
	OpBad      Op = iota
	OpEq          // =
	OpNe          // !=
	OpLt          // <
	OpLe          // <=
	OpGt          // >
	OpGe          // >=
	OpContains    // ~ (case-insensitive substring of the value's text)
	OpMatch       // ~ /re/ (the value is an RE2 regular expression, matched case-insensitively)
)

// Predicate is a condition `field op value` on an event's decoded payload
// (package render/query parses it from a search query). Field names a
// payload field; members of structs are reached with dots ("Request.Size");
// "label" names the event's one-line label when no field has that name. Numbers compare as numbers when both sides are numeric,
// everything else compares as text.
type Predicate struct {
	Field string
	Op    Op
	Value string
}

// Match reports whether decoded details satisfy p.
func (p Predicate) Match(d trace.Details) bool {
	v, ok := lookup(d.Fields, p.Field)
	if !ok {
		if p.Field != "label" {
			return false
		}
		v = trace.StringValue(d.Label)
	}
	if p.Op == OpContains {
		return strings.Contains(strings.ToLower(v.String()), strings.ToLower(p.Value))
	}
	if p.Op == OpMatch {
		re, err := CompileRegexp(p.Value)
		return err == nil && re.MatchString(v.String())
	}
	c, ok := compareNumber(v, p.Value)
	if !ok {
		c = strings.Compare(v.String(), p.Value)
	}
	return opHolds(p.Op, c)
}

func lookup(fields []trace.Field, path string) (trace.Value, bool) {
	for {
		name, rest, more := strings.Cut(path, ".")
		var v trace.Value
		found := false
		for _, f := range fields {
			if f.Name == name {
				v, found = f.Value, true
				break
			}
		}
		if !found {
			return trace.Value{}, false
		}
		if !more {
			return v, true
		}
		fields, path = v.Fields(), rest
	}
}

// compareNumber compares a numeric value with text that parses as a number
// of a compatible kind; ok is false when either side is not numeric.
func compareNumber(v trace.Value, s string) (c int, ok bool) {
	switch v.Kind() {
	case trace.KindInt:
		if n, err := strconv.ParseInt(s, 0, 64); err == nil {
			return cmpOrdered(v.Int(), n), true
		}
	case trace.KindUint, trace.KindHex:
		if n, err := strconv.ParseUint(s, 0, 64); err == nil {
			return cmpOrdered(v.Uint(), n), true
		}
		if strings.HasPrefix(s, "-") {
			if _, err := strconv.ParseInt(s, 0, 64); err == nil {
				return 1, true // any unsigned value is above a negative one
			}
		}
	}
	f, ok := v.Number()
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsNaN(g) {
		return 0, false
	}
	return cmpOrdered(f, g), true
}

func cmpOrdered[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Position is a place in the total order of a trace's events: by time,
// then track id, then index in the track.
type Position struct {
	Time trace.Time
	ID   EventID
}

// At returns the position just before every event at time t.
func At(t trace.Time) Position {
	return Position{Time: t, ID: EventID{Track: math.MinInt32, Index: -1}}
}

// PositionOf returns the position of an event.
func (x *Index) PositionOf(id EventID) (Position, bool) {
	t := x.track(id.Track)
	if t == nil || id.Index < 0 || int(id.Index) >= t.times.len() {
		return Position{}, false
	}
	return Position{Time: t.times.at(int(id.Index)), ID: id}, true
}

func (p Position) less(q Position) bool {
	if p.Time != q.Time {
		return p.Time < q.Time
	}
	if p.ID.Track != q.ID.Track {
		return p.ID.Track < q.ID.Track
	}
	return p.ID.Index < q.ID.Index
}

// Search returns the first event after from (backward: the last event
// before from) that matches f, in the order of [Position]. ok is false
// when no event matches. It is the first of [Index.Hits].
func (x *Index) Search(ctx context.Context, f Filter, from Position, backward bool) (id EventID, ok bool, err error) {
	for pos, err := range x.Hits(ctx, f, from, backward) {
		if err != nil {
			return EventID{}, false, err
		}
		return pos.ID, true, nil
	}
	return EventID{}, false, nil
}

// Hits returns the events after from (backward: before from, latest
// first) that match f, in the order of [Position], as one resumable scan:
// the filter is compiled once ([Matcher]) and every track's cursor stays
// where the previous hit left it, so n hits cost what the scan passes
// over, not n searches. Conditions on the type are decided once per type
// and checked on the resident type column; track and time conditions on
// the resident index; the rest reads the event's spilled header and
// decodes what its predicates name, one candidate at a time, in order, so
// a search costs what it scans, never the whole trace in memory. The scan
// checks ctx as it goes; an error (the context's, [ErrClosed] once the
// index is closed, [ErrBudget] when f.Budget ran out, a bad regular
// expression, or reading the spill file) is yielded once, with a zero
// Position, and ends the sequence. Stop early by breaking out of the
// range loop.
func (x *Index) Hits(ctx context.Context, f Filter, from Position, backward bool) iter.Seq2[Position, error] {
	return func(yield func(Position, error) bool) {
		// The scan reads the columns, which may be in the index's store
		// mapping that Close unmaps once the spill's reads in progress
		// end: it is such a read, except while the caller has a hit (a
		// paused search never keeps Close waiting).
		held := x.spill.readers.enter()
		defer func() {
			if held {
				x.spill.readers.leave()
			}
		}()
		emit := func(p Position, err error) bool {
			x.spill.readers.leave()
			if held = false; !yield(p, err) {
				return false
			}
			if held = x.spill.readers.enter(); !held {
				yield(Position{}, ErrClosed)
			}
			return held
		}
		if !held {
			yield(Position{}, ErrClosed)
			return
		}
		q, err := x.newQuery(f)
		if err != nil {
			emit(Position{}, err)
			return
		}
		if q == nil {
			return
		}
		tracks := x.Tracks()
		if len(f.Tracks) > 0 {
			tracks = slices.Compact(slices.Sorted(slices.Values(f.Tracks))) // one cursor per track
		}
		shared := &runReader{s: x.spill}
		h := &cursors{backward: backward}
		var help *helpers
		if q.spill && !backward && len(tracks) > 0 {
			if help, err = q.startHelpers(ctx, len(tracks)); err != nil {
				emit(Position{}, err)
				return
			}
			defer help.stop()
		}
		for _, tid := range tracks {
			t := x.track(tid)
			if t == nil || t.times.len() == 0 {
				continue
			}
			c := cursor{t: t, track: tid, want: &q.tf, rr: shared}
			if q.spill && !backward {
				c.q, c.run, c.help = q, &runHits{}, help
			}
			if len(tracks) <= maxOwnRuns {
				c.rr = &runReader{s: x.spill} // consecutive candidates of a track share a run
			}
			c.i = c.startIndex(from, backward)
			if c.advance(ctx, x, backward, false) {
				h.items = append(h.items, &c)
			}
			if err := ctx.Err(); err != nil {
				emit(Position{}, err)
				return
			}
		}
		h.init()
		for scanned := 0; h.Len() > 0; scanned++ {
			if scanned&1023 == 0 {
				if err := ctx.Err(); err != nil {
					emit(Position{}, err)
					return
				}
			}
			c := h.items[0]
			id := EventID{Track: c.track, Index: int32(c.i)}
			var match bool
			var err error
			if c.run != nil { // c.i is a hit, or where deciding stopped
				match, err = c.run.err == nil || c.i < c.run.end, c.run.err
				if match {
					err = nil
				}
			} else {
				match, err = q.check(c.rr, id, c.tm)
			}
			if err != nil {
				emit(Position{}, err)
				return
			}
			if match && !emit(Position{Time: c.tm, ID: id}, nil) {
				return
			}
			if c.advance(ctx, x, backward, true) {
				h.down(0)
				continue
			}
			if err := ctx.Err(); err != nil { // advance gave up early
				emit(Position{}, err)
				return
			}
			h.pop()
		}
	}
}

// maxOwnRuns is the most tracks whose cursors each keep a spill run of
// their own (about 50 KiB each); more share one.
const maxOwnRuns = 256

// typeFilter is the type conditions of a Filter: admit decides a type
// id, mask the 16-bit codes of the resident type column (code typeEscape
// stands for every type ≥ 65535 and every id the table does not
// describe, which admit then decides from the spilled record).
type typeFilter struct {
	admit func(trace.TypeID) bool
	mask  []bool
}

// query is a Filter compiled for an Index.
type query struct {
	x      *Index
	m      *Matcher
	tf     typeFilter
	budget int64
	reads  atomic.Int64 // events read to decide them, of every goroutine
	// need says, by type code, which admitted events need their spilled
	// record to be decided; spill is whether any does (decideRun).
	need  []bool
	spill bool
	act   *[typeEscape + 1]uint8 // decideRun's action by type code (actNone...)
	few   []uint64               // the codes with an action, when few (fewActions)
	// own decides runs on the query's goroutine, with m.
	own decider
	f   Filter
	r   trace.Reader // what m reads (the helpers' matchers read it too)
}

// newQuery compiles f; it returns nil when no event can match.
func (x *Index) newQuery(f Filter) (*query, error) {
	r, rerr := x.reader()
	if rerr != nil {
		r = metaReader{x.meta} // decides what needs no payload; see below
	}
	m, err := NewMatcher(f, r)
	if err != nil {
		return nil, err
	}
	q := &query{x: x, m: m, budget: f.Budget, f: f, r: r}
	q.own = decider{q: q, m: m}
	q.tf.admit = m.TypeCan
	q.tf.mask = make([]bool, typeEscape+1)
	q.need = make([]bool, typeEscape+1)
	any := false
	for id := range x.meta.Types {
		if m.TypeCan(trace.TypeID(id)) {
			c := min(id, typeEscape)
			q.tf.mask[c], any = true, true
			q.need[c] = c == typeEscape || m.needsSpill(trace.TypeID(id))
		}
	}
	if m.TypeCan(-1) { // the plan of every type the table does not describe
		q.tf.mask[typeEscape], any = true, true
	}
	if rerr != nil {
		// Without the reader, only filters decided by the resident
		// columns (type names and ids, tracks) can be answered.
		for id := range x.meta.Types {
			if m.TypeCan(trace.TypeID(id)) && m.needsSpill(trace.TypeID(id)) {
				return nil, rerr
			}
		}
		if m.TypeCan(-1) && m.needsSpill(-1) {
			return nil, rerr
		}
	}
	if !any {
		return nil, nil
	}
	if q.tf.mask[typeEscape] {
		q.need[typeEscape] = true // the record says the type
	}
	q.spill = slices.Contains(q.need, true)
	if q.spill {
		q.act = new([typeEscape + 1]uint8)
		var slots [nSlots]bool // the slots of the types whose record is needed
		for c, need := range q.need {
			if need {
				slots[c%nSlots] = true
			}
		}
		for c := range q.act {
			switch {
			case q.need[c]:
				q.act[c] = actRecord
			case q.tf.mask[c]:
				q.act[c] = actHeader
			case slots[c%nSlots]:
				q.act[c] = actBreak
			}
		}
		q.few = fewActions(q.act)
	}
	return q, nil
}

// check decides the conditions the resident type column cannot: the
// real type of escaped types, tracks, times and predicates.
func (q *query) check(rr *runReader, id EventID, tm trace.Time) (bool, error) {
	t := q.x.track(id.Track)
	code := t.types.at(int(id.Index))
	if code != typeEscape && !q.m.needsSpill(trace.TypeID(code)) {
		e := trace.Event{Time: tm, Track: id.Track, Type: trace.TypeID(code)}
		return q.m.Match(&e), nil
	}
	if q.budget > 0 && q.reads.Load() >= q.budget {
		return false, ErrBudget
	}
	q.reads.Add(1)
	e, err := rr.event(t, int(id.Index))
	if err != nil {
		return false, err
	}
	e.Time, e.Track = tm, id.Track
	return q.m.Match(&e), nil
}

// cursor walks one track's events that pass the resident filters, or,
// when run is not nil, the track's hits as decideRun finds them.
type cursor struct {
	t     *track
	track trace.TrackID
	i     int
	tm    trace.Time // the time of event i
	want  *typeFilter
	rr    *runReader
	q     *query
	run   *runHits
	help  *helpers // nil: no helper goroutines
	ahead *runJob  // the next run, queued for the helpers
}

// startIndex returns the first index after from (backward: the last
// before it) on the cursor's track.
func (c *cursor) startIndex(from Position, backward bool) int {
	lo := c.t.lowerBound(from.Time, 0) // first with time ≥ from.Time
	hi := lo                           // first with time > from.Time
	if from.Time < MaxTime {
		hi = c.t.lowerBound(from.Time+1, lo)
	}
	switch {
	case c.track < from.ID.Track:
		if backward {
			return hi - 1
		}
		return hi
	case c.track > from.ID.Track:
		if backward {
			return lo - 1
		}
		return lo
	}
	if backward {
		return min(hi, int(from.ID.Index)) - 1
	}
	return max(lo, int(from.ID.Index)+1)
}

// advance moves to the next admitted event from c.i (past c.i when step);
// it returns false at the end of the track.
func (c *cursor) advance(ctx context.Context, x *Index, backward, step bool) bool {
	d := 1
	if backward {
		d = -1
	}
	if step {
		c.i += d
	}
	if c.run != nil {
		return c.nextHit(ctx)
	}
	n := c.t.times.len()
	if !backward { // a chunk at a time: the common case, and a hot loop
		for k := 0; c.i >= 0 && c.i < n; k++ {
			if k&15 == 15 && ctx.Err() != nil {
				return false
			}
			ch := c.t.types.chunk(c.i >> chunkBits)
			j := c.i & chunkMask
			for j < len(ch) && !c.want.mask[ch[j]] {
				j++
			}
			c.i += j - c.i&chunkMask
			if j == len(ch) {
				continue
			}
			if ch[j] != typeEscape || c.admitEscaped(x) {
				c.tm = c.t.times.at(c.i)
				return true
			}
			c.i++
		}
		return false
	}
	for k := 0; c.i >= 0 && c.i < n; k++ {
		if k&0xffff == 0xffff && ctx.Err() != nil {
			return false
		}
		ty := c.t.types.at(c.i)
		if c.want.mask[ty] && (ty != typeEscape || c.admitEscaped(x)) {
			c.tm = c.t.times.at(c.i)
			return true
		}
		c.i += d
	}
	return false
}

// nextHit moves to the first hit from c.i, deciding the track's runs
// as it goes. When deciding stops (the budget ran out, the context ended,
// a read failed) it stays at the first event not decided, with the
// error in c.run.err, and returns true: the merge yields the error when
// that event's turn comes, after every hit before it.
func (c *cursor) nextHit(ctx context.Context) bool {
	b := c.run
	n := c.t.times.len()
	for c.i < n {
		for b.k < len(b.idx) && int(b.idx[b.k]) < c.i {
			b.k++
		}
		switch {
		case b.k < len(b.idx):
			c.i, c.tm = int(b.idx[b.k]), b.tm[b.k]
			return true
		case c.i < b.end:
			c.i = b.end
			continue
		case b.err == nil:
			if b.err = ctx.Err(); b.err == nil {
				c.decide()
				continue
			}
			b.end = c.i
		}
		c.tm = c.t.times.at(c.i)
		return true
	}
	return false
}

// admitEscaped decides an event of the type column's escape code from its
// spilled record.
func (c *cursor) admitEscaped(x *Index) bool {
	e, err := x.event(c.rr, EventID{Track: c.track, Index: int32(c.i)})
	return err == nil && c.want.admit(e.Type)
}

// cursors is a min-heap of cursors by the position of their event
// (max-heap when backward), of pointers so that a sift moves 8 bytes.
type cursors struct {
	items    []*cursor
	backward bool
}

func (h *cursors) Len() int { return len(h.items) }

// less orders a before b: by time, then track, then index (reversed
// when backward).
func (h *cursors) less(a, b *cursor) bool {
	if h.backward {
		a, b = b, a
	}
	if a.tm != b.tm {
		return a.tm < b.tm
	}
	if a.track != b.track {
		return a.track < b.track
	}
	return a.i < b.i
}

// init orders the heap.
func (h *cursors) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// down moves item i down to its place.
func (h *cursors) down(i int) {
	items := h.items
	n := len(items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(items[r], items[l]) {
			m = r
		}
		if !h.less(items[m], items[i]) {
			return
		}
		items[i], items[m] = items[m], items[i]
		i = m
	}
}

// pop removes the first item.
func (h *cursors) pop() {
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	if n > 0 {
		h.down(0)
	}
}
