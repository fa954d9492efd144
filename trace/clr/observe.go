package clr

import (
	"strings"

	"viewer/trace"
)

// MethodObserver builds a [MethodMap] from a trace's runtime events while they
// stream by: feed it every event in order with Observe, then use Map.
type MethodObserver struct {
	Map      *MethodMap
	relevant []uint8 // per TypeID: 0 not yet seen, else 1 + its methodEvent (1: nothing to read)
	vals     [maxMethodFields]trace.Value
	// later are the method events whose names the map asks for when it
	// needs them (name), read again from r then.
	later  [][]trace.Event // in chunks of laterChunk
	nlater int
	r      trace.Reader
	namer  func(int) string // s.name, made once
}

// FieldReader is implemented by readers that decode chosen top-level
// payload fields of an event without decoding the others (nettrace): a
// trace holds a method event per method, and the map needs a few of
// their fields (only numbers when it keeps ranges only).
type FieldReader interface {
	// ReadFields sets vals[i] to the value of e's top-level field named
	// names[i], as Details would decode it, or to the zero Value when e
	// has no such field. It reports false when e's payload cannot be
	// read.
	ReadFields(e trace.Event, names []string, vals []trace.Value) bool
}

// NewMethodObserver returns an observer with an empty map.
func NewMethodObserver() *MethodObserver { return &MethodObserver{Map: NewMethodMap()} }

// Observe looks at one event; for the runtime's method and module events it
// decodes the fields the map needs (with r's ReadFields when r is a
// [FieldReader], else r.Details) and records the method or module.
func (s *MethodObserver) Observe(r trace.Reader, e trace.Event) {
	if e.Type < 0 {
		return
	}
	for int(e.Type) >= len(s.relevant) {
		s.relevant = append(s.relevant, 0)
	}
	m := r.Meta()
	if s.relevant[e.Type] == 0 {
		s.relevant[e.Type] = 1
		if int(e.Type) < len(m.Types) && isMethodEvent(&m.Types[e.Type]) {
			s.relevant[e.Type] = 1 + uint8(kindOf(&m.Types[e.Type]))
		}
	}
	k := methodEvent(s.relevant[e.Type] - 1)
	names := k.fields(s.Map.ranges != nil)
	if len(names) == 0 {
		return
	}
	vals := s.vals[:len(names)]
	if fr, ok := r.(FieldReader); ok {
		if k&^fromRundown == methodLoad && s.Map.ranges == nil {
			// The name is read when a frame needs it: most never do.
			names = names[:3]
			if !fr.ReadFields(e, names, vals[:3]) {
				return
			}
			when := e.Time
			if k&fromRundown != 0 {
				when = Always
			}
			if s.namer == nil {
				s.namer = s.name
			}
			s.r = r
			if len(s.later) == 0 || len(s.later[len(s.later)-1]) == laterChunk { // chunks: nothing copied as they come
				s.later = append(s.later, make([]trace.Event, 0, laterChunk))
			}
			c := &s.later[len(s.later)-1]
			*c = append(*c, e)
			s.Map.AddMethodLater(when, vals[0].Uint(), uint32(vals[1].Uint()), vals[2].Uint(), s.namer, s.nlater)
			s.nlater++
			return
		}
		if !fr.ReadFields(e, names, vals) {
			return
		}
	} else {
		d, err := r.Details(e)
		if err != nil {
			return
		}
		for i, n := range names {
			vals[i] = fieldMap(d.Fields).get(n)
		}
	}
	s.Map.observe(k, e.Time, vals)
}

// name returns the name of the i-th method added with AddMethodLater,
// decoded from its event with r.Details (safe for concurrent use once
// reading has finished), as Observe would have named it.
func (s *MethodObserver) name(i int) string {
	d, err := s.r.Details(s.later[i/laterChunk][i%laterChunk])
	if err != nil {
		return ""
	}
	f := fieldMap(d.Fields)
	return MethodName(stringOf(f.get(loadFields[3])), stringOf(f.get(loadFields[4])), stringOf(f.get(loadFields[5])))
}

const laterChunk = 4096

func isMethodEvent(et *trace.EventType) bool {
	if !strings.HasPrefix(et.Provider, "Microsoft-Windows-DotNETRuntime") {
		return false
	}
	return strings.HasPrefix(et.Name, "Method/") || strings.HasPrefix(et.Name, "Loader/")
}

// Frames resolves a stack's addresses (leaf first) at time t.
func (m *MethodMap) Frames(t trace.Time, addrs []uint64) []trace.Frame {
	frames := make([]trace.Frame, len(addrs))
	for i, a := range addrs {
		frames[i], _ = m.Resolve(t, a)
	}
	return frames
}
