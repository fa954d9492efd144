package perf

import (
	"sort"
	"strconv"
	"strings"
)

// recordSpec is what the reader knows of one record type.
type recordSpec struct {
	name string
	// used is true for the types the reader applies (SAMPLE, COMM, LOST…);
	// the others are known to perf but carry nothing the viewer shows, and
	// are counted and reported when a file holds them.
	used bool
}

// recordTypes names every record type of current perf: the kernel's
// enum perf_event_type (include/uapi/linux/perf_event.h, 1…22) and perf's
// enum perf_user_event_type (tools/lib/perf/include/perf/event.h, 64…86).
// A type not in this table is unknown: its records are skipped, counted
// and reported as such.
var recordTypes = map[uint32]recordSpec{
	recMmap:            {"MMAP", false},
	recLost:            {"LOST", true},
	recComm:            {"COMM", true},
	recExit:            {"EXIT", false}, // read, but thread ends are not shown
	5:                  {"THROTTLE", false},
	6:                  {"UNTHROTTLE", false},
	recFork:            {"FORK", true},
	8:                  {"READ", false},
	recSample:          {"SAMPLE", true},
	recMmap2:           {"MMAP2", false},
	11:                 {"AUX", false},
	12:                 {"ITRACE_START", false},
	recLostSamples:     {"LOST_SAMPLES", true},
	14:                 {"SWITCH", false},
	15:                 {"SWITCH_CPU_WIDE", false},
	16:                 {"NAMESPACES", false},
	17:                 {"KSYMBOL", false},
	18:                 {"BPF_EVENT", false},
	19:                 {"CGROUP", false},
	20:                 {"TEXT_POKE", false},
	21:                 {"AUX_OUTPUT_HW_ID", false},
	22:                 {"CALLCHAIN_DEFERRED", false},
	recHeaderAttr:      {"HEADER_ATTR", true},
	recHeaderEventType: {"HEADER_EVENT_TYPE", false},
	recTracingData:     {"HEADER_TRACING_DATA", true},
	recBuildID:         {"HEADER_BUILD_ID", false},
	recFinishedRound:   {"FINISHED_ROUND", true},
	69:                 {"ID_INDEX", false},
	70:                 {"AUXTRACE_INFO", false},
	recAuxtrace:        {"AUXTRACE", false},
	72:                 {"AUXTRACE_ERROR", false},
	73:                 {"THREAD_MAP", false},
	74:                 {"CPU_MAP", false},
	75:                 {"STAT_CONFIG", false},
	76:                 {"STAT", false},
	77:                 {"STAT_ROUND", false},
	recEventUpdate:     {"EVENT_UPDATE", true},
	79:                 {"TIME_CONV", false},
	recHeaderFeature:   {"HEADER_FEATURE", true},
	recCompressed:      {"COMPRESSED", true},
	recFinishedInit:    {"FINISHED_INIT", true},
	recCompressed2:     {"COMPRESSED2", true},
	84:                 {"BPF_METADATA", false},
	85:                 {"SCHEDSTAT_CPU", false},
	86:                 {"SCHEDSTAT_DOMAIN", false},
}

// maxRecordKinds bounds the distinct record types a file can make the
// reader count one by one; further unknown types are counted together.
const maxRecordKinds = 256

// recordCounts counts the records of a file by type: those of the file
// and those found in its compressed data.
type recordCounts struct {
	low   [128]int64 // types below 128, counted without a map (every record passes here)
	n     map[uint32]int64
	other int64 // unknown types beyond maxRecordKinds
}

func (c *recordCounts) add(typ uint32) {
	if typ < uint32(len(c.low)) {
		c.low[typ]++
		return
	}
	if c.n == nil {
		c.n = map[uint32]int64{}
	}
	if _, ok := c.n[typ]; ok || len(c.n) < maxRecordKinds {
		c.n[typ]++
		return
	}
	c.other++
}

// RecordName returns perf's name of a record type, or "" for a type
// perf does not define.
func RecordName(typ uint32) string { return recordTypes[typ].name }

// merge moves the counts of low types into n; notices and census call it.
func (c *recordCounts) merge() {
	for t, k := range c.low {
		if k != 0 {
			if c.n == nil {
				c.n = map[uint32]int64{}
			}
			c.n[uint32(t)] += k
			c.low[t] = 0
		}
	}
}

// count returns the number of records of a type.
func (c *recordCounts) count(typ uint32) int64 {
	if typ < uint32(len(c.low)) && c.low[typ] != 0 {
		return c.low[typ] + c.n[typ]
	}
	return c.n[typ]
}

// notices returns what the reader says about the records it did not
// apply: one notice listing the known types it skipped, one per unknown
// type.
func (c *recordCounts) notices() []string {
	c.merge()
	types := make([]uint32, 0, len(c.n))
	for t := range c.n {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	var skipped []string
	var out []string
	for _, t := range types {
		spec, known := recordTypes[t]
		switch {
		case !known:
			out = append(out, "perf.data: "+strconv.FormatInt(c.n[t], 10)+" records of unknown type "+strconv.FormatUint(uint64(t), 10)+" skipped")
		case !spec.used:
			skipped = append(skipped, strconv.FormatInt(c.n[t], 10)+" "+spec.name)
		}
	}
	if c.other > 0 {
		out = append(out, "perf.data: "+strconv.FormatInt(c.other, 10)+" more records of other unknown types skipped")
	}
	if len(skipped) > 0 {
		out = append([]string{"perf.data: records the viewer does not show were skipped: " + strings.Join(skipped, ", ")}, out...)
	}
	return out
}

// census renders the record counts as "N NAME" items, by type number.
func (c *recordCounts) census() string {
	c.merge()
	types := make([]uint32, 0, len(c.n))
	for t := range c.n {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	parts := make([]string, 0, len(types)+1)
	for _, t := range types {
		name := recordTypes[t].name
		if name == "" {
			name = "type " + strconv.FormatUint(uint64(t), 10)
		}
		parts = append(parts, strconv.FormatInt(c.n[t], 10)+" "+name)
	}
	if c.other > 0 {
		parts = append(parts, strconv.FormatInt(c.other, 10)+" of other types")
	}
	return strings.Join(parts, ", ")
}
