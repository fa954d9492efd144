package ipc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Level is an EventSource / ETW event level: a provider's events at this
// level or more important are traced.
type Level uint32

// The levels, from System.Diagnostics.Tracing.EventLevel.
const (
	LevelLogAlways Level = iota
	LevelCritical
	LevelError
	LevelWarning
	LevelInformational
	LevelVerbose
)

var levelNames = []string{"logalways", "critical", "error", "warning", "informational", "verbose"}

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return strconv.FormatUint(uint64(l), 10)
}

// ParseLevel reads a level as dotnet-trace does: a number (above 5 means
// verbose) or a name, in any case.
func ParseLevel(s string) (Level, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return min(Level(n), LevelVerbose), nil
	}
	if i := slices.Index(levelNames, strings.ToLower(s)); i >= 0 {
		return Level(i), nil
	}
	return 0, fmt.Errorf("unknown event level %q (a number 0-5 or one of %s)", s, strings.Join(levelNames, ", "))
}

// Keywords of the runtime provider Microsoft-Windows-DotNETRuntime, named
// as its manifest (ClrEtwAll.man) names them without "Keyword"; a test
// checks them against the manifest.
const (
	KeywordGC                        uint64 = 0x1
	KeywordGCHandle                  uint64 = 0x2
	KeywordAssemblyLoader            uint64 = 0x4
	KeywordLoader                    uint64 = 0x8
	KeywordJit                       uint64 = 0x10
	KeywordNGen                      uint64 = 0x20
	KeywordEndEnumeration            uint64 = 0x80
	KeywordSecurity                  uint64 = 0x400
	KeywordAppDomainResourceMgmt     uint64 = 0x800
	KeywordContention                uint64 = 0x4000
	KeywordException                 uint64 = 0x8000
	KeywordThreading                 uint64 = 0x10000
	KeywordJittedMethodILToNativeMap uint64 = 0x20000
	KeywordOverrideAndSuppressNGen   uint64 = 0x40000
	KeywordType                      uint64 = 0x80000
	KeywordGCHeapSurvivalAndMovement uint64 = 0x400000
	KeywordGCHeapAndTypeNames        uint64 = 0x1000000
	KeywordStack                     uint64 = 0x40000000
	KeywordThreadTransfer            uint64 = 0x80000000
	KeywordCodeSymbols               uint64 = 0x400000000
	KeywordCompilation               uint64 = 0x1000000000
)

// KeywordsDefault is TraceEvent's ClrTraceEventParser.Keywords.Default,
// the runtime keywords of dotnet-trace's cpu-sampling profile
// (0x14C14FCCBD).
const KeywordsDefault = KeywordGC | KeywordType | KeywordGCHeapSurvivalAndMovement |
	KeywordAssemblyLoader | KeywordLoader | KeywordJit | KeywordNGen | KeywordOverrideAndSuppressNGen |
	KeywordEndEnumeration | KeywordSecurity | KeywordAppDomainResourceMgmt | KeywordException |
	KeywordThreading | KeywordContention | KeywordStack | KeywordJittedMethodILToNativeMap |
	KeywordThreadTransfer | KeywordGCHeapAndTypeNames | KeywordCodeSymbols | KeywordCompilation

// Provider names.
const (
	RuntimeProvider        = "Microsoft-Windows-DotNETRuntime"
	SampleProfilerProvider = "Microsoft-DotNETCore-SampleProfiler"
)

// Arg is one key=value of a provider's filter data.
type Arg struct{ Key, Value string }

// Provider is one provider of a session: its events with any of Keywords
// (0: every event, as EventSource reads it) at Level or more important.
type Provider struct {
	Name     string
	Keywords uint64
	Level    Level
	Args     []Arg // filter data, e.g. EventCounterIntervalSec=1
}

// String writes p in the --providers syntax [ParseProvider] reads.
func (p Provider) String() string {
	s := fmt.Sprintf("%s:0x%X:%d", p.Name, p.Keywords, p.Level)
	if len(p.Args) > 0 {
		s += ":" + p.FilterData()
	}
	return s
}

// FilterData returns the arguments as the runtime receives them:
// key=value pairs joined by ';', a key or value holding ';' or '='
// quoted, as Microsoft.Diagnostics.NETCore.Client sends them.
func (p Provider) FilterData() string {
	var sb strings.Builder
	quote := func(s string) string {
		if strings.ContainsAny(s, ";=") {
			return `"` + s + `"`
		}
		return s
	}
	for i, a := range p.Args {
		if i > 0 {
			sb.WriteByte(';')
		}
		sb.WriteString(quote(a.Key) + "=" + quote(a.Value))
	}
	return sb.String()
}

