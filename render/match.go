package render

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"viewer/trace"
)

// ExprKind is the kind of an [Expr] cond. The set may grow.
type ExprKind uint8

const (
	ExprAll  ExprKind = iota // every event (the zero Expr)
	ExprAnd                  // every one of Args holds
	ExprOr                   // one of Args holds
	ExprNot                  // Args[0] does not hold
	ExprPred                 // Pred holds: a payload field or a header key compared with a value
	ExprName                 // Text is a case-insensitive substring of the type's "provider/name"
	// ExprText is free text: Text is a case-insensitive substring of the
	// type's "provider/name", of a payload field's value (struct members
	// and array elements included), of the label or of a label's value
	// (activity ids as GUIDs).
	ExprText
)

// Expr is a condition on events: and, or, not over atoms (package
// render/query parses it from a search query). The zero Expr matches
// every event.
//
// The field of an ExprPred names a payload field ("a.b" a struct member);
// where an event's type has no payload field of that name, the header
// keys of `viewer dump` name the event's header instead: provider,
// event (the type's name), id (its numeric id or code), version, opcode,
// level, track (the track's name), pid, tid, cpu, time (ns), and label
// the one-line label. "@KEY" always names the header key KEY.
type Expr struct {
	Kind ExprKind
	Args []Expr
	Pred Predicate
	Text string
}

// And returns the conjunction of es (the zero Expr for none).
func And(es ...Expr) Expr {
	var args []Expr
	for _, e := range es {
		if e.Kind != ExprAll {
			args = append(args, e)
		}
	}
	switch len(args) {
	case 0:
		return Expr{}
	case 1:
		return args[0]
	}
	return Expr{Kind: ExprAnd, Args: args}
}

// ErrBudget is the error a query yields when it has decoded as many
// events as its [Filter].Budget allows: the hits before it stand, there
// may be more.
var ErrBudget = errors.New("render: the query's work budget ran out")

// headerKey is an event-header fact a predicate can name (see [Expr]).
type headerKey uint8

const (
	hkNone headerKey = iota
	hkProvider
	hkEvent
	hkID
	hkVersion
	hkOpcode
	hkLevel
	hkTrack
	hkPID
	hkTID
	hkCPU
	hkTime
	hkLabel
)

// headerKeys spells the header keys; the type-level ones come first
// (hkProvider..hkLevel are decided per type, before any event is read).
var headerKeys = map[string]headerKey{
	"provider": hkProvider, "event": hkEvent, "id": hkID, "version": hkVersion,
	"opcode": hkOpcode, "level": hkLevel, "track": hkTrack, "pid": hkPID,
	"tid": hkTID, "cpu": hkCPU, "time": hkTime, "label": hkLabel,
}

func (k headerKey) typeLevel() bool { return k >= hkProvider && k <= hkLevel }

// typeValue returns a type-level header value of et.
func (k headerKey) typeValue(et *trace.EventType) trace.Value {
	switch k {
	case hkProvider:
		return trace.StringValue(et.Provider)
	case hkEvent:
		return trace.StringValue(et.Name)
	case hkID:
		return trace.IntValue(et.ID)
	case hkVersion:
		return trace.IntValue(int64(et.Version))
	case hkOpcode:
		return trace.IntValue(int64(et.Opcode))
	case hkLevel:
		return trace.IntValue(int64(et.Level))
	}
	return trace.Value{}
}

// cpred is a compiled comparison: the value's text parsed once.
type cpred struct {
	op    Op
	text  string // the value
	lower string // its lower case, for OpContains
	re    *regexp.Regexp
	i     int64
	iok   bool
	u     uint64
	uok   bool
	neg   bool // text is a negative integer
	f     float64
	fok   bool
}

// compilePred parses p's value once.
func compilePred(p Predicate) (*cpred, error) {
	c := &cpred{op: p.Op, text: p.Value, lower: strings.ToLower(p.Value)}
	if p.Op == OpMatch {
		re, err := CompileRegexp(p.Value)
		if err != nil {
			return nil, err
		}
		c.re = re
	}
	if n, err := strconv.ParseInt(p.Value, 0, 64); err == nil {
		c.i, c.iok, c.neg = n, true, n < 0
	}
	if n, err := strconv.ParseUint(p.Value, 0, 64); err == nil {
		c.u, c.uok = n, true
	}
	if g, err := strconv.ParseFloat(p.Value, 64); err == nil && g == g {
		c.f, c.fok = g, true
	}
	return c, nil
}

