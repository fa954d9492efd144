// Package compare compares two traces, or two time ranges of one, as a
// table of what changed: per event type and per track the event count and
// rate, per derived track and per slice name the slice durations, per
// event type the numeric fields, each measure with its absolute and
// relative delta, ranked by how significant the change is. `viewer diff`
// prints it; a compare page can draw it.
//
// # Significance
//
// A row's Score is its delta in units of the noise expected of it, so
// that rows of different measures and sizes rank on one scale:
//
//   - counts and rates: events are taken as Poisson arrivals; the rates
//     λ = n/seconds of each side's range differ by
//     |λB − λA| / √(nA/sA² + nB/sB²) standard deviations (for ranges of
//     equal length, |nB − nA| / √(nA + nB));
//   - means, percentiles, minima and maxima of durations and field values:
//     the delta over the standard error of the difference of the means,
//     √(varA/nA + varB/nB) (sample variances). For a percentile or an
//     extreme this is a yardstick, not a test: it scales the change by
//     how much the values spread. A side with a single value borrows
//     the other side's variance; with a single value on both sides no
//     noise can be estimated and the score is the change relative to
//     the larger value (at most 2). When neither side's values vary the
//     standard error is taken as 10⁻⁹ of the larger value, so a change
//     between two constant samples of two values or more scores about 10⁹.
//
// A numeric field that names an identifier (its name ends in Id or ID),
// or whose values rise with time on both sides (nine steps in ten or
// more: a sequence number such as GC/Start's Count), changes with the
// range compared, not with the behaviour: its rows are listed with score
// 0.
//
// Rows rank by score, highest first; ties (unchanged rows score 0) by
// kind, key and measure, so the output order is deterministic. A row
// whose subject exists on one side only is compared with 0 for the
// counts; its value measures are left out (there is nothing to compare).
package compare

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/span"
)

// Side is one side of a comparison: an index and the time range
// [From, To) of it that is compared.
type Side struct {
	X        *render.Index
	From, To trace.Time
}

// Whole returns the side of x's whole time span.
func Whole(x *render.Index) Side {
	first, last := x.Span()
	return Side{X: x, From: first, To: last + 1}
}

// seconds returns the length of the side's range in seconds (at least a
// nanosecond).
func (s Side) seconds() float64 { return float64(max(int64(s.To)-int64(s.From), 1)) / 1e9 }

// Kind says what a row is about. The set may grow.
type Kind uint8

const (
	KindType   Kind = iota + 1 // an event type ("provider/name")
	KindTrack                  // a track, by name
	KindSlices                 // a derived track ("thread/syscalls", "CPU 0"): its slices' durations
	KindSlice                  // the slices of one name on any derived track
	KindField                  // a numeric field of an event type ("type.field")
)

var kindNames = [...]string{"", "type", "track", "slices", "slice", "field"}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Measure is what a row measures. The set may grow.
type Measure uint8

const (
	Count Measure = iota + 1 // events or slices in the range
	Rate                     // per second of the range
	Mean                     // of slice durations (ns) or field values
	P50                      // median (nearest rank)
	P99                      // 99th percentile (nearest rank)
	Min
	Max
)

var measureNames = [...]string{"", "count", "rate", "mean", "p50", "p99", "min", "max"}

func (m Measure) String() string {
	if m > 0 && int(m) < len(measureNames) {
		return measureNames[m]
	}
	return "Measure(" + strconv.Itoa(int(m)) + ")"
}

// ParseMeasure returns the measure of a name String gives.
func ParseMeasure(s string) (Measure, bool) {
	i := slices.Index(measureNames[:], s)
	return Measure(i), i > 0
}

// Row is one measure of one subject on both sides.
type Row struct {
	Kind    Kind
	Key     string
	Measure Measure
	A, B    float64
	Delta   float64 // B − A
	// Rel is Delta / |A|: 0 when both are 0, ±Inf when only A is.
	Rel   float64
	Score float64 // see the package documentation
}

