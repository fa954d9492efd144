// Command gen turns the ETW instrumentation manifests of the .NET runtime
// (ClrEtwAll.man) into the Go schema table of package clr. It reads two
// copies: PerfView's (TraceEvent decodes and names with it) and the
// runtime's own, newer one, which adds events and versions PerfView's
// lacks; see merge for which wins.
//
//	go run ./internal/gen -perfview ClrEtwAll.perfview.man -runtime ClrEtwAll.runtime.man -o schema_gen.go
//
// -v reports on stderr what each manifest contributes.
package main

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"go/format"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

type manifest struct {
	Providers []provider `xml:"instrumentation>events>provider"`
	Strings   []str      `xml:"localization>resources>stringTable>string"`
}

type str struct {
	ID    string `xml:"id,attr"`
	Value string `xml:"value,attr"`
}

type provider struct {
	Name      string     `xml:"name,attr"`
	GUID      string     `xml:"guid,attr"`
	Keywords  []keyword  `xml:"keywords>keyword"`
	Tasks     []task     `xml:"tasks>task"`
	Opcodes   []opcode   `xml:"opcodes>opcode"`
	ValueMaps []valueMap `xml:"maps>valueMap"`
	BitMaps   []valueMap `xml:"maps>bitMap"`
	Templates []template `xml:"templates>template"`
	Events    []event    `xml:"events>event"`
}

type keyword struct {
	Name string `xml:"name,attr"`
	Mask string `xml:"mask,attr"`
}

type task struct {
	Name    string   `xml:"name,attr"`
	Value   string   `xml:"value,attr"`
	Message string   `xml:"message,attr"`
	Opcodes []opcode `xml:"opcodes>opcode"`
}

type opcode struct {
	Name    string `xml:"name,attr"`
	Value   string `xml:"value,attr"`
	Message string `xml:"message,attr"`
}

type valueMap struct {
	Name    string `xml:"name,attr"`
	Entries []struct {
		Value   string `xml:"value,attr"`
		Message string `xml:"message,attr"`
	} `xml:"map"`
}

type template struct {
	TID   string     `xml:"tid,attr"`
	Items []dataItem `xml:",any"`
}

// dataItem is a <data> or <struct> element of a template.
type dataItem struct {
	XMLName xml.Name
	Name    string     `xml:"name,attr"`
	InType  string     `xml:"inType,attr"`
	OutType string     `xml:"outType,attr"`
	Map     string     `xml:"map,attr"`
	Count   string     `xml:"count,attr"`
	Length  string     `xml:"length,attr"`
	Items   []dataItem `xml:",any"`
}

type event struct {
	Value    string `xml:"value,attr"`
	Version  string `xml:"version,attr"`
	Level    string `xml:"level,attr"`
	Template string `xml:"template,attr"`
	Keywords string `xml:"keywords,attr"`
	Opcode   string `xml:"opcode,attr"`
	Task     string `xml:"task,attr"`
	Symbol   string `xml:"symbol,attr"`
}

// Standard ETW levels and opcodes (winmeta.xml).
var levels = map[string]int{"win:LogAlways": 0, "win:Critical": 1, "win:Error": 2, "win:Warning": 3, "win:Informational": 4, "win:Verbose": 5}

var stdOpcodes = map[string]struct {
	value int
	name  string
}{
	"win:Info": {0, ""}, "win:Start": {1, "Start"}, "win:Stop": {2, "Stop"}, "win:DC_Start": {3, "DCStart"},
	"win:DC_Stop": {4, "DCStop"}, "win:Extension": {5, "Extension"}, "win:Reply": {6, "Reply"},
	"win:Resume": {7, "Resume"}, "win:Suspend": {8, "Suspend"}, "win:Send": {9, "Send"}, "win:Receive": {240, "Receive"},
}

var inTypes = map[string]string{
	"win:UInt8": "UInt8", "win:UInt16": "UInt16", "win:UInt32": "UInt32", "win:UInt64": "UInt64",
	"win:Int8": "Int8", "win:Int16": "Int16", "win:Int32": "Int32", "win:Int64": "Int64",
	"win:Pointer": "Pointer", "win:Boolean": "Bool32", "win:Double": "Double", "win:Float": "Float",
	"win:GUID": "GUID", "win:UnicodeString": "UTF16", "win:AnsiString": "ANSI", "win:Binary": "Binary",
}

