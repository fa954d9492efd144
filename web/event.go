package web

import (
	"errors"
	"strconv"
	"strings"

	"viewer/render"
	"viewer/trace"
)

// EventRef names one event in URLs and JSON as "TRACK:INDEX": its track
// and its position in the track's time order ([render.EventID]). It is
// stable across restarts because indexing is deterministic.
type EventRef render.EventID

// String returns "TRACK:INDEX".
func (r EventRef) String() string {
	return strconv.Itoa(int(r.Track)) + ":" + strconv.Itoa(int(r.Index))
}

// ParseEventRef parses "TRACK:INDEX". The track may be -1 (events on no
// track); the index is not negative.
func ParseEventRef(s string) (EventRef, error) {
	t, i, ok := strings.Cut(s, ":")
	if !ok {
		return EventRef{}, errors.New("an event id is TRACK:INDEX")
	}
	track, err := strconv.ParseInt(t, 10, 32)
	if err != nil || track < int64(trace.NoTrack) || strconv.FormatInt(track, 10) != t {
		return EventRef{}, errors.New("bad track in event id")
	}
	idx, err := strconv.ParseInt(i, 10, 32)
	if err != nil || idx < 0 || strconv.FormatInt(idx, 10) != i {
		return EventRef{}, errors.New("bad index in event id")
	}
	return EventRef{Track: trace.TrackID(track), Index: int32(idx)}, nil
}

// MarshalText implements encoding.TextMarshaler.
func (r EventRef) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *EventRef) UnmarshalText(b []byte) error {
	v, err := ParseEventRef(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
