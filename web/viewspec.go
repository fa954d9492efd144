package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"viewer/render"
	"viewer/trace"
	"viewer/trace/span"
)

//go:generate go run ./internal/genviewspec ../ui/static/js/urlspec.js

// viewKind is how a URL parameter's value is written (PROTOCOL.md §6).
// [ParseView], [View.Encode] and ui/static/js/urlstate.js each have one
// rule per kind.
type viewKind string

const (
	kindVersion viewKind = "version" // the grammar version, 1 to Max; always written
	kindStart   viewKind = "start"   // the range start, ns (decimal int64); needs the end
	kindEnd     viewKind = "end"     // the range end, ns, after the start; needs the start
	kindEvent   viewKind = "event"   // an event id TRACK:INDEX
	kindID      viewKind = "id"      // a track id
	kindSet     viewKind = "set"     // ids, increasing; runs of three or more written a-b
	kindList    viewKind = "list"    // ids in order, none repeated
	kindEnum    viewKind = "enum"    // one of Values, the first the default
	kindText    viewKind = "text"    // text of at most Max bytes; invalid UTF-8 replaced
	kindTraces  viewKind = "traces"  // trace ids (canonical UUIDs) in order, none repeated, at most Max
	kindOffsets viewKind = "offsets" // K:NS pairs, K increasing below Max, NS a non-zero int64 within ±MaxOffset
)

// ViewParam is one parameter of the URL-state grammar. [ViewParams] lists
// them in the order URLs write them.
type ViewParam struct {
	Key    string   `json:"key"`              // the URL parameter
	Field  string   `json:"field"`            // the View field's JSON name (the page data)
	State  string   `json:"state"`            // the property of urlstate.js's ViewState; "" for none
	Kind   viewKind `json:"kind"`             // how the value is written
	Values []string `json:"values,omitempty"` // enum: the accepted values, the default first
	Max    int      `json:"max,omitempty"`    // version: newest; set, list: most ids; text: most bytes; traces, offsets: most traces

	at func(*View) any // a pointer to the View field
}

// viewParams is the URL-state grammar: the one table that the server's
// parser and encoder and, through the generated urlspec.js, the page's
// loop over. A new parameter is a new row (and, for a new kind, one rule
// in each of the three).
var viewParams = []ViewParam{
	{Key: "v", Field: "v", Kind: kindVersion, Max: ViewVersion, at: func(v *View) any { return &v.Version }},
	{Key: "s", Field: "start", State: "start", Kind: kindStart, at: func(v *View) any { return &v.Start }},
	{Key: "e", Field: "end", State: "end", Kind: kindEnd, at: func(v *View) any { return &v.End }},
	{Key: "sel", Field: "sel", State: "sel", Kind: kindEvent, at: func(v *View) any { return &v.Sel }},
	{Key: "tr", Field: "track", State: "track", Kind: kindID, at: func(v *View) any { return &v.Track }},
	{Key: "hide", Field: "hide", State: "hide", Kind: kindSet, Max: MaxViewIDs, at: func(v *View) any { return &v.Hide }},
	{Key: "pin", Field: "pin", State: "pin", Kind: kindList, Max: MaxViewIDs, at: func(v *View) any { return &v.Pin }},
	{Key: "order", Field: "order", State: "order", Kind: kindList, Max: MaxViewIDs, at: func(v *View) any { return &v.Order }},
	{Key: "xt", Field: "hide_types", State: "hideTypes", Kind: kindSet, Max: MaxViewIDs, at: func(v *View) any { return &v.HideTypes }},
	{Key: "xd", Field: "hide_derived", State: "hideDerived", Kind: kindSet, Max: MaxViewIDs, at: func(v *View) any { return &v.HideDerived }},
	{Key: "mode", Field: "mode", State: "mode", Kind: kindEnum, Values: []string{string(ModeEvent), string(ModeSummary)}, at: func(v *View) any { return (*string)(&v.Mode) }},
	{Key: "q", Field: "q", State: "q", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.Query }},
	{Key: "f", Field: "filter", State: "filter", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.Filter }},
	// The timeline filter: a query whose non-matching events are dimmed or hidden.
	{Key: "w", Field: "where", State: "where", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.Where }},
	{Key: "wm", Field: "where_mode", State: "whereMode", Kind: kindEnum, Values: []string{"dim", "hide"}, at: func(v *View) any { return &v.WhereMode }},
	// The stacks panel (flame graph, call trees, callers/callees).
	{Key: "sp", Field: "stacks", State: "stacks", Kind: kindEnum, Values: []string{"closed", "open"}, at: func(v *View) any { return &v.Stacks }},
	{Key: "sv", Field: "stacks_view", State: "stacksView", Kind: kindEnum, Values: StacksViews, at: func(v *View) any { return &v.StacksView }},
	{Key: "sr", Field: "stacks_range", State: "stacksRange", Kind: kindEnum, Values: []string{"view", "all", "ruler"}, at: func(v *View) any { return &v.StacksRange }},
	{Key: "sx", Field: "stacks_tracks", State: "stacksTracks", Kind: kindEnum, Values: []string{"all", "shown", "sel"}, at: func(v *View) any { return &v.StacksTracks }},
	{Key: "sev", Field: "stacks_event", State: "stacksEvent", Kind: kindText, Max: MaxViewName, at: func(v *View) any { return &v.StacksEvent }},
	{Key: "sw", Field: "stacks_weight", State: "stacksWeight", Kind: kindText, Max: MaxViewName, at: func(v *View) any { return &v.StacksWeight }},
	{Key: "stf", Field: "stacks_tf", State: "stacksTf", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.StacksTf }},
	{Key: "sq", Field: "stacks_q", State: "stacksQ", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.StacksQ }},
	{Key: "sfn", Field: "stacks_fn", State: "stacksFn", Kind: kindText, Max: MaxViewQuery, at: func(v *View) any { return &v.StacksFn }},
	{Key: "sn", Field: "stacks_node", State: "stacksNode", Kind: kindText, Max: MaxViewPath, at: func(v *View) any { return &v.StacksNode }},
	// A combined view (/v, PROTOCOL.md §together): its traces and their offsets.
	{Key: "t", Field: "traces", State: "traces", Kind: kindTraces, Max: MaxTogether, at: func(v *View) any { return &v.Traces }},
	{Key: "off", Field: "offsets", State: "offsets", Kind: kindOffsets, Max: MaxTogether, at: func(v *View) any { return &v.Offsets }},
}

