package clr

import (
	"cmp"
	"path"
	"slices"
	"strings"

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
}

// MaxTime is the end of a method that is never unloaded.
const MaxTime trace.Time = 1<<63 - 1

// MethodMap resolves instruction addresses of managed code to methods, by
// time: a method loaded at T resolves addresses of samples taken at or
// after T. Build it with AddMethod/Unload/AddModule (or Observe), then
// call Resolve; it is safe for concurrent Resolve calls once built.
type MethodMap struct {
	methods []Method
	maxEnd  []uint64 // maxEnd[i] = max end of methods[0..i]
	sorted  bool
	modules map[uint64]string // module id → short name
}

// NewMethodMap returns an empty map.
func NewMethodMap() *MethodMap { return &MethodMap{modules: map[uint64]string{}} }

// AddMethod records a method loaded at t (Always for rundown entries).
func (m *MethodMap) AddMethod(t trace.Time, start uint64, size uint32, name string, moduleID uint64) {
	m.methods = append(m.methods, Method{Start: start, Size: size, Name: name, ModuleID: moduleID, Loaded: t, Unloaded: MaxTime})
	m.sorted = false
}

// Unload ends, at t, the validity of the newest method starting at start.
func (m *MethodMap) Unload(t trace.Time, start uint64) {
	for i := len(m.methods) - 1; i >= 0; i-- {
		if me := &m.methods[i]; me.Start == start && me.Unloaded == MaxTime && me.Loaded <= t {
			me.Unloaded = t
			return
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
func (m *MethodMap) Len() int { return len(m.methods) }

func (m *MethodMap) sort() {
	if m.sorted {
		return
	}
	slices.SortStableFunc(m.methods, func(a, b Method) int { return cmp.Compare(a.Start, b.Start) })
	m.maxEnd = make([]uint64, len(m.methods))
	var hi uint64
	for i, me := range m.methods {
		hi = max(hi, me.Start+uint64(me.Size))
		m.maxEnd[i] = hi
	}
	m.sorted = true
}

// Finish prepares the map for concurrent Resolve calls.
func (m *MethodMap) Finish() { m.sort() }

// Resolve returns the frame for addr in a sample taken at t. Among the
// methods whose range holds addr and that are valid at t it picks the one
// loaded last.
func (m *MethodMap) Resolve(t trace.Time, addr uint64) (trace.Frame, bool) {
	m.sort()
	// The last method starting at or below addr; earlier ones may still
	// contain it while their running max end is above addr.
	i, _ := slices.BinarySearchFunc(m.methods, addr, func(me Method, a uint64) int {
		if me.Start <= a {
			return -1
		}
		return 1
	})
	var best *Method
	for i--; i >= 0 && m.maxEnd[i] > addr; i-- {
		me := &m.methods[i]
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
	return trace.Frame{Addr: addr, Module: m.modules[best.ModuleID], Func: best.Name}, true
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
	rundown := strings.HasSuffix(et.Provider, "Rundown")
	switch et.Name {
	case "Method/LoadVerbose", "Method/DCStartVerbose", "Method/DCStopVerbose":
		f := fieldMap(fields)
		when := t
		if rundown {
			when = Always
		}
		m.AddMethod(when, f.uint("MethodStartAddress"), uint32(f.uint("MethodSize")),
			MethodName(f.str("MethodNamespace"), f.str("MethodName"), f.str("MethodSignature")), f.uint("ModuleID"))
	case "Method/UnloadVerbose", "Method/Unload":
		if !rundown {
			m.Unload(t, fieldMap(fields).uint("MethodStartAddress"))
		}
	case "Loader/ModuleLoad", "Loader/ModuleDCStart", "Loader/ModuleDCStop",
		"Loader/DomainModuleLoad", "Loader/DomainModuleDCStart", "Loader/DomainModuleDCStop":
		f := fieldMap(fields)
		p := f.str("ModuleILPath")
		if p == "" {
			p = f.str("ModuleNativePath")
		}
		m.AddModule(f.uint("ModuleID"), p)
	}
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

func (f fieldMap) uint(name string) uint64 { return f.get(name).Uint() }
func (f fieldMap) str(name string) string {
	v := f.get(name)
	if v.Kind() != trace.KindString {
		return ""
	}
	return v.Str()
}

// ResolveSpan is Resolve that also returns the times [from, to) around t
// over which the answer for addr stays the same: the method map changes
// its answer for an address only when a method holding it is loaded or
// unloaded, so a caller may reuse a frame for any sample time inside the
// span (the bounds may be narrower than the longest such span, never
// wider).
func (m *MethodMap) ResolveSpan(t trace.Time, addr uint64) (f trace.Frame, ok bool, from, to trace.Time) {
	m.sort()
	i, _ := slices.BinarySearchFunc(m.methods, addr, func(me Method, a uint64) int {
		if me.Start <= a {
			return -1
		}
		return 1
	})
	from, to = Always, MaxTime
	var best *Method
	for i--; i >= 0 && m.maxEnd[i] > addr; i-- {
		me := &m.methods[i]
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
	return trace.Frame{Addr: addr, Module: m.modules[best.ModuleID], Func: best.Name}, true, from, to
}
