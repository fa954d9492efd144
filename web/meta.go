package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"viewer/render"
	"viewer/render/wire"
	"viewer/trace"
	"viewer/trace/export"
)

// Caps on what one trace lists, so that a trace with very many event types
// or tracks does not make its meta, its statistics, the name tables of its
// sessions, and the library listing huge (issue 17).
const (
	// MaxListedTypes bounds the event types listed in meta, in the
	// statistics' counts and in the sessions' name tables. Beyond it, the
	// types with ids from MaxListedTypes-1 on are one entry, "(N other
	// types)", with id MaxListedTypes-1 in meta and the tables (reply
	// items of those types carry that id) and the sum of their counts.
	MaxListedTypes = 4096
	// MaxListedTracks bounds the tracks listed in meta and named in the
	// name tables; meta's other_tracks counts the rest and their events.
	MaxListedTracks = 16384
)

// otherTypesName names the entry that stands for n event types.
func otherTypesName(n int) string { return fmt.Sprintf("(%d other types)", n) }

// capStats folds the type counts beyond MaxListedTypes-1 into one entry
// named for how many types it holds (id -1): the most frequent types are
// kept, in the counts' order.
func capStats(st export.Stats) export.Stats {
	if len(st.Counts) <= MaxListedTypes {
		return st
	}
	keep := MaxListedTypes - 1
	order := make([]int, len(st.Counts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(st.Counts[b].Count, st.Counts[a].Count) })
	other := export.TypeCount{Event: otherTypesName(len(st.Counts) - keep), ID: -1}
	for _, i := range order[keep:] {
		other.Count += st.Counts[i].Count
	}
	order = order[:keep]
	slices.Sort(order)
	counts := make([]export.TypeCount, 0, MaxListedTypes)
	for _, i := range order {
		counts = append(counts, st.Counts[i])
	}
	st.Counts = append(counts, other)
	return st
}

// tables returns the name tables of the index's sessions, within the
// caps: the types beyond MaxListedTypes-1 are one "other" name, and only
// the first MaxListedTracks tracks are named.
func (idx *index) tables() *wire.Tables {
	m := *idx.x.Meta()
	if n := len(m.Types); n > MaxListedTypes {
		m.Types = append(m.Types[:MaxListedTypes-1:MaxListedTypes-1], trace.EventType{Name: otherTypesName(n - (MaxListedTypes - 1))})
	}
	var tracks []trace.TrackID
	for _, id := range idx.x.Tracks() {
		if id < MaxListedTracks {
			tracks = append(tracks, id)
		}
	}
	return wire.NewTables(&m, tracks)
}

// maxType is the largest type id a reply item may carry: with more types
// than the cap, the items of the types beyond carry the id of the tables'
// "other" entry.
func (idx *index) maxType() int32 {
	if len(idx.x.Meta().Types) <= MaxListedTypes {
		return math.MaxInt32
	}
	return MaxListedTypes - 1
}

// metaJSON is the reply of GET /api/traces/{id}/meta (PROTOCOL.md §3).
type metaJSON struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	First       trace.Time     `json:"first,string"`
	Last        trace.Time     `json:"last,string"`
	Wall        string         `json:"wall"`
	Tracks      []trackJSON    `json:"tracks"`
	OtherTracks *otherJSON     `json:"other_tracks,omitempty"`
	Types       []typeJSON     `json:"types"`
	Lost        []gapJSON      `json:"lost"`
	TruncatedAt *string        `json:"truncated_at"`
	Error       string         `json:"error,omitempty"`
	Notices     []string       `json:"notices"`
	Info        []keyValueJSON `json:"info"`
	Stats       export.Stats   `json:"stats"`
}

type trackJSON struct {
	ID     trace.TrackID `json:"id"`
	Kind   string        `json:"kind"`
	Name   string        `json:"name"`
	PID    int64         `json:"pid"`
	TID    int64         `json:"tid"`
	CPU    int32         `json:"cpu"`
	Parent trace.TrackID `json:"parent"`
	Events int64         `json:"events"`
	Names  []string      `json:"names,omitempty"` // earlier names, oldest first
}

