package clr

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"viewer/trace"
)

// Always is the load time of a method that existed for the whole trace
// (the rundown enumerates those at the end of a session).
const Always trace.Time = -1 << 63

// Method is the code range of one managed method.
type Method struct {
	Start    uint64
	Size     uint32
	Name     string // Namespace.Name(signature), as PerfView shows it
	ModuleID uint64
	Loaded   trace.Time // the method is valid from this time on (Always for rundown)
	Unloaded trace.Time // and until this time (MaxTime when never unloaded)

	order uint32 // insertion order: ties on Start keep it when sorted
	later uint32 // when not 0, the name is MethodMap.named(later-1) (AddMethodLater)
}

// MaxTime is the end of a method that is never unloaded.
const MaxTime trace.Time = 1<<63 - 1

// MethodMap resolves instruction addresses of managed code to methods, by
// time: a method loaded at T resolves addresses of samples taken at or
// after T. Build it with AddMethod/Unload/AddModule (or Observe), then
// call Resolve; it is safe for concurrent Resolve calls once built.
type MethodMap struct {
	// chunks hold the methods in the order they were added (a method's
	// order is its index here); they never move.
	chunks [][]Method
	n      int
	// byStart is the methods in (Start, order) order, as keys: sorting
	// and searching 16-byte keys costs a fraction of moving the 64-byte
	// methods (a rundown enumerates a hundred thousand of them).
	byStart []methodKey
	maxEnd  []uint64          // maxEnd[i] = max end of the methods byStart[0..i]
	sorted  bool              // byStart and maxEnd hold every method
	modules map[uint64]string // module id → short name
	// ranges, when not nil, holds the methods instead (RangesOnly).
	ranges *spans
	// namer names the methods added with AddMethodLater, the first time
	// Resolve needs them; names caches what it said.
	namer func(i int) string
	names []atomic.Pointer[string]
}

// NewMethodMap returns an empty map.
func NewMethodMap() *MethodMap { return &MethodMap{modules: map[uint64]string{}, sorted: true} }

// RangesOnly makes the map keep what Resolve's ok needs and nothing
// more, for callers that only count resolved frames (`viewer stats`,
// through CountResolved): no names, and address ranges in compact chunks
// that are never sorted (see spans). Call it before adding anything.
func (m *MethodMap) RangesOnly() { m.ranges = &spans{} }

// AddMethod records a method loaded at t (Always for rundown entries).
// Methods are gathered in chunks as they come and sorted once, by
// Finish or the first Resolve.
func (m *MethodMap) AddMethod(t trace.Time, start uint64, size uint32, name string, moduleID uint64) {
	if m.ranges != nil {
		m.ranges.add(start, size, t)
		return
	}
	m.add(Method{Start: start, Size: size, Name: name, ModuleID: moduleID, Loaded: t, Unloaded: MaxTime})
}

// add appends a method to the chunks and returns it.
func (m *MethodMap) add(me Method) *Method {
	if k := len(m.chunks); k == 0 || len(m.chunks[k-1]) == methodChunk {
		m.chunks = append(m.chunks, make([]Method, 0, methodChunk))
	}
	me.order = uint32(m.n)
	c := &m.chunks[len(m.chunks)-1]
	*c = append(*c, me)
	m.n++
	m.sorted = false
	return &(*c)[len(*c)-1]
}

// methodChunk is how many methods a chunk holds: methods are gathered
// in chunks (no copying while they come) and indexed once, by sort.
const methodChunk = 4096

// at returns the method of order i.
func (m *MethodMap) at(i uint32) *Method { return &m.chunks[i/methodChunk][i%methodChunk] }

// AddMethodLater records a method as AddMethod does, leaving its name to
// be asked of namer(i) when Resolve first needs it: a trace names
// every method of a process, and its samples hit a few hundred. namer
// must be the same for every call and safe for concurrent use once the
// map is built; i is the caller's.
func (m *MethodMap) AddMethodLater(t trace.Time, start uint64, size uint32, moduleID uint64, namer func(i int) string, i int) {
	if m.ranges != nil {
		m.ranges.add(start, size, t)
		return
	}
	m.namer = namer
	me := m.add(Method{Start: start, Size: size, ModuleID: moduleID, Loaded: t, Unloaded: MaxTime})
	me.later = uint32(i + 1)
	if len(m.names) <= i { // grown in place: names past len are still zero
		m.names = slices.Grow(m.names, i+1-len(m.names))[:i+1]
	}
}

