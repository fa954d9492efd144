// Command demogen writes the demo trace that viewer holds on first start: a
// NetTrace v6 file, made with package nettracetest, of a small web shop
// process. It has what a real .NET trace has — runtime events whose
// metadata names nothing (the CLR schema names them), sample-profiler
// stacks resolved through rundown method events, EventSource events with
// fields and activity ids, a lost-event gap — in about a megabyte.
//
//	go run ./internal/demogen -o demo.nettrace
package main

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"flag"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"

	"viewer/trace"
	"viewer/trace/clr"
	"viewer/trace/nettrace/nettracetest"
)

const (
	pid       = 4242
	second    = int64(1e9)
	duration  = 3 * second
	ptrSize   = 8
	codeBase  = 0x7ff8_1000_0000
	methodLen = 0x300
)

// Metadata ids of the demo's event types.
const (
	mdOrderStart = iota + 1
	mdOrderStop
	mdCacheMiss
	mdGCStart
	mdGCStop
	mdAllocTick
	mdException
	mdSample
	mdMethodDCEnd
	mdModuleDCEnd
	mdSuspendEE
	mdRestartEE
	mdHeapStats
)

const (
	runtime  = "Microsoft-Windows-DotNETRuntime"
	rundown  = "Microsoft-Windows-DotNETRuntimeRundown"
	profiler = "Microsoft-DotNETCore-SampleProfiler"
	shop     = "Demo-Checkout"
)

type thread struct {
	index uint64
	name  string
	tid   int64
	seq   uint32
}

type method struct {
	module, namespace, name, sig string
}

var methods = []method{
	{"Demo.Shop", "Demo.Shop.Program", "Main", "void (class System.String[])"},
	{"Demo.Shop", "Demo.Shop.Checkout", "ProcessOrder", "bool (class Demo.Shop.Order)"},
	{"Demo.Shop", "Demo.Shop.Checkout", "PriceCart", "float64 (class Demo.Shop.Cart)"},
	{"Demo.Shop", "Demo.Shop.Inventory", "Reserve", "bool (int64,int32)"},
	{"Demo.Shop", "Demo.Shop.Cache", "Lookup", "class System.Object (class System.String)"},
	{"Demo.Shop", "Demo.Shop.Payments", "Authorize", "bool (class Demo.Shop.Card)"},
	{"System.Private.CoreLib", "System.Threading.ThreadPoolWorkQueue", "Dispatch", "bool ()"},
	{"System.Private.CoreLib", "System.Collections.Generic.Dictionary`2[System.__Canon,System.__Canon]", "FindValue", "!!0& (!0)"},
	{"System.Private.CoreLib", "System.Text.Json.JsonSerializer", "Serialize", "class System.String (class System.Object)"},
	{"System.Private.CoreLib", "System.Threading.Monitor", "Enter", "void (class System.Object)"},
	{"System.Private.CoreLib", "System.Security.Cryptography.SHA256", "HashData", "uint8[] (uint8[])"},
	{"System.Net.Http", "System.Net.Http.HttpClient", "SendAsync", "class System.Threading.Tasks.Task`1 (class System.Net.Http.HttpRequestMessage)"},
}

var modules = []string{"Demo.Shop", "System.Private.CoreLib", "System.Net.Http"}

// callPaths are the stacks the sampler sees, root first, as method indexes.
var callPaths = [][]int{
	{6, 1, 2},
	{6, 1, 2, 7},
	{6, 1, 3},
	{6, 1, 3, 9},
	{6, 1, 5, 11},
	{6, 1, 5, 10},
	{6, 1, 4, 7},
	{6, 1, 8},
	{0, 6},
}