// MaxRegexp is the longest regular expression a predicate may hold.
const MaxRegexp = 256

// CompileRegexp compiles a predicate's regular expression (RE2 syntax,
// case-insensitive; matching takes time linear in the text), or says
// why it cannot.
func CompileRegexp(s string) (*regexp.Regexp, error) {
	if len(s) > MaxRegexp {
		return nil, errors.New("a regular expression longer than " + strconv.Itoa(MaxRegexp) + " bytes")
	}
	if _, err := regexp.Compile(s); err != nil { // to say what is wrong in the user's words
		return nil, errors.New("bad regular expression: " + err.Error())
	}
	return regexp.Compile("(?i)" + s)
}

// match reports whether v satisfies the comparison, as [Predicate.Match]
// decides it.
func (c *cpred) match(v *trace.Value) bool {
	switch c.op {
	case OpContains:
		if v.Kind() == trace.KindString {
			return hasFold(v.Str(), c.lower)
		}
		return hasFold(v.String(), c.lower)
	case OpMatch:
		if v.Kind() == trace.KindString {
			return c.re.MatchString(v.Str())
		}
		return c.re.MatchString(v.String())
	}
	cmp, ok := c.compareNumber(v)
	if !ok {
		if v.Kind() == trace.KindString {
			cmp = strings.Compare(v.Str(), c.text)
		} else {
			cmp = strings.Compare(v.String(), c.text)
		}
	}
	return opHolds(c.op, cmp)
}