// name returns a method's name, asking the namer the first time.
func (m *MethodMap) name(me *Method) string {
	if me.later == 0 {
		return me.Name
	}
	p := &m.names[me.later-1]
	if s := p.Load(); s != nil {
		return *s
	}
	s := m.namer(int(me.later - 1))
	p.Store(&s) // goroutines that race here store the same name
	return s
}

// Unload ends, at t, the validity of the newest method starting at start.
func (m *MethodMap) Unload(t trace.Time, start uint64) {
	if m.ranges != nil {
		m.ranges.unload(t, start)
		return
	}
	for k := len(m.chunks) - 1; k >= 0; k-- { // the newest first
		c := m.chunks[k]
		for i := len(c) - 1; i >= 0; i-- {
			if me := &c[i]; me.Start == start && me.Unloaded == MaxTime && me.Loaded <= t {
				me.Unloaded = t
				return
			}
		}
	}
}

// AddModule names a module by its IL or native path.
func (m *MethodMap) AddModule(id uint64, filePath string) {
	if filePath == "" {
		return
	}
	if _, ok := m.modules[id]; ok {
		return
	}
	base := path.Base(strings.ReplaceAll(filePath, `\`, "/"))
	if ext := path.Ext(base); strings.EqualFold(ext, ".dll") || strings.EqualFold(ext, ".exe") || strings.EqualFold(ext, ".so") {
		base = strings.TrimSuffix(base, ext)
	}
	m.modules[id] = base
}

// Len returns the number of methods recorded.
func (m *MethodMap) Len() int {
	if m.ranges != nil {
		return m.ranges.n
	}
	return m.n
}

func (m *MethodMap) sort() {
	if m.sorted {
		return
	}
	keys := slices.Grow(m.byStart[:0], m.n)
	for _, c := range m.chunks {
		for i := range c {
			keys = append(keys, methodKey{c[i].Start, c[i].order})
		}
	}
	slices.SortFunc(keys, func(a, b methodKey) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	m.byStart = keys
	m.maxEnd = slices.Grow(m.maxEnd[:0], len(keys))[:len(keys)]
	var hi uint64
	for i, k := range keys {
		hi = max(hi, k.start+uint64(m.at(k.order).Size))
		m.maxEnd[i] = hi
	}
	m.sorted = true
}

// methodKey is a method in byStart: its start and its order (where it
// is in the chunks).
type methodKey struct {
	start uint64
	order uint32
}

// Finish prepares the map for concurrent Resolve calls.
func (m *MethodMap) Finish() {
	if m.ranges != nil {
		return // CountResolved needs no order
	}
	m.sort()
}

// Resolve returns the frame for addr in a sample taken at t. Among the
// methods whose range holds addr and that are valid at t it picks the one
// loaded last.
func (m *MethodMap) Resolve(t trace.Time, addr uint64) (trace.Frame, bool) {
	if m.ranges != nil {
		return trace.Frame{Addr: addr}, m.ranges.covers(t, addr)
	}
	m.sort()
	// The last method starting at or below addr; earlier ones may still
	// contain it while their running max end is above addr.
	i, _ := slices.BinarySearchFunc(m.byStart, addr, func(k methodKey, a uint64) int {
		if k.start <= a {
			return -1
		}
		return 1
	})
	var best *Method
	for i--; i >= 0 && m.maxEnd[i] > addr; i-- {
		me := m.at(m.byStart[i].order)
		if addr >= me.Start+uint64(me.Size) || t < me.Loaded || t >= me.Unloaded {
			continue
		}
		if best == nil || me.Loaded > best.Loaded {
			best = me
		}
	}
	if best == nil {
		return trace.Frame{Addr: addr}, false
	}
	return trace.Frame{Addr: addr, Module: m.modules[best.ModuleID], Func: m.name(best)}, true
}

// MethodName joins a runtime method's namespace, name and signature the
// way PerfView shows it: Namespace.Name(args), the signature from its
// first parenthesis.
func MethodName(namespace, name, signature string) string {
	s := name
	if namespace != "" {
		s = namespace + "." + name
	}
	if i := strings.IndexByte(signature, '('); i >= 0 {
		s += signature[i:]
	}
	return s
}

// Observe feeds one decoded runtime event to the map: method loads,
// rundown method enumerations, unloads and module loads, recognized by
// the event's schema name. Other events are ignored.
func (m *MethodMap) Observe(t trace.Time, et *trace.EventType, fields []trace.Field) {
	k := kindOf(et)
	names := k.fields(m.ranges != nil)
	if len(names) == 0 {
		return
	}
	var vals [maxMethodFields]trace.Value
	for i, n := range names {
		vals[i] = fieldMap(fields).get(n)
	}
	m.observe(k, t, vals[:len(names)])
}

// methodEvent is what a runtime event tells a method map: its kind
// (methodLoad, methodUnload, moduleLoad, or 0 for nothing) and whether
// it comes from the rundown provider.
type methodEvent uint8

const (
	methodLoad methodEvent = 1 + iota
	methodUnload
	moduleLoad

	fromRundown methodEvent = 0x80
)

// kindOf classifies an event type by its schema name.
func kindOf(et *trace.EventType) methodEvent {
	var k methodEvent
	switch et.Name {
	case "Method/LoadVerbose", "Method/DCStartVerbose", "Method/DCStopVerbose":
		k = methodLoad
	case "Method/UnloadVerbose", "Method/Unload":
		k = methodUnload
	case "Loader/ModuleLoad", "Loader/ModuleDCStart", "Loader/ModuleDCStop",
		"Loader/DomainModuleLoad", "Loader/DomainModuleDCStart", "Loader/DomainModuleDCStop":
		k = moduleLoad
	default:
		return 0
	}
	if strings.HasSuffix(et.Provider, "Rundown") {
		k |= fromRundown
	}
	return k
}

// The payload fields each kind of event is read for, in the order
// observe takes them; a map that keeps ranges only reads a prefix.
var (
	loadFields   = []string{"MethodStartAddress", "MethodSize", "ModuleID", "MethodNamespace", "MethodName", "MethodSignature"}
	unloadFields = []string{"MethodStartAddress"}
	moduleFields = []string{"ModuleID", "ModuleILPath", "ModuleNativePath"}
)

const maxMethodFields = 6

// fields returns the payload fields an event of kind k is read for; none
// when the event does not change the map.
func (k methodEvent) fields(ranges bool) []string {
	switch k &^ fromRundown {
	case methodLoad:
		if ranges {
			return loadFields[:2]
		}
		return loadFields
	case methodUnload:
		if k&fromRundown == 0 {
			return unloadFields
		}
	case moduleLoad:
		if !ranges {
			return moduleFields
		}
	}
	return nil
}

// observe applies an event of kind k at t, given the values of
// k.fields(m.ranges != nil).
func (m *MethodMap) observe(k methodEvent, t trace.Time, v []trace.Value) {
	switch k &^ fromRundown {
	case methodLoad:
		when := t
		if k&fromRundown != 0 {
			when = Always
		}
		var name string
		var module uint64
		if len(v) == len(loadFields) {
			name, module = MethodName(stringOf(v[3]), stringOf(v[4]), stringOf(v[5])), v[2].Uint()
		}
		m.AddMethod(when, v[0].Uint(), uint32(v[1].Uint()), name, module)
	case methodUnload:
		m.Unload(t, v[0].Uint())
	case moduleLoad:
		p := stringOf(v[1])
		if p == "" {
			p = stringOf(v[2])
		}
		m.AddModule(v[0].Uint(), p)
	}
}

func stringOf(v trace.Value) string {
	if v.Kind() != trace.KindString {
		return ""
	}
	return v.Str()
}

type fieldMap []trace.Field

func (f fieldMap) get(name string) trace.Value {
	for _, x := range f {
		if x.Name == name {
			return x.Value
		}
	}
	return trace.Value{}
}

// ResolveSpan is Resolve that also returns the times [from, to) around t
// over which the answer for addr stays the same: the method map changes
// its answer for an address only when a method holding it is loaded or
// unloaded, so a caller may reuse a frame for any sample time inside the
// span (the bounds may be narrower than the longest such span, never
// wider).
func (m *MethodMap) ResolveSpan(t trace.Time, addr uint64) (f trace.Frame, ok bool, from, to trace.Time) {
	m.sort()
	i, _ := slices.BinarySearchFunc(m.byStart, addr, func(k methodKey, a uint64) int {
		if k.start <= a {
			return -1
		}
		return 1
	})
	from, to = Always, MaxTime
	var best *Method
	for i--; i >= 0 && m.maxEnd[i] > addr; i-- {
		me := m.at(m.byStart[i].order)
		if addr >= me.Start+uint64(me.Size) {
			continue
		}
		switch {
		case t < me.Loaded:
			to = min(to, me.Loaded) // it may take over from its load on
		case t >= me.Unloaded:
			from = max(from, me.Unloaded) // it may have held addr until its unload
		case best == nil || me.Loaded > best.Loaded:
			best = me
		}
	}
	if best == nil {
		return trace.Frame{Addr: addr}, false, from, to
	}
	from, to = max(from, best.Loaded), min(to, best.Unloaded)
	return trace.Frame{Addr: addr, Module: m.modules[best.ModuleID], Func: m.name(best)}, true, from, to
}