// Table is a comparison.
type Table struct {
	Rows []Row
	// SecondsA and SecondsB are the lengths of the compared ranges.
	SecondsA, SecondsB float64
}

// Options tune Compare.
type Options struct {
	// NoFields leaves out the numeric field rows, which decode every
	// event of the ranges (the other rows read only the index).
	NoFields bool
}

// Compare compares side b against side a.
func Compare(ctx context.Context, a, b Side, o Options) (Table, error) {
	var sums [2]*summary
	for i, s := range []Side{a, b} {
		sm, err := summarize(ctx, s, o)
		if err != nil {
			return Table{}, err
		}
		sums[i] = sm
	}
	t := Table{SecondsA: a.seconds(), SecondsB: b.seconds()}
	sa, sb := sums[0], sums[1]
	counts := func(k Kind, ca, cb map[string]int64, rate bool) {
		for _, key := range unionKeys(ca, cb) {
			na, nb := ca[key], cb[key]
			z := poisson(float64(na), float64(nb), t.SecondsA, t.SecondsB)
			t.Rows = append(t.Rows, newRow(k, key, Count, float64(na), float64(nb), z))
			if rate {
				t.Rows = append(t.Rows, newRow(k, key, Rate, float64(na)/t.SecondsA, float64(nb)/t.SecondsB, z))
			}
		}
	}
	counts(KindType, sa.types, sb.types, true)
	counts(KindTrack, sa.tracks, sb.tracks, true)
	values := func(k Kind, va, vb map[string]*values, withCount bool) {
		for _, key := range unionKeys(va, vb) {
			x, y := va[key], vb[key]
			if withCount {
				var na, nb int64
				if x != nil {
					na = x.n
				}
				if y != nil {
					nb = y.n
				}
				t.Rows = append(t.Rows, newRow(k, key, Count, float64(na), float64(nb), poisson(float64(na), float64(nb), t.SecondsA, t.SecondsB)))
			}
			if x == nil || y == nil || x.n == 0 || y.n == 0 {
				continue
			}
			se := stdErr(x, y)
			pct := x.sorted() && y.sorted()
			// A field that rises with time on both sides is an id or a
			// sequence number: its values move with the range, not with
			// what changed, so its rows are listed but not ranked.
			ordinal := k == KindField && (x.rising() && y.rising() || identifier(key))
			for _, m := range []Measure{Mean, P50, P99, Min, Max} {
				if !pct && (m == P50 || m == P99) {
					continue
				}
				p, q := x.measure(m), y.measure(m)
				score := spread(p, q, se)
				if ordinal {
					score = 0
				}
				t.Rows = append(t.Rows, newRow(k, key, m, p, q, score))
			}
		}
	}
	values(KindSlices, sa.slices, sb.slices, true)
	values(KindSlice, sa.names, sb.names, true)
	values(KindField, sa.fields, sb.fields, false)
	slices.SortStableFunc(t.Rows, func(p, q Row) int {
		if c := cmp.Compare(q.Score, p.Score); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(p.Kind, q.Kind), cmp.Compare(p.Key, q.Key), cmp.Compare(p.Measure, q.Measure))
	})
	return t, nil
}

func newRow(k Kind, key string, m Measure, a, b, score float64) Row {
	r := Row{Kind: k, Key: key, Measure: m, A: a, B: b, Delta: b - a, Score: score}
	switch {
	case r.Delta == 0:
	case a == 0:
		r.Rel = math.Inf(int(math.Copysign(1, r.Delta)))
	default:
		r.Rel = r.Delta / math.Abs(a)
	}
	return r
}

// poisson scores the change of rate between na events in sa seconds and
// nb in sb.
func poisson(na, nb, sa, sb float64) float64 {
	if na == 0 && nb == 0 {
		return 0
	}
	return math.Abs(nb/sb-na/sa) / math.Sqrt(na/(sa*sa)+nb/(sb*sb))
}

