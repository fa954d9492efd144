package query

import (
	"context"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/synth"
)

// engineQueries exercise every kind of term on a synthetic trace (types
// Event0…Event11 of providers Synthetic-0…4; fields seq, value, name,
// point.{x,y}; labels ActivityId and request).
var engineQueries = []string{
	"Event3",
	"Synthetic-2/",
	"@event = Event5 or @id in (1, 2)",
	"#4",
	"value >= 990",
	"Event1 and name ~ ITEM-3 and point.x != 4",
	`not value < 500 and track = "thread 2"`,
	"value in (1, 2, 3) or name ~ /^item-3[0-5]$/",
	`"item-36"`,
	`"00a5"`,
	"time < 50000 and tid = 2003",
	"cpu = 3 and Event2",
	`label ~ "value=99"`,
	"@id = 3 and not (seq > 100 and seq < 20000)",
	"missing = 1",
	"not missing = 1",
	"@provider = Synthetic-1 and value > 995",
	"pid = 1000 and (point.y = 7 or point.x = 7)",
	"@nosuchkey = 1 or @level = 4 and @opcode = 3",
}

// TestEngineBruteForce checks the hits of every query, through the
// index (render.Index.Hits, CountHits) and through a streaming Matcher,
// against a brute-force evaluation of the query on every event's details.
func TestEngineBruteForce(t *testing.T) {
	cfg := synth.Config{Events: 30000, Tracks: 6, Types: 12, Seed: 11, MeanGap: 50}
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ref := synth.New(cfg)
	var evs []trace.Event
	var ids []render.EventID
	perTrack := map[trace.TrackID]int32{}
	for {
		e, err := ref.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
		ids = append(ids, render.EventID{Track: e.Track, Index: perTrack[e.Track]})
		perTrack[e.Track]++
	}
	for _, q := range engineQueries {
		e, err := ParseExpr(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var want []render.EventID
		stream, err := render.NewMatcher(render.Filter{Expr: e}, synth.New(cfg))
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			d, err := ref.Details(ev)
			if err != nil {
				t.Fatal(err)
			}
			bf := bruteMatch(e, ref, ev, d)
			if bf {
				want = append(want, ids[i])
			}
			if got := stream.Match(&ev); got != bf {
				t.Fatalf("%q: the streaming matcher says %v for event %d %+v, brute force %v", q, got, i, ev, bf)
			}
		}
		var got []render.EventID
		for pos, err := range x.Hits(context.Background(), render.Filter{Expr: e}, render.At(math.MinInt64), false) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pos.ID)
		}
		cmpID := func(a, b render.EventID) int {
			if a.Track != b.Track {
				return int(a.Track - b.Track)
			}
			return int(a.Index - b.Index)
		}
		slices.SortFunc(got, cmpID)
		slices.SortFunc(want, cmpID)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %d hits, brute force %d", q, len(got), len(want))
		}
		if len(want) == 0 || len(want) == len(evs) {
			t.Logf("%q matches %d of %d events", q, len(want), len(evs))
		}
		first, last := x.Span()
		counts := make([]int64, 1)
		if complete, err := x.CountHits(context.Background(), render.Filter{Expr: e}, first, last, counts); err != nil || !complete || counts[0] != int64(len(want)) {
			t.Errorf("%q: CountHits %v (complete %v, %v), want %d", q, counts, complete, err, len(want))
		}
	}
}

