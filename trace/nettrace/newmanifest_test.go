package nettrace

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf16"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/export"
	"viewer/trace/nettrace/nettracetest"
)

// newOnly are the runtime events that only the runtime's own manifest
// (ClrEtwAll.runtime.man) defines, not PerfView's copy: new event ids and
// new versions of ids PerfView's knows (named as PerfView names the id),
// with their top-level fields. (The runtime's manifest also brings the
// Microsoft-DotNETRuntimeMonoProfiler provider, ids 1-63.)
var newOnly = []struct {
	provider    string
	id, version int
	name        string
	fields      string
}{
	{rt, 4, 2, "GC/HeapStats", "GenerationSize0 TotalPromotedSize0 GenerationSize1 TotalPromotedSize1 GenerationSize2 TotalPromotedSize2 GenerationSize3 TotalPromotedSize3 FinalizationPromotedSize FinalizationPromotedCount PinnedObjectCount SinkBlockCount GCHandleCount ClrInstanceID GenerationSize4 TotalPromotedSize4"},
	{rt, 10, 4, "GC/AllocationTick", "AllocationAmount AllocationKind ClrInstanceID AllocationAmount64 TypeID TypeName HeapIndex Address ObjectSize"},
	{rt, 39, 0, "GC/DynamicEvent", "Name DataSize Data ClrInstanceID"},
	{rt, 58, 0, "YieldProcessorMeasurement", "ClrInstanceID NsPerYield EstablishedNsPerYield"},
	{rt, 59, 0, "ThreadPoolMinMaxThreads", "MinWorkerThreads MaxWorkerThreads MinIOCompletionThreads MaxIOCompletionThreads ClrInstanceID"},
	{rt, 72, 0, "Method/MethodDetails", "MethodID TypeID MethodToken TypeParameterCount LoaderModuleID TypeParameters"},
	{rt, 73, 0, "TypeLoad/Start", "TypeLoadStartID ClrInstanceID"},
	{rt, 74, 0, "TypeLoad/Stop", "TypeLoadStartID ClrInstanceID LoadLevel TypeID TypeName"},
	{rt, 250, 0, "ExceptionCatch/Start", "EntryEIP MethodID MethodName ClrInstanceID"},
	{rt, 251, 0, "ExceptionCatch/Stop", ""},
	{rt, 252, 0, "ExceptionFinally/Start", "EntryEIP MethodID MethodName ClrInstanceID"},
	{rt, 253, 0, "ExceptionFinally/Stop", ""},
	{rt, 254, 0, "ExceptionFilter/Start", "EntryEIP MethodID MethodName ClrInstanceID"},
	{rt, 255, 0, "ExceptionFilter/Stop", ""},
	{rt, 256, 0, "Exception/Stop", ""},
	{rt, 81, 2, "Contention/Start", "ContentionFlags ClrInstanceID LockID AssociatedObjectID LockOwnerThreadID"},
	{rt, 91, 1, "Contention/Stop", "ContentionFlags ClrInstanceID DurationNs"},
	{rt, 90, 0, "Contention/LockCreated", "LockID AssociatedObjectID ClrInstanceID"},
	{rt, 159, 0, "Method/R2RGetEntryPoint", "MethodID MethodNamespace MethodName MethodSignature EntryPoint ClrInstanceID"},
	{rt, 160, 0, "Method/R2RGetEntryPointStart", "MethodID ClrInstanceID"},
	{rt, 146, 0, "Method/MemoryAllocatedForJitCode", "MethodID ModuleID JitHotCodeRequestSize JitRODataRequestSize AllocatedSizeForJitCode JitAllocFlag ClrInstanceID"},
	{rt, 190, 1, "Method/ILToNativeMap", "MethodID ReJITID MethodExtent CountOfMapEntries ILOffsets NativeOffsets ClrInstanceID ILVersionID"},
	{rt, 191, 0, "Method/TailCallFailed", "MethodBeingCompiledNamespace MethodBeingCompiledName MethodBeingCompiledNameSignature CallerNamespace CallerName CallerNameSignature CalleeNamespace CalleeName CalleeNameSignature TailPrefix FailReason ClrInstanceID"},
	{rt, 192, 0, "Method/InliningFailed", "MethodBeingCompiledNamespace MethodBeingCompiledName MethodBeingCompiledNameSignature InlinerNamespace InlinerName InlinerNameSignature InlineeNamespace InlineeName InlineeNameSignature FailAlways FailReason ClrInstanceID"},
	{rt, 202, 0, "GC/MarkWithType", "HeapNum ClrInstanceID Type Bytes"},
	{rt, 203, 2, "GC/Join", "Heap JoinTime JoinType ClrInstanceID JoinID"},
	{rt, 204, 3, "GC/PerHeapHistory", "ClrInstanceID FreeListAllocated FreeListRejected EndOfSegAllocated CondemnedAllocated PinnedAllocated PinnedAllocatedAdvance RunningFreeListEfficiency CondemnReasons0 CondemnReasons1 CompactMechanisms ExpandMechanisms HeapIndex ExtraGen0Commit Count Values"},
	{rt, 205, 2, "GC/GlobalHeapHistory", "FinalYoungestDesired NumHeaps CondemnedGeneration Gen0ReductionCount Reason GlobalMechanisms ClrInstanceID PauseMode MemoryPressure"},
	{rt, 205, 3, "GC/GlobalHeapHistory", "FinalYoungestDesired NumHeaps CondemnedGeneration Gen0ReductionCount Reason GlobalMechanisms ClrInstanceID PauseMode MemoryPressure CondemnReasons0 CondemnReasons1"},
	{rt, 205, 4, "GC/GlobalHeapHistory", "FinalYoungestDesired NumHeaps CondemnedGeneration Gen0ReductionCount Reason GlobalMechanisms ClrInstanceID PauseMode MemoryPressure CondemnReasons0 CondemnReasons1 Count Values"},
	{rt, 206, 0, "GC/GenAwareBegin", "Count ClrInstanceID"},
	{rt, 207, 0, "GC/GenAwareEnd", "Count ClrInstanceID"},
	{rt, 208, 0, "GC/LOHCompact", "ClrInstanceID Count Values"},
	{rt, 209, 0, "GC/FitBucketInfo", "ClrInstanceID BucketKind TotalSize Count Values"},
	{rt, 260, 0, "CodeSymbols/Start", "ModuleId TotalChunks ChunkNumber ChunkLength Chunk ClrInstanceID"},
	{rt, 270, 0, "EventSourceEvent", "EventID EventName EventSourceName Payload"},
	{rt, 280, 0, "TieredCompilation/Settings", "ClrInstanceID Flags"},
	{rt, 281, 0, "TieredCompilation/Pause", "ClrInstanceID"},
	{rt, 282, 0, "TieredCompilation/Resume", "ClrInstanceID NewMethodCount"},
	{rt, 283, 0, "TieredCompilation/BackgroundJitStart", "ClrInstanceID PendingMethodCount"},
	{rt, 284, 0, "TieredCompilation/BackgroundJitStop", "ClrInstanceID PendingMethodCount JittedMethodCount"},
	{rt, 290, 0, "AssemblyLoader/Start", "ClrInstanceID AssemblyName AssemblyPath RequestingAssembly AssemblyLoadContext RequestingAssemblyLoadContext"},
	{rt, 291, 0, "AssemblyLoader/Stop", "ClrInstanceID AssemblyName AssemblyPath RequestingAssembly AssemblyLoadContext RequestingAssemblyLoadContext Success ResultAssemblyName ResultAssemblyPath Cached"},
	{rt, 292, 0, "AssemblyLoader/ResolutionAttempted", "ClrInstanceID AssemblyName Stage AssemblyLoadContext Result ResultAssemblyName ResultAssemblyPath ErrorMessage"},
	{rt, 293, 0, "AssemblyLoader/AssemblyLoadContextResolvingHandlerInvoked", "ClrInstanceID AssemblyName HandlerName AssemblyLoadContext ResultAssemblyName ResultAssemblyPath"},
	{rt, 294, 0, "AssemblyLoader/AppDomainAssemblyResolveHandlerInvoked", "ClrInstanceID AssemblyName HandlerName ResultAssemblyName ResultAssemblyPath"},
	{rt, 295, 0, "AssemblyLoader/AssemblyLoadFromResolveHandlerInvoked", "ClrInstanceID AssemblyName IsTrackedLoad RequestingAssemblyPath ComputedRequestedAssemblyPath"},
	{rt, 296, 0, "AssemblyLoader/KnownPathProbed", "ClrInstanceID FilePath Source Result"},
	{rt, 297, 0, "JitInstrumentationData/InstrumentationData", "ClrInstanceID MethodFlags DataSize MethodID Data"},
	{rt, 298, 0, "JitInstrumentationDataVerbose/InstrumentationData", "ClrInstanceID MethodFlags DataSize MethodID ModuleID MethodToken MethodNamespace MethodName MethodSignature Data"},
	{rt, 299, 0, "Profiler/Message", "ClrInstanceID Message"},
	{rt, 300, 0, "ExecutionCheckpoint/ExecutionCheckpoint", "ClrInstanceID Name Timestamp"},
	{rundown, 10, 0, "GC/SettingsRundown", "HardLimit LOHThreshold PhysicalMemoryConfig Gen0MinBudgetConfig Gen0MaxBudgetConfig HighMemPercentConfig BitSettings ClrInstanceID"},
	{rundown, 149, 1, "Method/DCStartILToNativeMap", "MethodID ReJITID MethodExtent CountOfMapEntries ILOffsets NativeOffsets ClrInstanceID ILVersionID"},
	{rundown, 150, 1, "Method/DCEndILToNativeMap", "MethodID ReJITID MethodExtent CountOfMapEntries ILOffsets NativeOffsets ClrInstanceID ILVersionID"},
	{rundown, 280, 0, "TieredCompilationRundown/SettingsDCStart", "ClrInstanceID Flags"},
	{rundown, 300, 0, "ExecutionCheckpointRundown/ExecutionCheckpointDCEnd", "ClrInstanceID Name Timestamp"},
	{private, 22, 1, "GC/BGCOverflow", "Min Max Objects IsLarge ClrInstanceID GenNumber"},
	{private, 26, 0, "GC/BGC1stSweepEnd", "GenNumber ClrInstanceID"},
	{private, 189, 0, "CLRMethodPrivate/JittedMethodRichDebugInfo", "ClrInstanceID MethodID ReJITID ILVersionID ChunkIndex DataSize Data"},
	{private, 200, 0, "GC/CCWRefCountChange", "HandleID ObjectID COMInterfacePointer NewRefCount AppDomainID ClassName NameSpace Operation ClrInstanceID"},
}