func main() {
	pvPath := flag.String("perfview", "", "PerfView's copy of the manifest (its names win)")
	rtPath := flag.String("runtime", "", "the runtime's own, newer manifest (adds what PerfView's lacks)")
	out := flag.String("o", "schema_gen.go", "the Go file to write")
	verbose := flag.Bool("v", false, "report what each manifest contributes and where they disagree")
	flag.Parse()
	pv, err := readManifest(*pvPath)
	if err != nil {
		log.Fatal(err)
	}
	var rt *manifest
	if *rtPath != "" {
		if rt, err = readManifest(*rtPath); err != nil {
			log.Fatal(err)
		}
	}
	maps := &mapTable{vars: map[string]string{}, names: map[string]int{}}
	pvProviders, err := convert(pv, sourcePerfView, maps)
	if err != nil {
		log.Fatalf("%s: %v", *pvPath, err)
	}
	var rtProviders []genProvider
	if rt != nil {
		if rtProviders, err = convert(rt, sourceRuntime, maps); err != nil {
			log.Fatalf("%s: %v", *rtPath, err)
		}
	}
	var report io.Writer = io.Discard
	if *verbose {
		report = os.Stderr
	}
	providers := merge(pvProviders, rtProviders, report)
	src, err := render(providers, maps)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

func readManifest(path string) (*manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := xml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &m, nil
}

// Where an event's definition comes from.
const (
	sourcePerfView = "perfview"
	sourceRuntime  = "runtime"
)

// genProvider and genEvent are a manifest's providers and events as the
// table will hold them, the fields already rendered as Go source.
type genProvider struct {
	name, guid string
	events     []genEvent
	maps       map[string]genMap // by the manifest's map name
}

type genMap struct {
	variable string
	entries  map[uint64]string
}

type genEvent struct {
	id, version         int
	name, symbol        string
	task, opcode, level int
	keywords            uint64
	fields              string // a []Field literal, or "nil"
	layout              string // fields with the maps' names for variables, to compare
	source              string
}

// mapTable holds the value and bit maps of both manifests as Go
// variables, one per distinct map: a map both manifests define alike is
// one variable.
type mapTable struct {
	vars  map[string]string // literal → variable name
	names map[string]int    // variable names taken
	decls []struct{ variable, literal string }
}

func (t *mapTable) variable(name, literal string) string {
	if v, ok := t.vars[literal]; ok {
		return v
	}
	v := "map" + name
	if n := t.names[v]; n > 0 {
		v += strconv.Itoa(n + 1)
	}
	t.names["map"+name]++
	t.vars[literal] = v
	t.decls = append(t.decls, struct{ variable, literal string }{v, literal})
	return v
}

// merge combines the two manifests' providers. The table holds every
// (provider, event id, version) that either defines:
//
//   - an id and version both define is PerfView's: the version fixes the
//     payload's layout, so the two agree on the wire, and PerfView's copy
//     is the one TraceEvent decodes with and its baselines name from;
//   - a version only the runtime's manifest defines (a newer one, or an
//     event PerfView's copy lacks) is the runtime's;
//   - a value or bit map of PerfView's that the runtime's manifest
//     extends (same name and provider, every PerfView entry kept as is,
//     more values named) is the runtime's, for every event: newer runtimes
//     emit the values it adds (GCAllocationKindMap's Pinned, ModuleFlagsMap's
//     ReadyToRunModule); where an entry's text differs, PerfView's map stays;
//   - every version of an id PerfView's copy knows is named as PerfView
//     names that id, so an event keeps its name across versions; ids only
//     the runtime's manifest has are named from its tasks and opcodes by
//     the same Task/Opcode rule.
//
// Providers keep PerfView's order, the runtime's new ones after them;
// events keep their manifest's order, the runtime's additions after
// PerfView's.
func merge(pv, rt []genProvider, report io.Writer) []genProvider {
	out := slices.Clone(pv)
	counts := map[string]int{}
	for _, p := range pv {
		counts[sourcePerfView] += len(p.events)
	}
	for _, rp := range rt {
		i := slices.IndexFunc(out, func(p genProvider) bool { return p.name == rp.name })
		if i < 0 {
			out = append(out, rp)
			counts[sourceRuntime] += len(rp.events)
			fmt.Fprintf(report, "%s: new provider, %d events\n", rp.name, len(rp.events))
			continue
		}
		p := &out[i]
		p.events = slices.Clone(p.events)
		var upgrade []string // old, new pairs for strings.Replacer
		for _, name := range slices.Sorted(maps.Keys(p.maps)) {
			pm := p.maps[name]
			rm, ok := rp.maps[name]
			if !ok || rm.variable == pm.variable {
				continue
			}
			if !extends(rm.entries, pm.entries) {
				fmt.Fprintf(report, "%s map %s: an entry differs; PerfView's kept\n", p.name, name)
				continue
			}
			fmt.Fprintf(report, "%s map %s: the runtime's, which names %d values more\n", p.name, name, len(rm.entries)-len(pm.entries))
			for _, end := range []string{",", "}"} {
				upgrade = append(upgrade, "Map: "+pm.variable+end, "Map: "+rm.variable+end)
			}
		}
		if len(upgrade) > 0 {
			r := strings.NewReplacer(upgrade...)
			for j := range p.events {
				p.events[j].fields = r.Replace(p.events[j].fields)
			}
		}
		known := map[[2]int]*genEvent{}
		names := map[int]string{}
		for j := range p.events {
			e := &p.events[j]
			known[[2]int{e.id, e.version}] = e
			names[e.id] = e.name
		}
		for _, e := range rp.events {
			if k, ok := known[[2]int{e.id, e.version}]; ok {
				switch {
				case k.layout != e.layout:
					fmt.Fprintf(report, "%s %d v%d: fields differ; PerfView's %s kept over the runtime's %s\n", p.name, e.id, e.version, k.symbol, e.symbol)
				case k.fields != e.fields:
					fmt.Fprintf(report, "%s %d v%d %s: a value map differs; PerfView's kept\n", p.name, e.id, e.version, k.symbol)
				}
				if k.name != e.name {
					fmt.Fprintf(report, "%s %d v%d: PerfView's name %s kept over the runtime's %s\n", p.name, e.id, e.version, k.name, e.name)
				}
				continue
			}
			if name, ok := names[e.id]; ok && name != e.name {
				fmt.Fprintf(report, "%s %d v%d %s: named %s as PerfView names the id (the runtime's manifest: %s)\n", p.name, e.id, e.version, e.symbol, name, e.name)
				e.name = name
			} else if !ok {
				if te, ok := traceEventNames[p.name][e.id]; ok {
					e.name = te
				}
				names[e.id] = e.name
				fmt.Fprintf(report, "%s %d v%d %s: new id, named %s\n", p.name, e.id, e.version, e.symbol, e.name)
			} else {
				fmt.Fprintf(report, "%s %d v%d %s: new version of %s\n", p.name, e.id, e.version, e.symbol, e.name)
			}
			p.events = append(p.events, e)
			counts[sourceRuntime]++
		}
	}
	fmt.Fprintf(report, "events from PerfView's manifest: %d, from the runtime's: %d\n", counts[sourcePerfView], counts[sourceRuntime])
	return out
}

// extends reports whether map a keeps every entry of b.
func extends(a, b map[uint64]string) bool {
	for v, text := range b {
		if a[v] != text {
			return false
		}
	}
	return true
}

// traceEventNames are TraceEvent's names of events that only the
// runtime's manifest defines where they differ from the Task/Opcode
// names its tasks and opcodes give (TraceEvent's ClrTraceEventParser.cs
// at the commit PerfView's manifest copy comes from, f3ec1b38: it keeps an
// opcode that repeats the task, MethodDetails, and names some events
// by hand).
var traceEventNames = map[string]map[int]string{
	"Microsoft-Windows-DotNETRuntime": {
		72:  "Method/MethodDetails",
		90:  "Contention/LockCreated",
		202: "GC/MarkWithType",
		159: "Method/R2RGetEntryPoint",
		160: "Method/R2RGetEntryPointStart",
		270: "EventSourceEvent",
		283: "TieredCompilation/BackgroundJitStart",
		284: "TieredCompilation/BackgroundJitStop",
		298: "JitInstrumentationDataVerbose/InstrumentationData",
	},
	"Microsoft-Windows-DotNETRuntimeRundown": {
		280: "TieredCompilationRundown/SettingsDCStart",
		300: "ExecutionCheckpointRundown/ExecutionCheckpointDCEnd",
	},
}

// convert reads a manifest's providers and events, rendering their field
// lists and registering their maps in maps.
func convert(m *manifest, source string, maps *mapTable) ([]genProvider, error) {
	strs := map[string]string{}
	for _, s := range m.Strings {
		strs[s.ID] = s.Value
	}
	msg := func(ref string) string {
		id, ok := strings.CutPrefix(ref, "$(string.")
		if !ok {
			return ref
		}
		return strs[strings.TrimSuffix(id, ")")]
	}
	var out []genProvider
	for _, p := range m.Providers {
		gp := genProvider{name: p.Name, guid: strings.ToLower(strings.Trim(p.GUID, "{}"))}
		vars := map[string]string{}     // map name → Go variable
		mapNames := map[string]string{} // map name → itself
		gp.maps = map[string]genMap{}
		for i, vm := range slices.Concat(p.ValueMaps, p.BitMaps) {
			lit, entries := mapLiteral(vm, i >= len(p.ValueMaps), msg)
			vars[vm.Name] = maps.variable(vm.Name, lit)
			mapNames[vm.Name] = vm.Name
			gp.maps[vm.Name] = genMap{vars[vm.Name], entries}
		}
		kw := map[string]uint64{}
		for _, k := range p.Keywords {
			v, err := strconv.ParseUint(strings.TrimPrefix(k.Mask, "0x"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("keyword %s: %v", k.Name, err)
			}
			kw[k.Name] = v
		}
		tasks := map[string]task{}
		for _, t := range p.Tasks {
			tasks[t.Name] = t
		}
		templates := map[string]template{}
		for _, t := range p.Templates {
			templates[t.TID] = t
		}
		for _, e := range p.Events {
			id, _ := strconv.Atoi(e.Value)
			ver, _ := strconv.Atoi(e.Version)
			var keywords uint64
			for k := range strings.FieldsSeq(e.Keywords) {
				keywords |= kw[k]
			}
			t := tasks[e.Task]
			opValue, opName := 0, ""
			if so, ok := stdOpcodes[e.Opcode]; ok {
				opValue, opName = so.value, so.name
			} else if e.Opcode != "" {
				found := false
				for _, o := range slices.Concat(t.Opcodes, p.Opcodes) {
					if o.Name == e.Opcode {
						opValue, _ = strconv.Atoi(o.Value)
						opName = msg(o.Message)
						found = true
						break
					}
				}
				if !found {
					return nil, fmt.Errorf("%s event %d: unknown opcode %q", p.Name, id, e.Opcode)
				}
			}
			name := msg(t.Message)
			if name == "" {
				name = e.Symbol
			}
			// TraceEvent drops the task's name where an opcode repeats it:
			// GC/GCGenerationRange is GC/GenerationRange.
			if rest, ok := strings.CutPrefix(opName, name); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
				opName = rest
			}
			if opName != "" {
				name += "/" + opName
			}
			taskValue, _ := strconv.Atoi(t.Value)
			ge := genEvent{id: id, version: ver, name: name, symbol: e.Symbol, task: taskValue, opcode: opValue,
				level: levels[e.Level], keywords: keywords, fields: "nil", source: source}
			if e.Template != "" {
				tmpl, ok := templates[e.Template]
				if !ok {
					return nil, fmt.Errorf("%s event %d: unknown template %q", p.Name, id, e.Template)
				}
				var b, layout bytes.Buffer
				if err := writeFields(&b, tmpl.Items, vars); err != nil {
					return nil, fmt.Errorf("%s template %s: %v", p.Name, tmpl.TID, err)
				}
				if err := writeFields(&layout, tmpl.Items, mapNames); err != nil {
					return nil, err
				}
				ge.fields, ge.layout = b.String(), layout.String()
			}
			gp.events = append(gp.events, ge)
		}
		out = append(out, gp)
	}
	return out, nil
}

// render writes the table as Go source.
func render(providers []genProvider, maps *mapTable) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/gen from ClrEtwAll.perfview.man and ClrEtwAll.runtime.man; DO NOT EDIT.\n\npackage clr\n\n")
	b.WriteString("var generatedProviders = []Provider{\n")
	for _, p := range providers {
		fmt.Fprintf(&b, "{Name: %q, GUID: %q, Events: []Event{\n", p.name, p.guid)
		for _, e := range p.events {
			if e.source != sourcePerfView {
				fmt.Fprintf(&b, "// %s: from the %s manifest\n", e.symbol, e.source)
			}
			fmt.Fprintf(&b, "{ID: %d, Version: %d, Name: %q, Symbol: %q, Task: %d, Opcode: %d, Level: %d, Keywords: %#x, Fields: %s},\n",
				e.id, e.version, e.name, e.symbol, e.task, e.opcode, e.level, e.keywords, e.fields)
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n\n")
	used := b.String()
	for _, d := range maps.decls {
		if strings.Contains(used, "Map: "+d.variable+",") || strings.Contains(used, "Map: "+d.variable+"}") {
			fmt.Fprintf(&b, "var %s = %s\n", d.variable, d.literal)
		}
	}
	return format.Source(b.Bytes())
}

// mapLiteral returns a map as Go source and its entries.
func mapLiteral(vm valueMap, bits bool, msg func(string) string) (string, map[uint64]string) {
	var sb strings.Builder
	entries := map[uint64]string{}
	fmt.Fprintf(&sb, "&Map{Name: %q, Bits: %v, Entries: []MapEntry{", vm.Name, bits)
	for _, e := range vm.Entries {
		v, err := strconv.ParseUint(strings.TrimPrefix(e.Value, "0x"), 16, 64)
		if !strings.HasPrefix(e.Value, "0x") {
			v, err = strconv.ParseUint(e.Value, 10, 64)
		}
		if err != nil {
			log.Fatalf("map %s value %q: %v", vm.Name, e.Value, err)
		}
		fmt.Fprintf(&sb, "{%#x, %q}, ", v, msg(e.Message))
		entries[v] = msg(e.Message)
	}
	sb.WriteString("}}")
	return sb.String(), entries
}

func writeFields(b *bytes.Buffer, items []dataItem, maps map[string]string) error {
	b.WriteString("[]Field{")
	for _, it := range items {
		switch it.XMLName.Local {
		case "data":
			typ, ok := inTypes[it.InType]
			if !ok {
				return fmt.Errorf("field %s: unknown inType %q", it.Name, it.InType)
			}
			fmt.Fprintf(b, "{Name: %q, Type: %s", it.Name, typ)
			if strings.HasPrefix(it.OutType, "win:HexInt") {
				b.WriteString(", Hex: true")
			}
			if it.Map != "" {
				lit, ok := maps[it.Map]
				if !ok {
					return fmt.Errorf("field %s: unknown map %q", it.Name, it.Map)
				}
				fmt.Fprintf(b, ", Map: %s", lit)
			}
		case "struct":
			fmt.Fprintf(b, "{Name: %q, Type: Struct, Fields: ", it.Name)
			if err := writeFields(b, it.Items, maps); err != nil {
				return err
			}
		default:
			continue // UserData and other presentation elements
		}
		if err := writeCount(b, "Count", it.Count); err != nil {
			return err
		}
		if err := writeCount(b, "Length", it.Length); err != nil {
			return err
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
	return nil
}

// writeCount writes a count or length attribute: a number or the name of
// an earlier field holding it.
func writeCount(b *bytes.Buffer, key, v string) error {
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		fmt.Fprintf(b, ", %s: %d", key, n)
		return nil
	}
	fmt.Fprintf(b, ", %sField: %q", key, v)
	return nil
}
