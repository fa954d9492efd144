package clr

import "viewer/trace"

// SampleEvent is the name of the sample profiler's event: one stack
// sample of one thread.
const SampleEvent = "Thread/Sample"

// Symbols names the frames of a .NET trace's stacks. Feed it every event
// in reading order with Observe; once reading has ended, Finish resolves
// (method names mostly arrive in the rundown at the end of a session, so
// no frame can be named before the whole trace has been seen) and
// Symbolize names addresses, safely from many goroutines. It implements
// the symbol source that the index (render.SymbolSource) and `viewer
// dump` plug in.
type Symbols struct {
	methods    *MethodObserver
	sampleType []int8 // per TypeID: 0 not yet seen, 1 SampleEvent, -1 other
	samples    []sampleStack
	noCount    bool // NoCount: Finish counts no frames
}

// sampleStack is the stack of one sample event, kept until Finish counts
// how many of its frames resolve.
type sampleStack struct {
	time  trace.Time
	stack trace.StackID
}

// NewSymbols returns a symbol source that knows no methods yet.
func NewSymbols() *Symbols { return &Symbols{methods: NewMethodObserver()} }

// RangesOnly makes s keep what Finish's count needs and no names (see
// MethodMap.RangesOnly), for callers that only count resolved frames;
// Symbolize then names no function. Call it before Observe.
func (s *Symbols) RangesOnly() { s.methods.Map.RangesOnly() }

// NoCount makes Finish count nothing (it returns 0, 0), for callers that
// only Symbolize (`viewer dump`): counting resolves every frame of every
// sample once more. Call it before Observe.
func (s *Symbols) NoCount() { s.noCount = true }

// Observe looks at one event: method and module events teach it names,
// sample events' stacks are kept for the frame count.
func (s *Symbols) Observe(r trace.Reader, e trace.Event) {
	s.methods.Observe(r, e)
	if e.Stack == trace.NoStack || e.Type < 0 || s.noCount {
		return
	}
	for int(e.Type) >= len(s.sampleType) {
		s.sampleType = append(s.sampleType, 0)
	}
	if s.sampleType[e.Type] == 0 {
		s.sampleType[e.Type] = -1
		if m := r.Meta(); int(e.Type) < len(m.Types) && m.Types[e.Type].Name == SampleEvent {
			s.sampleType[e.Type] = 1
		}
	}
	if s.sampleType[e.Type] > 0 {
		s.samples = append(s.samples, sampleStack{e.Time, e.Stack})
	}
}

// Finish ends observing and returns how many frames the sample events'
// stacks have and how many of them resolve to a method (0, 0 when the
// trace has no sample stacks). r is the reader the events came from.
func (s *Symbols) Finish(r trace.Reader) (frames, resolved int64) {
	s.methods.Map.Finish()
	var all []FrameAt
	for _, sm := range s.samples {
		for _, a := range r.Stack(sm.stack) {
			all = append(all, FrameAt{sm.time, a})
		}
	}
	s.samples = nil
	return int64(len(all)), s.methods.Map.CountResolved(all)
}

// Symbolize names the method that holds addr at time t; the process does
// not matter (a .NET trace is one process). Call it only after Finish.
func (s *Symbols) Symbolize(pid int64, t trace.Time, addr uint64) (trace.Frame, bool) {
	return s.methods.Map.Resolve(t, addr)
}

// SymbolizeSpan is Symbolize that also returns the times [from, to)
// around t over which the answer stays the same (see
// MethodMap.ResolveSpan), so that a caller can name a stack once and
// reuse the names for every sample of that stack inside the span.
func (s *Symbols) SymbolizeSpan(pid int64, t trace.Time, addr uint64) (f trace.Frame, ok bool, from, to trace.Time) {
	return s.methods.Map.ResolveSpan(t, addr)
}