const (
	rt      = providerRuntime
	rundown = providerRundown
	private = "Microsoft-Windows-DotNETRuntimePrivate"
)

// encodeManifest lays out a payload for a manifest field list: numbers
// count up from seed, strings are "s" and the field's name, count and
// length fields hold 2, arrays and binaries have that many elements.
func encodeManifest(b []byte, fs []clr.Field, ptr int, seed *uint64) []byte {
	le := binary.LittleEndian
	counts := map[string]bool{}
	for _, f := range fs {
		counts[f.CountField], counts[f.LengthField] = true, true
	}
	for _, f := range fs {
		n := 1
		switch {
		case f.Count > 0:
			n = f.Count
		case f.CountField != "":
			n = 2
		}
		for range n {
			*seed++
			v := *seed
			if counts[f.Name] {
				v = 2
			}
			switch f.Type {
			case clr.UInt8, clr.Int8:
				b = append(b, byte(v))
			case clr.UInt16, clr.Int16:
				b = le.AppendUint16(b, uint16(v))
			case clr.UInt32, clr.Int32, clr.Bool32:
				b = le.AppendUint32(b, uint32(v))
			case clr.UInt64, clr.Int64:
				b = le.AppendUint64(b, v)
			case clr.Pointer:
				b = le.AppendUint64(b, v)[:len(b)+ptr]
			case clr.Float:
				b = le.AppendUint32(b, math.Float32bits(float32(v)+0.5))
			case clr.Double:
				b = le.AppendUint64(b, math.Float64bits(float64(v)+0.5))
			case clr.GUID:
				b = append(b, bytes.Repeat([]byte{byte(v)}, 16)...)
			case clr.UTF16:
				for _, u := range utf16.Encode([]rune("s" + f.Name)) {
					b = le.AppendUint16(b, u)
				}
				b = append(b, 0, 0)
			case clr.ANSI:
				b = append(append(b, "s"+f.Name...), 0)
			case clr.Binary:
				l := f.Length
				if f.LengthField != "" {
					l = 2
				}
				b = append(b, bytes.Repeat([]byte{0xab}, l)...)
			case clr.Struct:
				b = encodeManifest(b, f.Fields, ptr, seed)
			}
		}
	}
	return b
}