// ParseProvider reads dotnet-trace's --providers syntax,
// Name[:Keywords[:Level[:key=value;…]]]: keywords in hex (0x optional,
// default 0), level a number or a name (default informational), then
// filter data whose values may be quoted to hold ';' or '='.
func ParseProvider(s string) (Provider, error) {
	parts := strings.SplitN(s, ":", 4)
	p := Provider{Name: strings.TrimSpace(parts[0]), Level: LevelInformational}
	if p.Name == "" {
		return Provider{}, fmt.Errorf("provider %q: no name", s)
	}
	if len(parts) > 1 && strings.TrimSpace(parts[1]) != "" {
		k := strings.TrimSpace(parts[1])
		k = strings.TrimPrefix(strings.TrimPrefix(k, "0x"), "0X")
		v, err := strconv.ParseUint(k, 16, 64)
		if err != nil {
			return Provider{}, fmt.Errorf("provider %q: keywords %q are not a hex number", s, parts[1])
		}
		p.Keywords = v
	}
	if len(parts) > 2 && strings.TrimSpace(parts[2]) != "" {
		l, err := ParseLevel(strings.TrimSpace(parts[2]))
		if err != nil {
			return Provider{}, fmt.Errorf("provider %q: %w", s, err)
		}
		p.Level = l
	}
	if len(parts) > 3 && parts[3] != "" {
		args, err := parseArgs(parts[3])
		if err != nil {
			return Provider{}, fmt.Errorf("provider %q: %w", s, err)
		}
		p.Args = args
	}
	return p, nil
}

// parseArgs splits key=value;key="va;lue" pairs; quotes protect ';' and
// '=' and are removed around a value.
func parseArgs(s string) ([]Arg, error) {
	var out []Arg
	var cur strings.Builder
	var key string
	haveKey, inQuote := false, false
	flush := func() error {
		v := cur.String()
		cur.Reset()
		if !haveKey {
			if strings.TrimSpace(v) == "" {
				return nil // an empty pair, as after a trailing ';'
			}
			return fmt.Errorf("filter data %q: %q has no '='", s, v)
		}
		out = append(out, Arg{Key: key, Value: v})
		haveKey = false
		return nil
	}
	for _, c := range s {
		switch {
		case c == '"':
			inQuote = !inQuote
		case inQuote:
			cur.WriteRune(c)
		case c == '=' && !haveKey:
			key, haveKey = cur.String(), true
			cur.Reset()
		case c == ';':
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			cur.WriteRune(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("filter data %q: unterminated quote", s)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// Profile is a named set of providers, as dotnet-trace's --profile.
type Profile struct {
	Name        string
	Description string
	Providers   []Provider
}

// Profiles returns the profiles `viewer attach --profile` knows. The
// keywords follow dotnet-trace's profiles (ListProfilesCommandHandler.cs)
// where it has one.
func Profiles() []Profile {
	return []Profile{
		{"cpu", "managed stacks sampled every millisecond, with the runtime's default events (dotnet-trace's cpu-sampling)", []Provider{
			{Name: SampleProfilerProvider, Level: LevelInformational},
			{Name: RuntimeProvider, Keywords: KeywordsDefault, Level: LevelInformational},
		}},
		{"gc", "garbage collections and allocation ticks (the GC keyword at verbose, as gc-verbose)", []Provider{
			{Name: RuntimeProvider, Keywords: KeywordGC, Level: LevelVerbose},
		}},
		{"exceptions", "exceptions thrown, caught and their handlers", []Provider{
			{Name: RuntimeProvider, Keywords: KeywordException, Level: LevelInformational},
		}},
		{"contention", "monitor lock contention", []Provider{
			{Name: RuntimeProvider, Keywords: KeywordContention, Level: LevelInformational},
		}},
	}
}

// Select returns the providers of the named profiles and of extra, one
// per provider name in first-seen order: the profiles' keywords of one
// provider are combined and the most verbose level kept; a provider in
// extra replaces the profiles' one of that name, as --providers overrides
// --profile in dotnet-trace.
func Select(profiles []string, extra []Provider) ([]Provider, error) {
	var out []Provider
	index := func(name string) int {
		return slices.IndexFunc(out, func(p Provider) bool { return strings.EqualFold(p.Name, name) })
	}
	known := Profiles()
	for _, name := range profiles {
		i := slices.IndexFunc(known, func(p Profile) bool { return strings.EqualFold(p.Name, name) })
		if i < 0 {
			names := make([]string, len(known))
			for j, p := range known {
				names[j] = p.Name
			}
			return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(names, ", "))
		}
		for _, p := range known[i].Providers {
			if j := index(p.Name); j >= 0 {
				out[j].Keywords |= p.Keywords
				out[j].Level = max(out[j].Level, p.Level)
				continue
			}
			out = append(out, p)
		}
	}
	for _, p := range extra {
		if j := index(p.Name); j >= 0 {
			out[j] = p
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