// stdErr returns the standard error of the difference of the means of
// x and y: √(varA/nA + varB/nB). A side with one value borrows the other
// side's variance; with one value on both sides it returns −1: no noise
// can be estimated.
func stdErr(x, y *values) float64 {
	vx, vy := x.variance(), y.variance()
	switch {
	case x.n < 2 && y.n < 2:
		return -1
	case x.n < 2:
		vx = vy
	case y.n < 2:
		vy = vx
	}
	return math.Sqrt(vx/float64(x.n) + vy/float64(y.n))
}

// spread scores the change from a to b against the standard error se,
// floored at 10⁻⁹ of the larger value.
func spread(a, b, se float64) float64 {
	d := math.Abs(b - a)
	if d == 0 {
		return 0
	}
	if se < 0 { // one value a side: the change relative to the larger
		return d / max(math.Abs(a), math.Abs(b))
	}
	return d / max(se, 1e-9*max(math.Abs(a), math.Abs(b)), math.SmallestNonzeroFloat64)
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// values are the values of one measured subject: running moments, and
// the values themselves for the percentiles up to maxKept of them.
type values struct {
	n         int64
	mean, m2  float64 // Welford's running mean and sum of squared deviations
	min, max  float64
	last      float64 // the value added last
	rises     int64   // values greater than the one added before
	kept      []float64
	overflown bool
	done      bool // kept is sorted
}

// maxKept bounds the values a subject keeps for its percentiles (8
// bytes each); past it the percentiles are left out.
const maxKept = 1 << 22

func (v *values) add(x float64) {
	v.n++
	if v.n == 1 {
		v.min, v.max = x, x
	} else if x > v.last {
		v.rises++
	}
	v.last = x
	v.min, v.max = min(v.min, x), max(v.max, x)
	d := x - v.mean
	v.mean += d / float64(v.n)
	v.m2 += d * (x - v.mean)
	if len(v.kept) < maxKept {
		v.kept = append(v.kept, x)
	} else {
		v.overflown = true
	}
}

// identifier reports whether a field key names an identifier by the
// manifests' convention (OrderId, ThreadID, ClrInstanceID): a label,
// not a quantity.
func identifier(key string) bool {
	return strings.HasSuffix(key, "Id") || strings.HasSuffix(key, "ID")
}

// rising reports whether nine values in ten or more were greater than
// the one added before them (values are added in time order), over at
// least three.
func (v *values) rising() bool { return v.n >= 3 && v.rises*10 >= (v.n-1)*9 }

func (v *values) variance() float64 {
	if v.n < 2 {
		return 0
	}
	return v.m2 / float64(v.n-1)
}

func (v *values) sorted() bool {
	if v.overflown {
		return false
	}
	if !v.done {
		slices.Sort(v.kept)
		v.done = true
	}
	return true
}

func (v *values) measure(m Measure) float64 {
	switch m {
	case Mean:
		return v.mean
	case Min:
		return v.min
	case Max:
		return v.max
	case P50, P99:
		p := 0.5
		if m == P99 {
			p = 0.99
		}
		i := int(math.Ceil(p*float64(len(v.kept)))) - 1
		return v.kept[max(i, 0)]
	}
	return 0
}

// summary is what one side holds, by key.
type summary struct {
	types, tracks map[string]int64
	slices        map[string]*values // by derived track
	names         map[string]*values // by slice name
	fields        map[string]*values // by "type.field"
}

func summarize(ctx context.Context, s Side, o Options) (*summary, error) {
	sm := &summary{types: map[string]int64{}, tracks: map[string]int64{}, slices: map[string]*values{}, names: map[string]*values{}, fields: map[string]*values{}}
	m := s.X.Meta()
	if s.To <= s.From {
		return sm, nil
	}
	ct, err := s.X.Count(ctx, render.Filter{}, s.From, s.To-1)
	if err != nil {
		return nil, err
	}
	for id, n := range ct.Types {
		sm.types[TypeKey(m, id)] += n
	}
	for id, n := range ct.Tracks {
		sm.tracks[TrackKey(m, id)] += n
	}
	if sp := s.X.Spans(); sp != nil {
		set := sp.Set()
		for id := range set.Tracks {
			c := set.Column(span.TrackID(id))
			label := SlicesKey(set, m, span.TrackID(id))
			for i := range c.Len() {
				sl := c.At(i)
				if sl.Start < s.From || sl.Start >= s.To || sl.Open() {
					continue
				}
				d := float64(sl.End - sl.Start)
				get(sm.slices, label).add(d)
				get(sm.names, set.Name(sl.Name)).add(d)
			}
		}
	}
	if o.NoFields {
		return sm, nil
	}
	// One reader per track: each decodes its track's spill runs once.
	readers := map[trace.TrackID]*render.EventReader{}
	for pos, err := range s.X.Hits(ctx, render.Filter{}, render.At(s.From), false) {
		if err != nil {
			return nil, err
		}
		if pos.Time >= s.To {
			break
		}
		ev := readers[pos.ID.Track]
		if ev == nil {
			ev = s.X.NewEventReader()
			readers[pos.ID.Track] = ev
		}
		e, err := ev.Event(pos.ID)
		if err != nil {
			return nil, err
		}
		d, err := s.X.DetailsOf(e)
		if err != nil {
			continue // an undecodable payload has no fields to count
		}
		addFields(sm.fields, TypeKey(m, e.Type)+".", d.Fields, 0)
	}
	return sm, nil
}

// addFields adds the numeric values among fields (and, one level down,
// their struct members) under prefix+name. Hex values (addresses,
// flags) and booleans are not quantities and are left out.
func addFields(into map[string]*values, prefix string, fields []trace.Field, depth int) {
	for i := range fields {
		f := &fields[i]
		switch f.Value.Kind() {
		case trace.KindInt, trace.KindUint, trace.KindFloat:
			if x, ok := f.Value.Number(); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
				get(into, prefix+f.Name).add(x)
			}
		case trace.KindStruct:
			if depth == 0 {
				addFields(into, prefix+f.Name+".", f.Value.Fields(), depth+1)
			}
		}
	}
}