// TestNewManifestEvents writes one event of every newOnly row into a
// NetTrace file, with runtime metadata (no name, no fields) as the runtime
// writes it, and checks that the reader names each as the table does and
// decodes the fields the table lists from the whole payload.
func TestNewManifestEvents(t *testing.T) {
	const ptr = 8
	schema := clr.NewSchema()
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1e9, PointerSize: ptr})
	var meta []nettracetest.Metadata
	var evs []nettracetest.Event
	var seed uint64
	for i, row := range newOnly {
		e, ok := schema.Lookup(row.provider, row.id, row.version)
		if !ok || e.Version != row.version {
			t.Fatalf("%s %d v%d: not in the schema", row.provider, row.id, row.version)
		}
		id := uint32(i + 1)
		meta = append(meta, nettracetest.Metadata{ID: id, Provider: row.provider, EventID: uint32(row.id), Version: uint8(row.version)})
		evs = append(evs, nettracetest.Event{MetadataID: id, Seq: id, Thread: 1, Capture: 1, Ticks: int64(i), Sorted: true,
			Payload: encodeManifest(nil, e.Fields, ptr, &seed)})
	}
	w.Metadata(0, meta...)
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 1})
	w.Events(false, evs...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	enc := export.NewEncoder(r)
	for i := 0; ; i++ {
		e, err := r.ReadEvent()
		if err == io.EOF {
			if i != len(newOnly) {
				t.Errorf("%d events read, want %d", i, len(newOnly))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		row := newOnly[e.Seq-1]
		et := r.Meta().Types[e.Type]
		if et.Provider != row.provider || et.ID != int64(row.id) || et.Name != row.name {
			t.Errorf("%s %d v%d: read as %s %d %q, want %q", row.provider, row.id, row.version, et.Provider, et.ID, et.Name, row.name)
		}
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range d.Fields {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, " "); got != row.fields {
			t.Errorf("%s %d v%d %s: fields\n got  %s\n want %s", row.provider, row.id, row.version, row.name, got, row.fields)
		}
		_, used := DecodePayload(d.Raw, r.types[e.Type].manifest, ptr)
		if used != len(d.Raw) {
			t.Errorf("%s %d v%d %s: decoded %d of %d payload bytes", row.provider, row.id, row.version, row.name, used, len(d.Raw))
		}
		line, err := enc.AppendEvent(nil, e)
		if err != nil || bytes.Contains(line, []byte(`"raw":`)) {
			t.Errorf("%s %d: a decoded event's dump has raw bytes (%v): %s", row.provider, row.id, err, line)
		}
	}
}

// TestUnknownRuntimeEvent: a runtime event that neither manifest knows is
// EventID(N) under its provider, its payload shown raw in the dump.
func TestUnknownRuntimeEvent(t *testing.T) {
	var buf bytes.Buffer
	w := nettracetest.NewWriter(&buf, nettracetest.TraceInfo{TicksPerSecond: 1e9, PointerSize: 8})
	w.Metadata(0, nettracetest.Metadata{ID: 1, Provider: providerRuntime, EventID: 4321, Version: 2},
		nettracetest.Metadata{ID: 2, Provider: providerRuntime, EventID: 4322})
	w.Threads(nettracetest.Thread{Index: 1, PID: 1, TID: 1})
	w.Events(false, nettracetest.Event{MetadataID: 1, Seq: 1, Thread: 1, Capture: 1, Ticks: 1, Sorted: true, Payload: []byte{0xde, 0xad, 0x00, 0x01}},
		nettracetest.Event{MetadataID: 2, Seq: 2, Thread: 1, Capture: 1, Ticks: 2, Sorted: true})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	enc := export.NewEncoder(r)
	want := []struct{ name, tail string }{
		{"EventID(4321)", `"fields":[],"label":"EventID(4321)","raw":"dead0001"}`},
		{"EventID(4322)", `"fields":[],"label":"EventID(4322)"}`}, // no payload, no raw
	}
	for i, w := range want {
		e, err := r.ReadEvent()
		if err != nil {
			t.Fatal(err)
		}
		if et := r.Meta().Types[e.Type]; et.Provider != providerRuntime || et.Name != w.name || et.Fields != nil {
			t.Errorf("event %d: type %+v, want %s with no schema", i, et, w.name)
		}
		d, err := r.Details(e)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(d.Fields) != 0 || string(d.Raw) != "\xde\xad\x00\x01") {
			t.Errorf("details %+v", d)
		}
		line, err := enc.AppendEvent(nil, e)
		if err != nil || !strings.HasSuffix(string(line), w.tail) {
			t.Errorf("dump %s (%v), want it to end %s", line, err, w.tail)
		}
	}
}

// TestUnknownNativeUserEvent: a runtime user_event (no metadata) that the
// schema does not know is EventID(N) under the runtime's provider, not the
// tracepoint's, its payload one bytes field as perf shows unknown events.
func TestUnknownNativeUserEvent(t *testing.T) {
	u := NewUserEvents()
	et, s, ok := u.Native("user_events:DotNETRuntimeRundown_5f3e", 4321)
	if !ok || et.Provider != providerRundown || et.Name != "EventID(4321)" || et.ID != 4321 || et.Fields != nil {
		t.Fatalf("Native = %+v, %v", et, ok)
	}
	fields, err := s.DecodePayload([]byte{1, 2}, nil)
	if err != nil || len(fields) != 1 || fields[0].Value.Kind() != trace.KindBytes || fields[0].Value.Str() != "\x01\x02" {
		t.Errorf("fields %+v, %v", fields, err)
	}
	if et, _, ok := u.Native("user_events:DotNETRuntime_5f3e", 290); !ok || et.Name != "AssemblyLoader/Start" {
		t.Errorf("id 290: %+v", et)
	}
}