// StacksViews are the stacks panel's views (`sv`), the default first: the
// flame graph, the top-down and bottom-up (inverted) call trees, and the
// selected function's callers and callees.
var StacksViews = []string{"flame", "top", "bottom", "butterfly"}

// ViewParams returns a copy of the URL-state grammar's table.
func ViewParams() []ViewParam { return append([]ViewParam(nil), viewParams...) }

// viewportLimits are the bounds of one websocket viewport request
// (PROTOCOL.md §4), as the page receives them.
var viewportLimits = struct {
	Width  int   `json:"width"`  // pixels
	Tracks int   `json:"tracks"` // track ids
	Cells  int   `json:"cells"`  // tracks × (width+1)
	Types  int   `json:"types"`  // hidden type ids
	Offset int64 `json:"offset"` // ns of a combined view's offset, either way
}{render.MaxWidth, render.MaxTracks, render.MaxCells, MaxViewIDs, int64(MaxOffset)}

// ViewSpecJS returns the ES module ui/static/js/urlspec.js: the table of
// [ViewParams] and the viewport limits, for the page. `go generate ./web`
// writes it; a test fails when the committed file differs.
func ViewSpecJS() []byte {
	var b bytes.Buffer
	b.WriteString(`// Code generated by "go generate ./web" from web/viewspec.go; DO NOT EDIT.
// @ts-check
// The URL-state grammar (web/PROTOCOL.md §6) as one table, and the limits
// of a viewport request (§4). urlstate.js and web.ParseView / View.Encode
// both loop over this table.

'use strict';

/**
 * @typedef {object} ViewParam
 * @property {string} key      the URL parameter
 * @property {string} field    the page data's (web.View's JSON) name
 * @property {string} state    the ViewState property; "" for none
 * @property {'version' | 'start' | 'end' | 'event' | 'id' | 'set' | 'list' | 'enum' | 'text' | 'traces' | 'offsets'} kind
 * @property {string[]} [values] enum: the accepted values, the default first
 * @property {number} [max]     version: newest; set, list: most ids; text: most bytes; traces: most traces; offsets: traces they may name
 */

`)
	fmt.Fprintf(&b, "export const VIEW_VERSION = %d;\n\n", ViewVersion)
	b.WriteString("/** @type {readonly ViewParam[]} */\nexport const VIEW_PARAMS = Object.freeze([\n")
	for _, p := range viewParams {
		j, err := json.Marshal(p)
		if err != nil {
			panic(err) // strings and ints only
		}
		fmt.Fprintf(&b, "  %s,\n", j)
	}
	b.WriteString("]);\n\n")
	j, err := json.Marshal(viewportLimits)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(&b, "/** Most pixels, tracks, tracks × (width+1) and hidden types of one viewport request, and the largest offset of a combined view's trace. */\nexport const VIEWPORT_LIMITS = Object.freeze(%s);\n", j)
	return b.Bytes()
}