// bruteMatch evaluates e on one event the slow way: every field and
// header value looked up by name, every comparison by Predicate.Match.
func bruteMatch(e render.Expr, r trace.Reader, ev trace.Event, d trace.Details) bool {
	m := r.Meta()
	et := m.Types[ev.Type]
	switch e.Kind {
	case render.ExprAll:
		return true
	case render.ExprAnd:
		for _, a := range e.Args {
			if !bruteMatch(a, r, ev, d) {
				return false
			}
		}
		return true
	case render.ExprOr:
		for _, a := range e.Args {
			if bruteMatch(a, r, ev, d) {
				return true
			}
		}
		return false
	case render.ExprNot:
		return !bruteMatch(e.Args[0], r, ev, d)
	case render.ExprName:
		return strings.Contains(strings.ToLower(et.Provider+"/"+et.Name), strings.ToLower(e.Text))
	case render.ExprText:
		var texts []string
		texts = append(texts, et.Provider+"/"+et.Name, d.Label)
		var leaves func(fs []trace.Field)
		leaves = func(fs []trace.Field) {
			for _, f := range fs {
				if k := f.Value.Kind(); k == trace.KindStruct || k == trace.KindArray {
					leaves(f.Value.Fields())
				} else {
					texts = append(texts, f.Value.String())
				}
			}
		}
		leaves(d.Fields)
		for _, l := range r.Labels(ev.Labels) {
			texts = append(texts, l.Value.String())
		}
		for _, s := range texts {
			if strings.Contains(strings.ToLower(s), strings.ToLower(e.Text)) {
				return true
			}
		}
		return false
	}
	p := e.Pred
	top, _, _ := strings.Cut(p.Field, ".")
	for _, fs := range et.Fields {
		if fs.Name == top && !strings.HasPrefix(p.Field, "@") {
			return p.Match(d)
		}
	}
	tr := m.Tracks[ev.Track]
	header := map[string]trace.Value{
		"provider": trace.StringValue(et.Provider), "event": trace.StringValue(et.Name),
		"id": trace.IntValue(et.ID), "version": trace.IntValue(int64(et.Version)),
		"opcode": trace.IntValue(int64(et.Opcode)), "level": trace.IntValue(int64(et.Level)),
		"track": trace.StringValue(tr.Name), "pid": trace.IntValue(tr.PID), "tid": trace.IntValue(tr.TID),
		"cpu": trace.IntValue(int64(ev.CPU)), "time": trace.IntValue(int64(ev.Time)), "label": trace.StringValue(d.Label),
	}
	v, ok := header[strings.TrimPrefix(p.Field, "@")]
	if !ok {
		return false
	}
	p.Field = "v"
	return p.Match(trace.Details{Fields: []trace.Field{{Name: "v", Value: v}}})
}

// TestBudget checks that a query past its work budget ends with
// render.ErrBudget after the hits it found, and that the budget does not
// count events decided from the resident index.
func TestBudget(t *testing.T) {
	cfg := synth.Config{Events: 20000, Tracks: 4, Types: 8, Seed: 2}
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	run := func(q string, budget int64) (hits int, err error) {
		e, perr := ParseExpr(q)
		if perr != nil {
			t.Fatal(perr)
		}
		for _, err := range x.Hits(context.Background(), render.Filter{Expr: e, Budget: budget}, render.At(math.MinInt64), false) {
			if err != nil {
				return hits, err
			}
			hits++
		}
		return hits, nil
	}
	if n, err := run("value < 500", 1000); !errors.Is(err, render.ErrBudget) || n == 0 || n >= 1000 {
		t.Errorf("value < 500 with a budget of 1000: %d hits, %v", n, err)
	}
	if n, err := run("Event3 or time > 0", 10); err != nil || n != 20000 {
		t.Errorf("a query of the resident index with a budget of 10: %d hits, %v", n, err)
	}
}

