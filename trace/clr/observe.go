package clr

import (
	"strings"

	"viewer/trace"
)

// MethodObserver builds a [MethodMap] from a trace's runtime events while they
// stream by: feed it every event in order with Observe, then use Map.
type MethodObserver struct {
	Map      *MethodMap
	relevant []int8 // per TypeID: 0 not yet seen, 1 method/module event, -1 other
}

// NewMethodObserver returns an observer with an empty map.
func NewMethodObserver() *MethodObserver { return &MethodObserver{Map: NewMethodMap()} }

// Observe looks at one event; for the runtime's method and module events it
// decodes the payload (r.Details) and records the method or module.
func (s *MethodObserver) Observe(r trace.Reader, e trace.Event) {
	if e.Type < 0 {
		return
	}
	for int(e.Type) >= len(s.relevant) {
		s.relevant = append(s.relevant, 0)
	}
	m := r.Meta()
	if s.relevant[e.Type] == 0 {
		s.relevant[e.Type] = -1
		if int(e.Type) < len(m.Types) && isMethodEvent(&m.Types[e.Type]) {
			s.relevant[e.Type] = 1
		}
	}
	if s.relevant[e.Type] < 0 {
		return
	}
	d, err := r.Details(e)
	if err != nil {
		return
	}
	s.Map.Observe(e.Time, &m.Types[e.Type], d.Fields)
}

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