// parse sets p's field of v from a URL value.
func (p *ViewParam) parse(v *View, s string) error {
	switch p.Kind {
	case kindVersion:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return errors.New("not a version number")
		}
		if n > p.Max {
			return fmt.Errorf("version %d is newer than this viewer (%d)", n, p.Max)
		}
	case kindStart, kindEnd:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("not a time in nanoseconds")
		}
		*p.at(v).(*trace.Time) = trace.Time(n)
	case kindEvent:
		ref, err := ParseEventRef(s)
		if err != nil {
			return err
		}
		*p.at(v).(**EventRef) = &ref
	case kindID:
		n, err := parseID(s)
		if err != nil {
			return err
		}
		tr := trace.TrackID(n)
		*p.at(v).(**trace.TrackID) = &tr
	case kindSet, kindList:
		ids, err := parseIDs(s, p.Kind == kindSet, p.Max)
		if err != nil {
			return err
		}
		switch d := p.at(v).(type) {
		case *[]trace.TrackID:
			*d = convertIDs[trace.TrackID](ids)
		case *[]trace.TypeID:
			*d = convertIDs[trace.TypeID](ids)
		case *[]span.TrackID:
			*d = convertIDs[span.TrackID](ids)
		}
	case kindEnum:
		if !slices.Contains(p.Values, s) {
			return errors.New("not " + strings.Join(p.Values, " or "))
		}
		*p.at(v).(*string) = s
	case kindText:
		if len(s) > p.Max {
			return fmt.Errorf("longer than %d bytes", p.Max)
		}
		*p.at(v).(*string) = strings.ToValidUTF8(s, "\uFFFD")
	case kindTraces:
		ids, err := parseTraceIDs(s, p.Max)
		if err != nil {
			return err
		}
		*p.at(v).(*[]uuid.UUID) = ids
	case kindOffsets:
		offs, err := parseOffsets(s, p.Max)
		if err != nil {
			return err
		}
		*p.at(v).(*[]TraceOffset) = offs
	}
	return nil
}

// setDefault sets p's field of v to its default.
func (p *ViewParam) setDefault(v *View) {
	switch p.Kind {
	case kindVersion:
		*p.at(v).(*int) = ViewVersion
	case kindSet, kindList:
		switch d := p.at(v).(type) {
		case *[]trace.TrackID:
			*d = []trace.TrackID{}
		case *[]trace.TypeID:
			*d = []trace.TypeID{}
		case *[]span.TrackID:
			*d = []span.TrackID{}
		}
	case kindEnum:
		*p.at(v).(*string) = p.Values[0]
	case kindTraces:
		*p.at(v).(*[]uuid.UUID) = []uuid.UUID{}
	case kindOffsets:
		*p.at(v).(*[]TraceOffset) = []TraceOffset{}
	}
}

// format returns p's value in v as written in a URL, or "" when it is the
// default (left out).
func (p *ViewParam) format(v *View) string {
	switch p.Kind {
	case kindVersion:
		return strconv.Itoa(ViewVersion)
	case kindStart, kindEnd:
		if v.HasRange {
			return strconv.FormatInt(int64(*p.at(v).(*trace.Time)), 10)
		}
	case kindEvent:
		if ref := *p.at(v).(**EventRef); ref != nil {
			return ref.String()
		}
	case kindID:
		if id := *p.at(v).(**trace.TrackID); id != nil {
			return strconv.Itoa(int(*id))
		}
	case kindSet, kindList:
		var ids []int32
		switch d := p.at(v).(type) {
		case *[]trace.TrackID:
			ids = convertIDs[int32](*d)
		case *[]trace.TypeID:
			ids = convertIDs[int32](*d)
		case *[]span.TrackID:
			ids = convertIDs[int32](*d)
		}
		if p.Kind == kindSet {
			return formatSet(ids)
		}
		return formatList(ids)
	case kindEnum:
		if s := *p.at(v).(*string); s != "" && s != p.Values[0] {
			return s
		}
	case kindText:
		return url.QueryEscape(*p.at(v).(*string))
	case kindTraces:
		return formatTraceIDs(*p.at(v).(*[]uuid.UUID))
	case kindOffsets:
		return formatOffsets(*p.at(v).(*[]TraceOffset))
	}
	return ""
}