// TestCountTable checks render.Index.Count, per type and per track, in
// random windows over random tracks, against brute force.
func TestCountTable(t *testing.T) {
	cfg := synth.Config{Events: 20000, Tracks: 7, Types: 10, Seed: 21, MeanGap: 40}
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ref := synth.New(cfg)
	var evs []trace.Event
	for {
		e, err := ref.ReadEvent()
		if err != nil {
			break
		}
		evs = append(evs, e)
	}
	first, last := x.Span()
	for k, q := range engineQueries {
		e, err := ParseExpr(q)
		if err != nil {
			t.Fatal(err)
		}
		lo := first + trace.Time(k)*(last-first)/40
		hi := last - trace.Time(k)*(last-first)/50
		tracks := []trace.TrackID{trace.TrackID(k % 7), trace.TrackID((k + 3) % 7), 99}
		if k%3 == 0 {
			tracks = nil
		}
		got, err := x.Count(context.Background(), render.Filter{Expr: e, Tracks: tracks}, lo, hi)
		if err != nil || !got.Complete {
			t.Fatalf("%q: %v (complete %v)", q, err, got.Complete)
		}
		want := render.CountTable{Types: map[trace.TypeID]int64{}, Tracks: map[trace.TrackID]int64{}}
		for _, ev := range evs {
			if ev.Time < lo || ev.Time > hi || tracks != nil && !slices.Contains(tracks, ev.Track) {
				continue
			}
			d, _ := ref.Details(ev)
			if bruteMatch(e, ref, ev, d) {
				want.Types[ev.Type]++
				want.Tracks[ev.Track]++
				want.Total++
			}
		}
		if got.Total != want.Total || !maps.Equal(got.Types, want.Types) || !maps.Equal(got.Tracks, want.Tracks) {
			t.Errorf("%q in [%d, %d] on %v: %+v, brute force %+v", q, lo, hi, tracks, got, want)
		}
	}
	// A budget stops the count early, with what it counted.
	e, _ := ParseExpr("value < 500")
	got, err := x.Count(context.Background(), render.Filter{Expr: e, Budget: 100}, first, last)
	if !errors.Is(err, render.ErrBudget) || got.Complete || got.Total == 0 || !render.Stopped(err) {
		t.Errorf("over budget: %+v, %v", got, err)
	}
}

// TestHistogram checks render.Index.Histogram of synthetic fields and a
// header key against the values gathered by brute force.
func TestHistogram(t *testing.T) {
	cfg := synth.Config{Events: 20000, Tracks: 6, Types: 9, Seed: 23, MeanGap: 40}
	x, err := render.Build(context.Background(), synth.New(cfg), render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ref := synth.New(cfg)
	var evs []trace.Event
	for {
		e, err := ref.ReadEvent()
		if err != nil {
			break
		}
		evs = append(evs, e)
	}
	first, last := x.Span()
	lo, hi := first+(last-first)/7, last-(last-first)/9
	for _, c := range []struct{ q, field string }{
		{"Event3 or Event5", "value"},
		{"value > 100", "point.y"},
		{"Synthetic-1", "cpu"},
		{"Event2", "@id"},
		{"Event2", "name"}, // not numeric: every event missing
	} {
		e, err := ParseExpr(c.q)
		if err != nil {
			t.Fatal(err)
		}
		h, err := x.Histogram(context.Background(), render.Filter{Expr: e}, lo, hi, c.field, 10)
		if err != nil || !h.Complete {
			t.Fatalf("%q %s: %v (complete %v)", c.q, c.field, err, h.Complete)
		}
		var vals []float64
		missing := int64(0)
		for _, ev := range evs {
			if ev.Time < lo || ev.Time > hi {
				continue
			}
			d, _ := ref.Details(ev)
			if !bruteMatch(e, ref, ev, d) {
				continue
			}
			var v float64
			et := ref.Meta().Types[ev.Type]
			switch c.field {
			case "value":
				v = float64(synth.Value(ev))
			case "point.y":
				v = float64(synth.Value(ev) / 10)
			case "cpu":
				v = float64(ev.CPU)
			case "@id":
				v = float64(et.ID)
			default:
				missing++
				continue
			}
			vals = append(vals, v)
		}
		if h.Count != int64(len(vals)) || h.Missing != missing {
			t.Fatalf("%q %s: %d values, %d missing; want %d, %d", c.q, c.field, h.Count, h.Missing, len(vals), missing)
		}
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		p50 := vals[(len(vals)+1)/2-1]
		if h.Min != vals[0] || h.Max != vals[len(vals)-1] || h.P50 != p50 || math.Abs(h.Mean-sum/float64(len(vals))) > 1e-9 {
			t.Errorf("%q %s: %+v; want min %v max %v p50 %v mean %v", c.q, c.field, h, vals[0], vals[len(vals)-1], p50, sum/float64(len(vals)))
		}
		var total int64
		for _, b := range h.Bins {
			total += b
		}
		if total != h.Count {
			t.Errorf("%q %s: bins hold %d of %d values", c.q, c.field, total, h.Count)
		}
	}
}
