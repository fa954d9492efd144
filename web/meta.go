package web

import (
	"encoding/json"
	"strconv"
	"time"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/export"
)

// metaJSON is the reply of GET /api/traces/{id}/meta (PROTOCOL.md §3).
type metaJSON struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	First       trace.Time     `json:"first,string"`
	Last        trace.Time     `json:"last,string"`
	Wall        string         `json:"wall"`
	Tracks      []trackJSON    `json:"tracks"`
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
	out := metaJSON{
		Format:  m.Format,
		Version: m.Version,
		First:   trace.Time(st.FirstNS),
		Last:    trace.Time(st.LastNS),
		Tracks:  make([]trackJSON, len(m.Tracks)),
		Types:   make([]typeJSON, len(m.Types)),
		Lost:    make([]gapJSON, len(m.Lost)),
		Error:   st.Error,
		Notices: append([]string{}, m.Notices...),
		Info:    make([]keyValueJSON, len(m.Info)),
		Stats:   st,
	}
	if w, ok := m.Clock.WallTime(0); ok {
		out.Wall = w.UTC().Format(time.RFC3339Nano)
	}
	for i, t := range m.Tracks {
		tj := trackJSON{ID: trace.TrackID(i), Kind: t.Kind.String(), Name: t.Name, PID: t.PID, TID: t.TID, CPU: t.CPU, Parent: t.Parent, Names: t.Names}
		tj.Events = int64(idx.x.TrackEvents(trace.TrackID(i)))
		out.Tracks[i] = tj
	}
	for i, t := range m.Types {
		tj := typeJSON{ID: trace.TypeID(i), Provider: t.Provider, Name: t.Name, Code: t.ID, Version: t.Version}
		if i < len(idx.types) {
			tj.Count = idx.types[i]
		}
		out.Types[i] = tj
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
