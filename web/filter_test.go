package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/render/query"
	"viewer/render/wire"
	"viewer/trace"
)

// TestFilterEndpoints checks the timeline filter's per-track counts and
// its filtered viewport against a streaming render.Matcher run over the
// same synthetic trace: the viewport's buckets hold exactly the matching
// events, and a lone one names a matching event.
func TestFilterEndpoints(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), nil)
	id, ref, evs := uploadSynth(ts)
	for _, q := range []string{"Event3 or value > 900", `"item-7" and not Synthetic-2`, "value < 0"} {
		expr, err := query.ParseExpr(q)
		if err != nil {
			t.Fatal(err)
		}
		m, err := render.NewMatcher(render.Filter{Expr: expr}, ref)
		if err != nil {
			t.Fatal(err)
		}
		want := map[trace.TrackID]int64{}
		matches := map[trace.TrackID][]bool{} // by index in the track
		var total int64
		for _, e := range evs {
			ok := m.Match(&e)
			matches[e.Track] = append(matches[e.Track], ok)
			if ok {
				want[e.Track]++
				total++
			}
		}
		resp, b := ts.do("GET", "/api/traces/"+id+"/filter?q="+url.QueryEscape(q), nil)
		var fr filterReply
		if resp.StatusCode != 200 || json.Unmarshal(b, &fr) != nil {
			t.Fatalf("%q: filter %d %s", q, resp.StatusCode, b)
		}
		if fr.Total != total || !fr.Complete || len(fr.Tracks) != len(want) {
			t.Errorf("%q: %d events on %d tracks (complete %v), want %d on %d", q, fr.Total, len(fr.Tracks), fr.Complete, total, len(want))
		}
		for _, tc := range fr.Tracks {
			if tc.Count != want[tc.Track] {
				t.Errorf("%q: track %d: %d, want %d", q, tc.Track, tc.Count, want[tc.Track])
			}
		}
		first, last := evs[0].Time, evs[len(evs)-1].Time
		for _, width := range []int{1, 300, 8000} {
			params := url.Values{"q": {q}, "start": {fmt.Sprint(first)}, "end": {fmt.Sprint(last + 1)},
				"width": {fmt.Sprint(width)}, "tracks": {"0,1,2,3,4"}, "seq": {"9"}}
			resp, b := ts.do("GET", "/api/traces/"+id+"/filter/viewport?"+params.Encode(), nil)
			if resp.StatusCode != 200 || resp.Header.Get("Viewer-Filter-Complete") != "true" {
				t.Fatalf("%q: viewport %d %s", q, resp.StatusCode, b)
			}
			f, err := wire.Decode(b)
			if err != nil || f.Reply == nil || f.Seq != 9 || len(f.Reply.Tracks) != synthTracks {
				t.Fatalf("%q: viewport frame: %v %+v", q, err, f)
			}
			for _, tr := range f.Reply.Tracks {
				var n int64
				for i, c := range tr.Count {
					n += int64(c)
					if !matches[trace.TrackID(tr.Track)][tr.First[i]] {
						t.Errorf("%q: track %d: first event %d does not match", q, tr.Track, tr.First[i])
					}
				}
				if n != want[trace.TrackID(tr.Track)] {
					t.Errorf("%q width %d: track %d: %d events in buckets, want %d", q, width, tr.Track, n, want[trace.TrackID(tr.Track)])
				}
			}
		}
	}
	for _, bad := range []string{"filter", "filter?q=", "filter?q=" + url.QueryEscape("(value = 1"),
		"filter/viewport?q=x&start=0&end=10&width=0", "filter/viewport?q=x&start=0&end=x&width=10",
		"filter/viewport?q=x&start=10&end=0&width=10", "filter/viewport?q=x&start=0&end=10&width=10&tracks=a",
		"filter/viewport?q=x&start=0&end=10&width=10&tracks=" + strings.Repeat("1,", 2000) + "1"} {
		if resp, b := ts.do("GET", "/api/traces/"+id+"/"+bad, nil); resp.StatusCode != 400 {
			t.Errorf("%s: %d %s, want 400", bad, resp.StatusCode, b)
		}
	}
}

// TestFilterCache checks that a mask is evaluated once per trace, query
// and index, and that the cache keeps within its bytes.
func TestFilterCache(t *testing.T) {
	mask := func() *render.FilterMask { return &render.FilterMask{Complete: true} }
	one := mask().Bytes()
	c := newFilterCache(3 * one)
	idx, other := &index{}, &index{}
	evals := 0
	eval := func() (*render.FilterMask, error) { evals++; return mask(), nil }
	tr := uuid.New()
	ctx := context.Background()
	for _, q := range []string{"a", "a", "b", "a"} {
		if _, err := c.get(ctx, filterKey{tr, q}, idx, eval); err != nil {
			t.Fatal(err)
		}
	}
	if evals != 2 {
		t.Errorf("%d evaluations of 2 queries, want 2", evals)
	}
	c.get(ctx, filterKey{tr, "a"}, other, eval) // a rebuilt index
	if evals != 3 {
		t.Errorf("a new index did not evaluate again (%d)", evals)
	}
	for _, q := range []string{"c", "d", "e", "f"} {
		c.get(ctx, filterKey{tr, q}, idx, eval)
	}
	if c.bytes > c.max || c.lru.Len() != 3 || len(c.m) != 3 {
		t.Errorf("cache holds %d bytes in %d entries, bound %d", c.bytes, c.lru.Len(), c.max)
	}
	before := evals
	c.get(ctx, filterKey{tr, "f"}, idx, eval) // the newest stays
	c.get(ctx, filterKey{tr, "c"}, idx, eval) // the oldest went
	if evals != before+1 {
		t.Errorf("%d evaluations, want %d", evals, before+1)
	}
	c.drop(tr)
	if c.bytes != 0 || c.lru.Len() != 0 {
		t.Errorf("after drop: %d bytes, %d entries", c.bytes, c.lru.Len())
	}

	// Requests that come while a mask is evaluated wait for it.
	release := make(chan struct{})
	var slow atomic.Int32
	slowEval := func() (*render.FilterMask, error) { slow.Add(1); <-release; return mask(), nil }
	var wg sync.WaitGroup
	got := make([]*render.FilterMask, 4)
	for i := range got {
		wg.Go(func() { got[i], _ = c.get(ctx, filterKey{tr, "slow"}, idx, slowEval) })
	}
	for slow.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if slow.Load() != 1 {
		t.Errorf("%d evaluations for 4 requests at once, want 1", slow.Load())
	}
	for i, m := range got {
		if m != got[0] || m == nil {
			t.Errorf("request %d got mask %p, want %p", i, m, got[0])
		}
	}
	// A waiter whose context ends gives up.
	block := make(chan struct{})
	defer close(block)
	go c.get(ctx, filterKey{tr, "stuck"}, idx, func() (*render.FilterMask, error) { <-block; return mask(), nil })
	for {
		c.mu.Lock()
		_, ok := c.m[filterKey{tr, "stuck"}]
		c.mu.Unlock()
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := c.get(short, filterKey{tr, "stuck"}, idx, eval); err == nil {
		t.Error("a waiter outlived its context")
	}
}