func opHolds(op Op, c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// compareNumber is compareNumber with the value's text parsed already.
func (c *cpred) compareNumber(v *trace.Value) (int, bool) {
	switch v.Kind() {
	case trace.KindInt:
		if c.iok {
			return cmpOrdered(v.Int(), c.i), true
		}
	case trace.KindUint, trace.KindHex:
		if c.uok {
			return cmpOrdered(v.Uint(), c.u), true
		}
		if c.neg {
			return 1, true
		}
	}
	f, ok := v.Number()
	if !ok || !c.fok || f != f {
		return 0, false
	}
	return cmpOrdered(f, c.f), true
}

// hasFold reports whether lower (in lower case) is a substring of s
// ignoring case, without allocating when s is ASCII.
func hasFold[S string | []byte](s S, lower string) bool {
	if lower == "" {
		return true
	}
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(string(s)), lower)
		}
	}
	first := lower[0]
	for i := 0; i+len(lower) <= len(s); i++ {
		if toLowerASCII(s[i]) != first {
			continue
		}
		j := 1
		for j < len(lower) && toLowerASCII(s[i+j]) == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

func toLowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// condKind is the kind of a compiled cond.
type condKind uint8

const (
	nTrue condKind = iota
	nFalse
	nAnd
	nOr
	nNot
	nPred   // a predicate whose field is resolved per type
	nName   // type name substring (type-level)
	nText   // free text
	nTypes  // type id set (type-level)
	nTracks // track id set
	nField  // a payload field (after resolution)
	nHeader // an event-level header key (after resolution)
)

// cond is a compiled condition; a plan holds one specialized to a type.
type cond struct {
	kind   condKind
	args   []cond
	p      *cpred
	field  string    // nPred: as written; nField: the top-level field's name
	path   []string  // nField: the members below the top-level field
	key    headerKey // nHeader
	slot   int       // nField: index into the plan's slots
	text   string    // nName, nText: lower case
	types  map[trace.TypeID]bool
	tracks map[trace.TrackID]bool
}

var (
	trueCond  = cond{kind: nTrue}
	falseCond = cond{kind: nFalse}
)

// compileFilter compiles every condition of f into one cond.
func compileFilter(f Filter) (cond, error) {
	var args []cond
	if len(f.Types) > 0 {
		n := cond{kind: nTypes, types: make(map[trace.TypeID]bool, len(f.Types))}
		for _, t := range f.Types {
			n.types[t] = true
		}
		args = append(args, n)
	}
	if f.Name != "" {
		args = append(args, cond{kind: nName, text: strings.ToLower(f.Name)})
	}
	for _, p := range f.Where {
		c, err := compilePred(p)
		if err != nil {
			return cond{}, err
		}
		args = append(args, cond{kind: nPred, p: c, field: p.Field})
	}
	if len(f.Tracks) > 0 {
		n := cond{kind: nTracks, tracks: make(map[trace.TrackID]bool, len(f.Tracks))}
		for _, t := range f.Tracks {
			n.tracks[t] = true
		}
		args = append(args, n)
	}
	e, err := compileExpr(f.Expr, 0)
	if err != nil {
		return cond{}, err
	}
	if e.kind != nTrue {
		args = append(args, e)
	}
	switch len(args) {
	case 0:
		return trueCond, nil
	case 1:
		return args[0], nil
	}
	return cond{kind: nAnd, args: args}, nil
}

// MaxExprDepth bounds the nesting of an Expr.
const MaxExprDepth = 64

func compileExpr(e Expr, depth int) (cond, error) {
	if depth > MaxExprDepth {
		return cond{}, errors.New("a query nested deeper than " + strconv.Itoa(MaxExprDepth) + " levels")
	}
	switch e.Kind {
	case ExprAll:
		return trueCond, nil
	case ExprAnd, ExprOr, ExprNot:
		if e.Kind == ExprNot && len(e.Args) != 1 {
			return cond{}, errors.New("render: internal error: not takes one operand")
		}
		n := cond{kind: map[ExprKind]condKind{ExprAnd: nAnd, ExprOr: nOr, ExprNot: nNot}[e.Kind]}
		for _, a := range e.Args {
			c, err := compileExpr(a, depth+1)
			if err != nil {
				return cond{}, err
			}
			n.args = append(n.args, c)
		}
		return n, nil
	case ExprPred:
		c, err := compilePred(e.Pred)
		if err != nil {
			return cond{}, err
		}
		return cond{kind: nPred, p: c, field: e.Pred.Field}, nil
	case ExprName:
		return cond{kind: nName, text: strings.ToLower(e.Text)}, nil
	case ExprText:
		return cond{kind: nText, text: strings.ToLower(e.Text)}, nil
	}
	return cond{}, errors.New("render: internal error: unknown expression kind")
}

// plan is a filter specialized to one event type: what is left to decide
// per event, and what that needs.
type plan struct {
	root  cond
	slots []int // top-level field indexes (into EventType.Fields) the residual names
	// spill: the residual needs more of the event than its time, track
	// and type (its spilled header, its payload).
	spill bool
	// While specializing: the type, its description (nil for a type
	// the trace does not describe) and whether the reader decodes
	// chosen fields.
	ty      trace.TypeID
	et      *trace.EventType
	decoder bool
}

// specialize returns n with every type-level condition decided for the
// plan's type, recording in pl what the rest needs.
func (pl *plan) specialize(n cond) cond {
	et := pl.et
	switch n.kind {
	case nAnd, nOr:
		stop, skip := falseCond, trueCond // the value that decides an and, and the one it drops
		if n.kind == nOr {
			stop, skip = trueCond, falseCond
		}
		var args []cond
		for _, a := range n.args {
			s := pl.specialize(a)
			if s.kind == stop.kind {
				return stop
			}
			if s.kind != skip.kind {
				args = append(args, s)
			}
		}
		switch len(args) {
		case 0:
			return skip
		case 1:
			return args[0]
		}
		return cond{kind: n.kind, args: args}
	case nNot:
		s := pl.specialize(n.args[0])
		switch s.kind {
		case nTrue:
			return falseCond
		case nFalse:
			return trueCond
		}
		return cond{kind: nNot, args: []cond{s}}
	case nTypes:
		if n.types[pl.ty] {
			return trueCond
		}
		return falseCond
	case nName:
		if et != nil && hasFold(typeName(et), n.text) {
			return trueCond
		}
		return falseCond
	case nText:
		if et != nil && hasFold(typeName(et), n.text) {
			return trueCond
		}
		pl.spill = true
		return n
	case nPred:
		return pl.resolve(n)
	}
	return n
}

// resolve turns a predicate into a payload-field or header condition
// for the plan's type (see Expr for the rule).
func (pl *plan) resolve(n cond) cond {
	et, decoder := pl.et, pl.decoder
	top, rest, _ := strings.Cut(n.field, ".")
	if et != nil && et.Fields != nil && !strings.HasPrefix(n.field, "@") {
		for i, fs := range et.Fields {
			if fs.Name != top {
				continue
			}
			f := cond{kind: nField, p: n.p, field: top, slot: -1}
			if rest != "" {
				f.path = strings.Split(rest, ".")
			}
			pl.spill = true
			if decoder {
				f.slot = len(pl.slots)
				for k, s := range pl.slots {
					if s == i {
						f.slot = k
					}
				}
				if f.slot == len(pl.slots) {
					pl.slots = append(pl.slots, i)
				}
			}
			return f
		}
	}
	k := headerKeys[n.field]
	if h, ok := strings.CutPrefix(n.field, "@"); ok {
		k = headerKeys[h]
		if k == hkNone {
			return falseCond
		}
	}
	if k != hkNone {
		if k.typeLevel() {
			if et == nil {
				return falseCond // an unknown type has no header to compare
			}
			if v := k.typeValue(et); n.p.match(&v) {
				return trueCond
			}
			return falseCond
		}
		switch k {
		case hkLabel:
			pl.spill = true
		case hkCPU:
			pl.spill = true
		}
		return cond{kind: nHeader, p: n.p, key: k}
	}
	if et != nil && et.Fields != nil {
		return falseCond // the schema has no such field
	}
	f := cond{kind: nField, p: n.p, field: top, slot: -1}
	if rest != "" {
		f.path = strings.Split(rest, ".")
	}
	pl.spill = true
	return f
}

func typeName(et *trace.EventType) string {
	if et.Provider != "" {
		return et.Provider + "/" + et.Name
	}
	return et.Name
}

// Matcher decides a [Filter] for the events of one trace: compiled once,
// it decides the type-level conditions once per event type (so types
// that cannot match are skipped before anything is read) and decodes, per
// event, only what the rest needs: the fields a predicate names when the
// reader is a [trace.FieldsDecoder], else the event's details. A Matcher
// is not safe for concurrent use.
type Matcher struct {
	root    cond
	r       trace.Reader
	meta    *trace.Meta
	fd      trace.FieldsDecoder   // r as one, or nil
	da      trace.DetailsAppender // r as one, or nil
	plans   []*plan               // by TypeID, grown as the trace's table grows
	unknown *plan                 // for types the table does not describe
	decodes int64
	// FieldValue's plans, for the path fieldPath
	fieldPlans map[trace.TypeID]*plan
	fieldPath  string

	// per-event scratch
	vals   []trace.Value
	fields []trace.Field
	label  []byte
	text   []byte
}

// NewMatcher compiles f for the events r reads. r's Meta may still grow
// (a trace being streamed): types are planned as they are first met.
func NewMatcher(f Filter, r trace.Reader) (*Matcher, error) {
	root, err := compileFilter(f)
	if err != nil {
		return nil, err
	}
	m := &Matcher{root: root, r: r, meta: r.Meta()}
	m.fd, _ = r.(trace.FieldsDecoder)
	m.da, _ = r.(trace.DetailsAppender)
	return m, nil
}

// noType is the plan key of types the table does not describe.
const noType trace.TypeID = -1 << 31

func (m *Matcher) plan(t trace.TypeID) *plan {
	if t < 0 || int(t) >= len(m.meta.Types) {
		if m.unknown == nil {
			m.unknown = m.newPlan(t, nil)
		}
		return m.unknown
	}
	for int(t) >= len(m.plans) {
		m.plans = append(m.plans, nil)
	}
	if m.plans[t] == nil {
		m.plans[t] = m.newPlan(t, &m.meta.Types[t])
	}
	return m.plans[t]
}

func (m *Matcher) newPlan(t trace.TypeID, et *trace.EventType) *plan {
	pl := &plan{ty: t, et: et, decoder: m.fd != nil && et != nil}
	if et == nil {
		pl.ty = noType
	}
	pl.root = pl.specialize(m.root)
	pl.et = nil
	return pl
}

// TypeCan reports whether any event of type t can match.
func (m *Matcher) TypeCan(t trace.TypeID) bool { return m.plan(t).root.kind != nFalse }

// Match reports whether e matches. An event whose payload the filter
// needs but which does not decode matches nothing.
func (m *Matcher) Match(e *trace.Event) bool {
	pl := m.plan(e.Type)
	switch pl.root.kind {
	case nTrue:
		return true
	case nFalse:
		return false
	}
	st := evalState{m: m, pl: pl, e: e}
	ok := st.eval(&pl.root)
	return ok && !st.failed
}

// Decodes returns how many events Match decoded a payload for.
func (m *Matcher) Decodes() int64 { return m.decodes }

// needsSpill reports whether deciding an event of type t needs more than
// its time and track.
func (m *Matcher) needsSpill(t trace.TypeID) bool { return m.plan(t).spill }

// evalState is what one Match call has decoded so far.
type evalState struct {
	m        *Matcher
	pl       *plan
	e        *trace.Event
	valsDone bool
	detDone  bool
	failed   bool
}

func (st *evalState) eval(n *cond) bool {
	switch n.kind {
	case nTrue:
		return true
	case nFalse:
		return false
	case nAnd:
		for i := range n.args {
			if !st.eval(&n.args[i]) || st.failed {
				return false
			}
		}
		return true
	case nOr:
		for i := range n.args {
			if st.eval(&n.args[i]) {
				return true
			}
			if st.failed {
				return false
			}
		}
		return false
	case nNot:
		return !st.eval(&n.args[0])
	case nTracks:
		return n.tracks[st.e.Track]
	case nHeader:
		v, ok := st.header(n.key)
		return ok && n.p.match(&v)
	case nField:
		if n.slot >= 0 && n.path == nil { // compared in place, not copied
			if !st.decodeSlots() {
				return false
			}
			v := &st.m.vals[n.slot]
			return v.Kind() != trace.KindBad && n.p.match(v)
		}
		v, ok := st.field(n)
		return ok && n.p.match(&v)
	case nText:
		return st.freeText(n.text)
	}
	return false
}

// header returns an event-level header value; ok is false when the
// event has none (`viewer dump` leaves the key out).
func (st *evalState) header(k headerKey) (trace.Value, bool) {
	e, meta := st.e, st.m.meta
	var tr *trace.Track
	if e.Track >= 0 && int(e.Track) < len(meta.Tracks) {
		tr = &meta.Tracks[e.Track]
	}
	switch k {
	case hkTime:
		return trace.IntValue(int64(e.Time)), true
	case hkTrack:
		if tr != nil {
			return trace.StringValue(tr.Name), true
		}
	case hkPID:
		if tr != nil && tr.PID >= 0 {
			return trace.IntValue(tr.PID), true
		}
	case hkTID:
		if tr != nil && tr.TID >= 0 {
			return trace.IntValue(tr.TID), true
		}
	case hkCPU:
		if meta.Has&trace.HasCPU != 0 && e.CPU != trace.NoCPU {
			return trace.IntValue(int64(e.CPU)), true
		}
	case hkLabel:
		if st.details() {
			return trace.StringValue(string(st.m.label)), true
		}
	}
	return trace.Value{}, false
}

// details decodes the event's details into the matcher's scratch, once.
func (st *evalState) details() bool {
	if st.detDone {
		return !st.failed
	}
	st.detDone = true
	m := st.m
	m.decodes++
	if m.da != nil {
		f, l, err := m.da.AppendDetails(m.fields[:0], m.label[:0], *st.e)
		m.fields, m.label = f, l
		if err != nil {
			st.failed = true
		}
		return !st.failed
	}
	d, err := m.r.Details(*st.e)
	if err != nil {
		st.failed = true
		return false
	}
	m.fields, m.label = d.Fields, append(m.label[:0], d.Label...)
	return true
}

// decodeSlots decodes the fields the plan names into the matcher's
// vals, once.
func (st *evalState) decodeSlots() bool {
	if !st.valsDone {
		m := st.m
		st.valsDone = true
		m.decodes++
		m.vals = append(m.vals[:0], make([]trace.Value, len(st.pl.slots))...)
		if err := m.fd.DecodeFields(*st.e, st.pl.slots, m.vals); err != nil {
			st.failed = true
		}
	}
	return !st.failed
}

// field returns the value a nField names.
func (st *evalState) field(n *cond) (trace.Value, bool) {
	var v trace.Value
	if n.slot >= 0 {
		if !st.decodeSlots() {
			return v, false
		}
		v = st.m.vals[n.slot]
		if v.Kind() == trace.KindBad {
			return v, false
		}
	} else {
		if !st.details() {
			return v, false
		}
		var ok bool
		if v, ok = lookup(st.m.fields, n.field); !ok {
			if n.field == "label" && n.path == nil {
				return trace.StringValue(string(st.m.label)), true
			}
			return v, false
		}
	}
	for _, name := range n.path {
		found := false
		for _, f := range v.Fields() {
			if f.Name == name {
				v, found = f.Value, true
				break
			}
		}
		if !found {
			return trace.Value{}, false
		}
	}
	return v, true
}

// freeText reports whether lower occurs in a field value, the label or a
// label value of the event.
func (st *evalState) freeText(lower string) bool {
	if !st.details() {
		return false
	}
	m := st.m
	if hasFold(m.label, lower) {
		return true
	}
	for i := range m.fields {
		if st.valueHas(&m.fields[i].Value, lower) {
			return true
		}
	}
	if st.e.Labels != trace.NoLabels {
		for _, l := range m.r.Labels(st.e.Labels) {
			if st.valueHas(&l.Value, lower) {
				return true
			}
		}
	}
	return false
}

func (st *evalState) valueHas(v *trace.Value, lower string) bool {
	m := st.m
	switch v.Kind() {
	case trace.KindString:
		return hasFold(v.Str(), lower)
	case trace.KindInt:
		m.text = strconv.AppendInt(m.text[:0], v.Int(), 10)
	case trace.KindUint:
		m.text = strconv.AppendUint(m.text[:0], v.Uint(), 10)
	case trace.KindHex:
		m.text = strconv.AppendUint(append(m.text[:0], "0x"...), v.Uint(), 16)
	case trace.KindStruct, trace.KindArray:
		fs := v.Fields()
		for i := range fs {
			if st.valueHas(&fs[i].Value, lower) {
				return true
			}
		}
		return false
	default:
		return hasFold(v.String(), lower)
	}
	return hasFold(m.text, lower)
}

// FieldValue returns the value of the field path (as a predicate names
// it: a payload field, "a.b" a struct member, or a header key) of e,
// decoding only that field where the reader can; ok is false when e has
// no such field or its payload does not decode.
func (m *Matcher) FieldValue(e *trace.Event, path string) (v trace.Value, ok bool) {
	if m.fieldPlans == nil || m.fieldPath != path {
		m.fieldPlans, m.fieldPath = map[trace.TypeID]*plan{}, path
	}
	pl := m.fieldPlans[e.Type]
	if pl == nil {
		var et *trace.EventType
		if e.Type >= 0 && int(e.Type) < len(m.meta.Types) {
			et = &m.meta.Types[e.Type]
		}
		pl = &plan{ty: e.Type, et: et, decoder: m.fd != nil && et != nil}
		pl.root = pl.resolve(cond{kind: nPred, field: path, p: &cpred{}})
		pl.et = nil
		m.fieldPlans[e.Type] = pl
	}
	st := evalState{m: m, pl: pl, e: e}
	switch pl.root.kind {
	case nField:
		v, ok = st.field(&pl.root)
	case nHeader:
		v, ok = st.header(pl.root.key)
	case nTrue, nFalse: // a type-level header key, or no such field
		if k := headerKeys[strings.TrimPrefix(path, "@")]; k.typeLevel() && e.Type >= 0 && int(e.Type) < len(m.meta.Types) {
			v, ok = k.typeValue(&m.meta.Types[e.Type]), true
		}
	}
	return v, ok && !st.failed
}
