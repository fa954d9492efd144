package web

import (
	"strings"
	"testing"

	"viewer/render"
	"viewer/trace"
)

// TestViewportLimits checks that each refused viewport request says what
// is too large.
func TestViewportLimits(t *testing.T) {
	tracks := func(n int) []trace.TrackID { return make([]trace.TrackID, n) }
	for _, c := range []struct {
		req  request
		want string
	}{
		{request{Type: "viewport", Start: 0, End: 0, Width: 1}, "end must be after start"},
		{request{Type: "viewport", Start: 0, End: 1, Width: 0}, "width must be from 1 to 8192"},
		{request{Type: "viewport", Start: 0, End: 1, Width: render.MaxWidth + 1}, "width must be from 1 to 8192"},
		{request{Type: "viewport", Start: 0, End: 1, Width: 1, Tracks: tracks(render.MaxTracks + 1)}, "more than 1024 tracks"},
		{request{Type: "viewport", Start: 0, End: 1, Width: 1, Types: make([]trace.TypeID, MaxViewIDs+1)}, "more than 65536 hidden types"},
		{request{Type: "viewport", Start: 0, End: 1, Width: 3840, Tracks: tracks(600)}, "tracks × (width+1) exceeds 2097152"},
		{request{Type: "viewport", Start: 0, End: 1, Width: 1, Mode: "fancy"}, "mode must be event or summary"},
		{request{Type: "search"}, `unknown message type "search"`},
		{request{Type: "hit"}, `unknown message type "hit"`},
	} {
		err := (&session{}).accept(&c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s request (%d tracks, %d types, width %d): %v, want %q", c.req.Type, len(c.req.Tracks), len(c.req.Types), c.req.Width, err, c.want)
		}
	}
	ok := request{Type: "viewport", Start: 0, End: 1, Width: render.MaxWidth, Tracks: tracks(render.MaxCells/(render.MaxWidth+1) - 1)}
	if err := (&session{}).accept(&ok); err != nil {
		t.Errorf("a request within the limits: %v", err)
	}
}
