package clr

import (
	"strings"
	"testing"
)

func TestLookupNames(t *testing.T) {
	s := NewSchema()
	tests := []struct {
		provider string
		id, ver  int
		name     string
		wantVer  int
	}{
		{"Microsoft-Windows-DotNETRuntime", 1, 2, "GC/Start", 2},
		{"microsoft-windows-dotnetruntime", 1, 9, "GC/Start", 2}, // newer than known: newest known
		{"Microsoft-Windows-DotNETRuntime", 143, 1, "Method/LoadVerbose", 1},
		{"Microsoft-Windows-DotNETRuntimeRundown", 144, 1, "Method/DCStopVerbose", 1},
		{"Microsoft-Windows-DotNETRuntimeRundown", 154, 1, "Loader/ModuleDCStop", 1},
		{"Microsoft-Windows-DotNETRuntime", 187, 0, "Runtime/Start", 0},
		{"Microsoft-Windows-DotNETRuntime", 7, 1, "GC/RestartEEStart", 1},
		{"Microsoft-Windows-DotNETRuntime", 80, 1, "Exception/Start", 1},
		{"e13c0d23-ccbc-4e12-931b-d9cc2eee27e4", 10, 2, "GC/AllocationTick", 2},
		{"Microsoft-DotNETCore-SampleProfiler", 0, 0, "Thread/Sample", 0},
	}
	for _, tt := range tests {
		e, ok := s.Lookup(tt.provider, tt.id, tt.ver)
		if !ok || e.Name != tt.name || e.Version != tt.wantVer {
			t.Errorf("Lookup(%s, %d, %d) = %+v, %v; want %s v%d", tt.provider, tt.id, tt.ver, e, ok, tt.name, tt.wantVer)
		}
	}
	if _, ok := s.Lookup("Microsoft-Windows-DotNETRuntime", 65000, 0); ok {
		t.Error("unknown id found")
	}
	if _, ok := s.Lookup("MySource", 1, 0); ok {
		t.Error("unknown provider found")
	}
}

func TestBitMap(t *testing.T) {
	m := &Map{Bits: true, Entries: []MapEntry{{1, "A"}, {4, "C"}}}
	if s, _ := m.Text(5 | 8); s != "A|C|0x8" {
		t.Errorf("bits = %q", s)
	}
}

// layout renders a field list as "Name type, …", structs in braces and
// counted fields with their count field.
func layout(fs []Field) string {
	var parts []string
	for _, f := range fs {
		s := f.Name + " " + f.Type.String()
		if f.Hex {
			s += " hex"
		}
		if f.CountField != "" {
			s += "[" + f.CountField + "]"
		}
		if f.Type == Struct {
			s += " {" + layout(f.Fields) + "}"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// TestHandCheckedLayouts: runtime events that PerfView's manifest lacks
// were once described by hand in the supplement, each layout checked
// against real payloads; the runtime's manifest, which now describes them,
// must agree, and they keep TraceEvent's names.
func TestHandCheckedLayouts(t *testing.T) {
	const rt, rundown = "Microsoft-Windows-DotNETRuntime", "Microsoft-Windows-DotNETRuntimeRundown"
	ptrs := func(names ...string) string {
		for i, n := range names {
			names[i] = n + " pointer hex"
		}
		return strings.Join(names, ", ")
	}
	globalHeap := "FinalYoungestDesired uint64 hex, NumHeaps int32, CondemnedGeneration uint32, Gen0ReductionCount uint32, " +
		"Reason uint32, GlobalMechanisms uint32, ClrInstanceID uint16, PauseMode uint32, MemoryPressure uint32"
	tests := []struct {
		provider     string
		id, version  int
		name, layout string
	}{
		{rt, 159, 0, "Method/R2RGetEntryPoint", "MethodID uint64 hex, MethodNamespace utf16, MethodName utf16, MethodSignature utf16, EntryPoint uint64 hex, ClrInstanceID uint16"},
		{rt, 202, 0, "GC/MarkWithType", "HeapNum uint32, ClrInstanceID uint16, Type uint32, Bytes uint64"},
		{rt, 204, 3, "GC/PerHeapHistory", "ClrInstanceID uint16, " +
			ptrs("FreeListAllocated", "FreeListRejected", "EndOfSegAllocated", "CondemnedAllocated", "PinnedAllocated", "PinnedAllocatedAdvance") +
			", RunningFreeListEfficiency uint32, CondemnReasons0 uint32, CondemnReasons1 uint32, CompactMechanisms uint32, ExpandMechanisms uint32, HeapIndex uint32, " +
			ptrs("ExtraGen0Commit") + ", Count uint32, Values struct[Count] {" +
			ptrs("SizeBefore", "FreeListBefore", "FreeObjBefore", "SizeAfter", "FreeListAfter", "FreeObjAfter", "In", "PinnedSurv", "NonePinnedSurv", "NewAllocation") + "}"},
		{rt, 205, 2, "GC/GlobalHeapHistory", globalHeap},
		{rt, 205, 3, "GC/GlobalHeapHistory", globalHeap + ", CondemnReasons0 uint32, CondemnReasons1 uint32"},
		{rundown, 300, 0, "ExecutionCheckpointRundown/ExecutionCheckpointDCEnd", "ClrInstanceID uint16, Name utf16, Timestamp int64"},
	}
	s := NewSchema()
	for _, tt := range tests {
		e, ok := s.Lookup(tt.provider, tt.id, tt.version)
		if !ok || e.Version != tt.version {
			t.Errorf("%s %d v%d: not in the table (%+v)", tt.provider, tt.id, tt.version, e)
			continue
		}
		if e.Name != tt.name {
			t.Errorf("%s %d v%d: name %q, want %q", tt.provider, tt.id, tt.version, e.Name, tt.name)
		}
		if got := layout(e.Fields); got != tt.layout {
			t.Errorf("%s %d v%d:\n got  %s\n want %s", tt.provider, tt.id, tt.version, got, tt.layout)
		}
	}
}
