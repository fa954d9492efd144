package web

import (
	"context"
	"fmt"
	"strconv"

	"viewer/render/query"
	"viewer/trace"
)

// MaxSearchBins is the most time bins the search endpoint counts hits in
// (`bins=N`, PROTOCOL.md §3): one per pixel of a wide overview strip.
const MaxSearchBins = 4096

// searchBins is the `bins` object of a search reply: how many events match
// in each of len(Counts) equal slices of the whole trace, so the overview
// can mark hits past the list's limit.
type searchBins struct {
	From     trace.Time `json:"from,string"` // the trace's first event
	To       trace.Time `json:"to,string"`   // its last event (inclusive)
	Counts   []int64    `json:"counts"`
	Complete bool       `json:"complete"` // false: render.MaxCountChecks ran out
}

// parseBins reads the `bins` parameter: 0 when it is absent.
func parseBins(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	return countParam("bins", s, 0, MaxSearchBins)
}

// countParam reads the count parameter name of a request, whose text is
// s: def when s is empty, else a number from 1 to most.
func countParam(name, s string, def, most int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("%s: not a number from 1 to %d", name, most)
	}
	return n, nil
}

// countBins counts q's hits over the whole trace in n bins.
func (idx *index) countBins(ctx context.Context, q string, n int) (*searchBins, error) {
	f, err := query.Parse(q, idx.x.Meta())
	if err != nil {
		return nil, err
	}
	first, last := idx.x.Span()
	b := &searchBins{From: first, To: last, Counts: make([]int64, n)}
	if idx.x.Events() == 0 {
		b.Complete = true
		return b, nil
	}
	b.Complete, err = idx.x.CountHits(ctx, f, first, last, b.Counts)
	return b, err
}