func main() {
	out := flag.String("o", "demo.nettrace", "the file to write")
	flag.Parse()
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

func write(buf *bytes.Buffer) error {
	rng := rand.New(rand.NewPCG(2026, 1))
	schema := clr.NewSchema()
	w := nettracetest.NewWriter(buf, nettracetest.TraceInfo{
		Wall:           time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC),
		SyncTicks:      0,
		TicksPerSecond: second,
		PointerSize:    ptrSize,
		Info:           []trace.KeyValue{{Key: "HardwareThreadCount", Value: "8"}, {Key: "ExpectedCPUSamplingRate", Value: "1000000"}},
	})
	threads := []*thread{{index: 1, name: "Main", tid: pid}}
	for i := range 4 {
		threads = append(threads, &thread{index: uint64(2 + i), name: ".NET TP Worker #" + string(rune('1'+i)), tid: int64(4250 + i)})
	}
	gc := &thread{index: 6, name: ".NET BGC", tid: 4260}
	sampler := &thread{index: 7, name: ".NET SampleProfiler", tid: 4270}
	threads = append(threads, gc, sampler)
	rows := make([]nettracetest.Thread, len(threads))
	for i, t := range threads {
		rows[i] = nettracetest.Thread{Index: t.index, Name: t.name, PID: pid, TID: t.tid}
	}
	w.Threads(rows...)

	str := func(name string) nettracetest.Field {
		return nettracetest.Field{Name: name, Type: nettracetest.TypeUTF16String}
	}
	w.Metadata(0,
		nettracetest.Metadata{ID: mdOrderStart, Provider: shop, EventID: 1, Name: "OrderStart", HasOpcode: true, Opcode: 1, Level: 4, Version: 0,
			Fields: []nettracetest.Field{{Name: "OrderId", Type: nettracetest.TypeInt64}, str("Customer"), {Name: "Items", Type: nettracetest.TypeInt32}}},
		nettracetest.Metadata{ID: mdOrderStop, Provider: shop, EventID: 2, Name: "OrderStop", HasOpcode: true, Opcode: 2, Level: 4,
			Fields: []nettracetest.Field{{Name: "OrderId", Type: nettracetest.TypeInt64}, {Name: "Total", Type: nettracetest.TypeDouble}, str("Status")}},
		nettracetest.Metadata{ID: mdCacheMiss, Provider: shop, EventID: 3, Name: "CacheMiss", Level: 5,
			Fields: []nettracetest.Field{str("Key"), {Name: "LatencyUs", Type: nettracetest.TypeUInt32}}},
		// The runtime's own events describe nothing, as in real files.
		nettracetest.Metadata{ID: mdGCStart, Provider: runtime, EventID: 1, Version: 2, Level: 4, Keywords: 1},
		nettracetest.Metadata{ID: mdGCStop, Provider: runtime, EventID: 2, Version: 1, Level: 4, Keywords: 1},
		nettracetest.Metadata{ID: mdAllocTick, Provider: runtime, EventID: 10, Version: 3, Level: 5, Keywords: 1},
		nettracetest.Metadata{ID: mdSuspendEE, Provider: runtime, EventID: 9, Version: 1, Level: 4, Keywords: 1},
		nettracetest.Metadata{ID: mdRestartEE, Provider: runtime, EventID: 3, Version: 1, Level: 4, Keywords: 1},
		nettracetest.Metadata{ID: mdHeapStats, Provider: runtime, EventID: 4, Version: 2, Level: 4, Keywords: 1},
		nettracetest.Metadata{ID: mdException, Provider: runtime, EventID: 80, Version: 1, Level: 2, Keywords: 0x8000},
		nettracetest.Metadata{ID: mdSample, Provider: profiler, EventID: 0, Level: 4},
		nettracetest.Metadata{ID: mdMethodDCEnd, Provider: rundown, EventID: 144, Version: 1, Level: 4, Keywords: 0x30},
		nettracetest.Metadata{ID: mdModuleDCEnd, Provider: rundown, EventID: 154, Version: 1, Level: 4, Keywords: 0x8},
	)

	// One stack per call path, leaf first, each frame inside its method.
	stacks := make([][]uint64, len(callPaths))
	for i, p := range callPaths {
		for j := len(p) - 1; j >= 0; j-- {
			stacks[i] = append(stacks[i], codeBase+uint64(p[j])*0x400+uint64(0x10+rng.IntN(methodLen-0x20)))
		}
	}
	w.Stacks(1, stacks...)

	var evs []nettracetest.Event
	emit := func(t *thread, md uint32, ticks int64, stack uint32, labels uint32, payload []byte) {
		evs = append(evs, nettracetest.Event{MetadataID: md, Thread: t.index, Capture: t.index,
			Stack: stack, Ticks: ticks, Labels: labels, Sorted: true, Payload: payload})
	}
	enc := func(provider string, id, version int, values map[string]any) []byte {
		e, ok := schema.Lookup(provider, id, version)
		if !ok {
			log.Fatalf("no schema for %s %d", provider, id)
		}
		return encodeCLR(e.Fields, values)
	}

	// Orders on the worker threads, each a Start/Stop pair sharing an
	// activity id.
	var lists [][]trace.Label
	customers := []string{"Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"}
	workers := threads[1:5]
	next := make([]int64, len(workers)) // when each worker takes its next order
	for i := range next {
		next[i] = rng.Int64N(20e6)
	}
	for order := int64(1); ; order++ {
		wi := slices.Index(next, slices.Min(next))
		start := next[wi]
		if start > duration-30e6 {
			break
		}
		dur := int64(2e6 + rng.ExpFloat64()*6e6)
		next[wi] = start + dur + int64(rng.ExpFloat64()*4e6)
		var act [16]byte
		binary.LittleEndian.PutUint64(act[:], uint64(order)*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(act[8:], uint64(order))
		lists = append(lists, []trace.Label{{Key: "ActivityId", Value: trace.GUIDValue(act)}})
		label := uint32(len(lists))
		t := workers[wi]
		items := int32(1 + rng.IntN(9))
		emit(t, mdOrderStart, start, 0, label, payload(int64(order), customers[rng.IntN(len(customers))], items))
		for k := range 1 + rng.IntN(3) {
			at := start + dur*int64(k+1)/5
			emit(t, mdCacheMiss, at, 0, label, payload("sku:"+string(rune('A'+rng.IntN(26)))+"-"+strconv.Itoa(rng.IntN(1000)), uint32(50+rng.IntN(900))))
		}
		if rng.IntN(4) == 0 {
			emit(t, mdAllocTick, start+dur/3, 0, label, enc(runtime, 10, 3, map[string]any{
				"AllocationAmount": uint64(100000 + rng.IntN(10000)), "AllocationAmount64": uint64(100000 + rng.IntN(10000)),
				"AllocationKind": uint64(0), "ClrInstanceID": uint64(9), "TypeID": uint64(0x7ff8_2000_0000 + rng.IntN(1<<20)),
				"TypeName":  []string{"System.Byte[]", "Demo.Shop.Order", "System.String", "System.Collections.Generic.List`1[Demo.Shop.Item]"}[rng.IntN(4)],
				"HeapIndex": uint64(0), "Address": uint64(0x1_8000_0000 + rng.IntN(1<<30)),
			}))
		}
		status := "ok"
		if rng.IntN(60) == 0 {
			status = "declined"
			emit(t, mdException, start+dur*4/5, 0, label, enc(runtime, 80, 1, map[string]any{
				"ExceptionType": "Demo.Shop.PaymentDeclinedException", "ExceptionMessage": "card declined: insufficient funds",
				"ExceptionEIP": uint64(codeBase + 5*0x400 + 0x40), "ExceptionHRESULT": uint64(0x80131500), "ExceptionFlags": uint64(16), "ClrInstanceID": uint64(9),
			}))
		}
		emit(t, mdOrderStop, start+dur, 0, label, payload(int64(order), float64(items)*19.99, status))
	}

	// Garbage collections on the GC thread. Their suspensions and heap
	// statistics draw from a generator of their own, so that the events
	// after them stay as they were before the demo had them.
	heap := rand.New(rand.NewPCG(2026, 2))
	for n := range 24 {
		at := int64(n)*duration/24 + rng.Int64N(50e6)
		emit(gc, mdGCStart, at, 0, 0, enc(runtime, 1, 2, map[string]any{
			"Count": uint64(n + 1), "Depth": uint64(n % 3 / 2), "Reason": uint64([]int{0, 0, 0, 1, 4}[n%5]), "Type": uint64(n % 2), "ClrInstanceID": uint64(9),
		}))
		stop := at + int64(1e6+rng.IntN(4e6))
		emit(gc, mdGCStop, stop, 0, 0, enc(runtime, 2, 1, map[string]any{"Count": uint64(n + 1), "Depth": uint64(n % 3 / 2), "ClrInstanceID": uint64(9)}))
		// The suspension the GC runs in, and the heap it leaves: growing
		// slowly, with one GC that leaves a heap four times the others'
		// (a peak the counter track must keep at every zoom).
		emit(gc, mdSuspendEE, at-int64(50e3+heap.IntN(100e3)), 0, 0, enc(runtime, 9, 1, map[string]any{"Reason": uint64(1), "Count": uint64(n + 1), "ClrInstanceID": uint64(9)}))
		gen0 := uint64(8<<20 + n*(256<<10))
		if n == 17 {
			gen0 *= 4
		}
		emit(gc, mdHeapStats, stop+10e3, 0, 0, enc(runtime, 4, 2, map[string]any{
			"GenerationSize0": gen0, "TotalPromotedSize0": uint64(1<<20 + heap.IntN(1<<18)),
			"GenerationSize1": uint64(4 << 20), "TotalPromotedSize1": uint64(512 << 10),
			"GenerationSize2": uint64(16 << 20), "TotalPromotedSize2": uint64(0),
			"GenerationSize3": uint64(2 << 20), "TotalPromotedSize3": uint64(0),
			"GenerationSize4": uint64(1 << 20), "TotalPromotedSize4": uint64(0),
			"FinalizationPromotedSize": uint64(0), "FinalizationPromotedCount": uint64(0),
			"PinnedObjectCount": uint64(3), "SinkBlockCount": uint64(12), "GCHandleCount": uint64(200), "ClrInstanceID": uint64(9),
		}))
		emit(gc, mdRestartEE, stop+int64(20e3+heap.IntN(50e3)), 0, 0, enc(runtime, 3, 1, map[string]any{"ClrInstanceID": uint64(9)}))
	}

	// The sample profiler: every millisecond, a sample of each thread,
	// written by the sampler thread.
	for at := int64(5e5); at < duration; at += 1e6 {
		for ti, t := range threads[:5] {
			path := 8 // idle main thread
			typ := uint32(1)
			if ti > 0 {
				path = rng.IntN(len(callPaths) - 1)
				typ = 2
				if path == 4 { // waiting on the network
					typ = 1
				}
			}
			evs = append(evs, nettracetest.Event{MetadataID: mdSample, Thread: t.index, Capture: sampler.index,
				Stack: uint32(path + 1), Ticks: at + int64(ti)*1000, Sorted: true, Payload: binary.LittleEndian.AppendUint32(nil, typ)})
		}
	}

	// Sequence numbers count each capture thread's events in time order;
	// worker #3 dropped 37 events at 1.5 s.
	slices.SortStableFunc(evs, func(a, b nettracetest.Event) int { return cmp.Compare(a.Ticks, b.Ticks) })
	byIndex := map[uint64]*thread{}
	for _, t := range threads {
		byIndex[t.index] = t
	}
	dropped := false
	for i := range evs {
		t := byIndex[evs[i].Capture]
		t.seq++
		if t == workers[2] && evs[i].Ticks > duration/2 && !dropped {
			t.seq += 37
			dropped = true
		}
		evs[i].Seq = t.seq
	}
	w.LabelLists(1, lists...)
	seqs := map[uint64]uint32{}
	for len(evs) > 0 {
		n := min(len(evs), 2000)
		w.Events(true, evs[:n]...)
		for _, e := range evs[:n] {
			seqs[e.Capture] = e.Seq
		}
		evs = evs[n:]
	}

	// Rundown at the end of the session: every method and module.
	var tail []nettracetest.Event
	rd := &thread{index: 1}
	rd.seq = seqs[1]
	at := duration + 1e6
	for i, m := range methods {
		tail = append(tail, nettracetest.Event{MetadataID: mdMethodDCEnd, Thread: 1, Capture: 1, Ticks: at + int64(i)*1000, Sorted: true,
			Payload: enc(rundown, 144, 1, map[string]any{
				"MethodID": uint64(0x7ff8_3000_0000 + i*0x40), "ModuleID": uint64(0x7ff8_4000_0000 + slices.Index(modules, m.module)*0x1000),
				"MethodStartAddress": uint64(codeBase + i*0x400), "MethodSize": uint64(methodLen), "MethodToken": uint64(0x06000001 + i),
				"MethodFlags": uint64(0x8), "MethodNamespace": m.namespace, "MethodName": m.name, "MethodSignature": m.sig, "ClrInstanceID": uint64(9),
			})})
	}
	for i, mod := range modules {
		tail = append(tail, nettracetest.Event{MetadataID: mdModuleDCEnd, Thread: 1, Capture: 1, Ticks: at + 100000 + int64(i)*1000, Sorted: true,
			Payload: enc(rundown, 154, 1, map[string]any{
				"ModuleID": uint64(0x7ff8_4000_0000 + i*0x1000), "AssemblyID": uint64(0x7ff8_5000_0000 + i*0x1000), "ModuleFlags": uint64(8),
				"ModuleILPath": "/app/" + mod + ".dll", "ModuleNativePath": "", "ClrInstanceID": uint64(9),
			})})
	}
	for i := range tail {
		rd.seq++
		tail[i].Seq = rd.seq
	}
	w.Events(true, tail...)
	return w.Close()
}

// payload encodes EventSource field values in order.
func payload(values ...any) []byte {
	var b []byte
	for _, v := range values {
		b = appendValue(b, v, 0)
	}
	return b
}

// encodeCLR lays out values by a manifest schema; fields without a value
// are zero.
func encodeCLR(fields []clr.Field, values map[string]any) []byte {
	var b []byte
	for _, f := range fields {
		v := values[f.Name]
		switch f.Type {
		case clr.UTF16:
			s, _ := v.(string)
			b = appendValue(b, s, 0)
		case clr.GUID:
			b = append(b, make([]byte, 16)...)
		default:
			u, _ := v.(uint64)
			b = appendValue(b, u, sizeOf(f.Type))
		}
	}
	return b
}

func sizeOf(t clr.Type) int {
	switch t {
	case clr.UInt8, clr.Int8:
		return 1
	case clr.UInt16, clr.Int16:
		return 2
	case clr.UInt32, clr.Int32, clr.Bool32, clr.Float:
		return 4
	}
	return 8
}

func appendValue(b []byte, v any, size int) []byte {
	switch v := v.(type) {
	case string:
		for _, u := range utf16.Encode([]rune(v)) {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
		return append(b, 0, 0)
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v))
	case int32:
		return binary.LittleEndian.AppendUint32(b, uint32(v))
	case uint32:
		return binary.LittleEndian.AppendUint32(b, v)
	case float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	case uint64:
		switch size {
		case 1:
			return append(b, byte(v))
		case 2:
			return binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			return binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		return binary.LittleEndian.AppendUint64(b, v)
	}
	log.Fatalf("demogen: cannot encode %T", v)
	return nil
}