func get(m map[string]*values, key string) *values {
	v := m[key]
	if v == nil {
		v = &values{}
		m[key] = v
	}
	return v
}

// TypeKey names an event type in rows: "provider/name", the name alone
// without a provider, "#id" without a name.
func TypeKey(m *trace.Meta, id trace.TypeID) string {
	if id < 0 || int(id) >= len(m.Types) {
		return "?"
	}
	et := &m.Types[id]
	name := et.Name
	if name == "" {
		name = "#" + strconv.FormatInt(et.ID, 10)
	}
	if et.Provider != "" {
		return et.Provider + "/" + name
	}
	return name
}

// TrackKey names a track in rows: its name, or its kind and ids when it
// has none.
func TrackKey(m *trace.Meta, id trace.TrackID) string {
	if id < 0 || int(id) >= len(m.Tracks) {
		return "(no track)"
	}
	t := &m.Tracks[id]
	if t.Name != "" {
		return t.Name
	}
	switch {
	case t.TID >= 0:
		return t.Kind.String() + " " + strconv.FormatInt(t.TID, 10)
	case t.CPU >= 0:
		return t.Kind.String() + " " + strconv.Itoa(int(t.CPU))
	}
	return t.Kind.String() + " #" + strconv.FormatInt(t.Code, 10)
}

// SlicesKey names a derived track in rows as `viewer spans` does: the
// trace track it belongs under, a slash and its own name.
func SlicesKey(set *span.Set, m *trace.Meta, id span.TrackID) string {
	t := set.Tracks[id]
	if t.Of >= 0 && int(t.Of) < len(m.Tracks) {
		return TrackKey(m, t.Of) + "/" + t.Name
	}
	return t.Name
}
