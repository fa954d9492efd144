package clr

import (
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