type typeJSON struct {
	ID       trace.TypeID `json:"id"`
	Provider string       `json:"provider"`
	Name     string       `json:"name"`
	Code     int64        `json:"code"`
	Version  int          `json:"version"`
	Count    int64        `json:"count"`
	// Other is, for the entry standing for the types beyond
	// MaxListedTypes, how many types it holds.
	Other int `json:"other,omitempty"`
}

// otherJSON is the tracks beyond MaxListedTracks: how many, and their
// events.
type otherJSON struct {
	Tracks int   `json:"tracks"`
	Events int64 `json:"events"`
}

type gapJSON struct {
	Time  trace.Time    `json:"time,string"`
	Track trace.TrackID `json:"track"`
	Count int64         `json:"count"`
}

type keyValueJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func appendMetaJSON(b []byte, idx *index) []byte {
	m := idx.x.Meta()
	st := idx.stats
	nTracks, nTypes := min(len(m.Tracks), MaxListedTracks), min(len(m.Types), MaxListedTypes)
	out := metaJSON{
		Format:  m.Format,
		Version: m.Version,
		First:   trace.Time(st.FirstNS),
		Last:    trace.Time(st.LastNS),
		Tracks:  make([]trackJSON, nTracks),
		Types:   make([]typeJSON, nTypes),
		Lost:    make([]gapJSON, len(m.Lost)),
		Error:   st.Error,
		Notices: append([]string{}, m.Notices...),
		Info:    make([]keyValueJSON, len(m.Info)),
		Stats:   st,
	}
	if w, ok := m.Clock.WallTime(0); ok {
		out.Wall = w.UTC().Format(time.RFC3339Nano)
	}
	for i, t := range m.Tracks[:nTracks] {
		tj := trackJSON{ID: trace.TrackID(i), Kind: t.Kind.String(), Name: t.Name, PID: t.PID, TID: t.TID, CPU: t.CPU, Parent: t.Parent, Names: t.Names}
		tj.Events = int64(idx.x.TrackEvents(trace.TrackID(i)))
		out.Tracks[i] = tj
	}
	if len(m.Tracks) > nTracks {
		o := &otherJSON{Tracks: len(m.Tracks) - nTracks}
		for i := nTracks; i < len(m.Tracks); i++ {
			o.Events += int64(idx.x.TrackEvents(trace.TrackID(i)))
		}
		out.OtherTracks = o
	}
	count := func(i int) int64 {
		if i < len(idx.types) {
			return idx.types[i]
		}
		return 0
	}
	for i, t := range m.Types[:nTypes] {
		out.Types[i] = typeJSON{ID: trace.TypeID(i), Provider: t.Provider, Name: t.Name, Code: t.ID, Version: t.Version, Count: count(i)}
	}
	if len(m.Types) > nTypes {
		o := typeJSON{ID: trace.TypeID(nTypes - 1), Name: otherTypesName(len(m.Types) - (nTypes - 1)), Code: -1, Other: len(m.Types) - (nTypes - 1)}
		for i := nTypes - 1; i < len(m.Types); i++ {
			o.Count += count(i)
		}
		out.Types[nTypes-1] = o
	}
	for i, g := range m.Lost {
		out.Lost[i] = gapJSON{g.Time, g.Track, g.Count}
	}
	for i, kv := range m.Info {
		out.Info[i] = keyValueJSON{kv.Key, kv.Value}
	}
	if ms := idx.x.Markers(render.MarkerTruncated); len(ms) > 0 {
		s := strconv.FormatInt(int64(ms[0].Time), 10)
		out.TruncatedAt = &s
	}
	enc, err := json.Marshal(out)
	if err != nil { // only invalid floats could do this, and there are none
		panic("invariant violation: meta JSON: " + err.Error())
	}
	return append(b, enc...)
}
