package perf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"viewer/trace"
	"viewer/trace/export"
	"viewer/trace/perf/eventheader"
	"viewer/trace/tracetest"
)

// The goldens of this file are the C++ EventFormatter's JSON
// (LinuxTracepoints TestOutput/*.linux.json). Both sides are brought to one
// canonical text per event: keys in order (repeated keys kept), ";tag="
// suffixes dropped, hex digits upper-cased, invalid text collapsed to one
// U+FFFD, numbers compared by value.

// jv is an ordered JSON value.
type jv struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []jv
	str  string
}

func parseJV(dec *json.Decoder) (jv, error) {
	tok, err := dec.Token()
	if err != nil {
		return jv{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := jv{kind: 'o'}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return v, err
				}
				e, err := parseJV(dec)
				if err != nil {
					return v, err
				}
				v.keys = append(v.keys, k.(string))
				v.vals = append(v.vals, e)
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := jv{kind: 'a'}
			for dec.More() {
				e, err := parseJV(dec)
				if err != nil {
					return v, err
				}
				v.vals = append(v.vals, e)
			}
			_, err := dec.Token()
			return v, err
		}
	case string:
		return jv{kind: 's', str: t}, nil
	case json.Number:
		return jv{kind: 'n', str: t.String()}, nil
	case bool:
		return jv{kind: 'b', str: strconv.FormatBool(t)}, nil
	case nil:
		return jv{kind: 'z'}, nil
	}
	return jv{}, io.ErrUnexpectedEOF
}

var (
	tagSuffix = regexp.MustCompile(`;tag=0x[0-9A-Fa-f]+$`)
	hexString = regexp.MustCompile(`^0x[0-9A-Fa-f]+$`)
)

func canonString(s string) string {
	if hexString.MatchString(s) {
		return "0x" + strings.ToUpper(s[2:])
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for strings.Contains(s, "\uFFFD\uFFFD") {
		s = strings.ReplaceAll(s, "\uFFFD\uFFFD", "\uFFFD")
	}
	return s
}

func canonNumber(s string) string {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}

// canon renders v canonically into b.
func (v jv) canon(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(canonString(tagSuffix.ReplaceAllString(k, ""))))
			b.WriteByte(':')
			v.vals[i].canon(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			e.canon(b)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(strconv.Quote(canonString(v.str)))
	case 'n':
		b.WriteString(canonNumber(v.str))
	case 'b':
		b.WriteString(v.str)
	case 'z':
		b.WriteString("null")
	}
}

// cxxPidFields are the tracefs fields of the goldens whose type is a
// typedef (pid_t): the C++ formatter shows them as hex strings, the reader
// as signed decimal numbers, as perf does (NOTES.md §tracefs).
var cxxPidFields = map[string][]string{"sched:sched_switch": {"prev_pid", "next_pid"}}

// cxxTypedefs turns the golden's hex strings of cxxPidFields into numbers.
func cxxTypedefs(e jv) {
	if e.kind != 'o' || len(e.keys) == 0 || e.keys[0] != "n" {
		return
	}
	for i, k := range e.keys {
		if slices.Contains(cxxPidFields[e.vals[0].str], k) && e.vals[i].kind == 's' && hexString.MatchString(e.vals[i].str) {
			if v, err := strconv.ParseUint(e.vals[i].str[2:], 16, 32); err == nil {
				e.vals[i] = jv{kind: 'n', str: strconv.FormatInt(int64(int32(v)), 10)}
			}
		}
	}
}

// readGolden returns the canonical text of every event of a .linux.json.
func readGolden(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	dec := json.NewDecoder(bytes.NewReader(append(append([]byte("{"), data...), '}')))
	dec.UseNumber()
	root, err := parseJV(dec)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range root.vals[0].vals {
		cxxTypedefs(e)
		var b strings.Builder
		e.canon(&b)
		out = append(out, b.String())
	}
	return out
}

// valueJV converts a decoded value to the golden's shape.
func valueJV(v trace.Value) jv {
	switch v.Kind() {
	case trace.KindStruct:
		o := jv{kind: 'o'}
		for _, f := range v.Fields() {
			o.keys = append(o.keys, f.Name)
			o.vals = append(o.vals, valueJV(f.Value))
		}
		return o
	case trace.KindArray:
		a := jv{kind: 'a'}
		for _, f := range v.Fields() {
			a.vals = append(a.vals, valueJV(f.Value))
		}
		return a
	case trace.KindInt, trace.KindUint, trace.KindFloat:
		return jv{kind: 'n', str: string(export.AppendValue(nil, v))}
	case trace.KindBool:
		return jv{kind: 'b', str: strconv.FormatBool(v.Bool())}
	case trace.KindBad:
		return jv{kind: 'z'}
	}
	return jv{kind: 's', str: v.String()}
}

// eventMeta is what the golden's "meta" object holds.
type eventMeta struct {
	time                       string
	cpu, pid, tid              int64
	hasSample, hasLevel        bool
	id, version, level, opcode int64
	tag                        uint16
	keyword                    uint64
	activity, related          trace.Value
}

func (m eventMeta) jv() jv {
	o := jv{kind: 'o'}
	add := func(k string, v jv) { o.keys = append(o.keys, k); o.vals = append(o.vals, v) }
	num := func(n int64) jv { return jv{kind: 'n', str: strconv.FormatInt(n, 10)} }
	if m.hasSample {
		add("time", jv{kind: 's', str: m.time})
		add("cpu", num(m.cpu))
		add("pid", num(m.pid))
		add("tid", num(m.tid))
	}
	if m.id != 0 {
		add("id", num(m.id))
	}
	if m.version != 0 {
		add("version", num(m.version))
	}
	if m.hasLevel {
		add("level", num(m.level))
	}
	if m.keyword != 0 {
		add("keyword", jv{kind: 's', str: "0x" + strconv.FormatUint(m.keyword, 16)})
	}
	if m.opcode != 0 {
		add("opcode", num(m.opcode))
	}
	if m.tag != 0 {
		add("tag", jv{kind: 's', str: "0x" + strconv.FormatUint(uint64(m.tag), 16)})
	}
	if m.activity.Kind() != trace.KindBad {
		add("activity", jv{kind: 's', str: m.activity.String()})
	}
	if m.related.Kind() != trace.KindBad {
		add("relatedActivity", jv{kind: 's', str: m.related.String()})
	}
	return o
}

func eventJV(name string, fields []trace.Field, m eventMeta) string {
	o := jv{kind: 'o', keys: []string{"n"}, vals: []jv{{kind: 's', str: name}}}
	for _, f := range fields {
		o.keys = append(o.keys, f.Name)
		o.vals = append(o.vals, valueJV(f.Value))
	}
	o.keys = append(o.keys, "meta")
	o.vals = append(o.vals, m.jv())
	var b strings.Builder
	o.canon(&b)
	return b.String()
}

// compareSorted compares two event lists as multisets (the goldens are in
// file order, the reader's in time order).
func compareSorted(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d events, want %d", len(got), len(want))
	}
	slices.Sort(got)
	slices.Sort(want)
	bad := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if bad++; bad <= 8 {
				t.Errorf("event %d:\n got %s\nwant %s", i, got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d events differ", bad)
	}
}

// TestLinuxTracepointsGoldens decodes perf.data (file mode) and pipe.data
// (pipe mode) and compares every event with the C++ decoder's JSON.
func TestLinuxTracepointsGoldens(t *testing.T) {
	dir := tracetest.RealData(t, "perf/LinuxTracepoints/TestOutput")
	for _, tc := range []struct {
		file    string
		samples int
	}{{"perf.data", 539}, {"pipe.data", 551}} {
		t.Run(tc.file, func(t *testing.T) {
			want := readGolden(t, filepath.Join(dir, tc.file+".linux.json"))
			r, _ := openFile(t, filepath.Join(dir, tc.file), Options{})
			res := tracetest.Check(t, r, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if len(res.Events) != tc.samples {
				t.Errorf("%d events, want %d", len(res.Events), tc.samples)
			}
			got := make([]string, 0, len(res.Events))
			m := r.Meta()
			for _, e := range res.Events {
				d, err := r.Details(e)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, eventJV(eventName(m, e), d.Fields, sampleMeta(r, e)))
			}
			compareSorted(t, got, want)
		})
	}
}

func eventName(m *trace.Meta, e trace.Event) string {
	et := m.Types[e.Type]
	return et.Provider + ":" + et.Name
}

func sampleMeta(r *Reader, e trace.Event) eventMeta {
	m := r.Meta()
	tr := m.Tracks[e.Track]
	et := m.Types[e.Type]
	w, _ := m.Clock.WallTime(e.Time)
	em := eventMeta{
		time: w.UTC().Format("2006-01-02T15:04:05.000000000Z"),
		cpu:  int64(e.CPU), pid: int64(uint32(tr.PID)), tid: int64(uint32(tr.TID)), // the C++ formatter prints u32
		hasSample: true,
	}
	if r.types[e.Type].schema != nil {
		em.hasLevel = true
		em.id, em.version, em.level, em.opcode = et.ID, int64(et.Version), int64(et.Level), int64(et.Opcode)
		em.keyword, em.tag = et.Keywords, r.Tag(e.Type)
		for _, l := range r.Labels(e.Labels) {
			switch l.Key {
			case "ActivityId":
				em.activity = l.Value
			case "RelatedActivityId":
				em.related = l.Value
			}
		}
	}
	return em
}

// TestInterceptorGolden decodes the 374 raw EventHeader events of
// EventHeaderInterceptorLE64.dat ({u32 size; name; event} records) and
// compares them with the C++ golden.
func TestInterceptorGolden(t *testing.T) {
	dir := tracetest.RealData(t, "perf/LinuxTracepoints/TestOutput")
	data, err := os.ReadFile(filepath.Join(dir, "EventHeaderInterceptorLE64.dat"))
	if err != nil {
		t.Fatal(err)
	}
	want := readGolden(t, filepath.Join(dir, "EventHeaderInterceptorLE64.dat.linux.json"))
	var got []string
	for p := 0; p < len(data); {
		size := int(binary.LittleEndian.Uint32(data[p:]))
		rec := data[p+4 : p+size]
		p += size
		i := bytes.IndexByte(rec, 0)
		name, ev := string(rec[:i]), rec[i+1:]
		s, err := decodeRawEvent(name, ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got = append(got, s)
	}
	if len(got) != 374 {
		t.Errorf("%d events, want 374", len(got))
	}
	// The .dat golden is in file order, as is the .dat itself.
	if len(got) == len(want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				if bad++; bad <= 10 {
					t.Errorf("event %d:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d events differ", bad)
		}
	}
}

func decodeRawEvent(tpName string, b []byte) (string, error) {
	e, err := eventheader.Parse(b)
	if err != nil {
		return "", err
	}
	tn, ok := eventheader.ParseTracepointName(tpName)
	if !ok {
		return "", strconv.ErrSyntax
	}
	s, err := eventheader.ParseMetadata(e.Metadata, e.BigEndian())
	if err != nil {
		return "", err
	}
	fields, err := s.Decode(e.Payload, e.BigEndian(), nil)
	if err != nil {
		return "", err
	}
	m := eventMeta{hasLevel: true, id: int64(e.Header.ID), version: int64(e.Header.Version),
		level: int64(e.Header.Level), opcode: int64(e.Header.Opcode), tag: e.Header.Tag, keyword: tn.Keyword}
	if e.Activity != nil {
		m.activity = rfcGUID(e.Activity)
	}
	if e.Related != nil {
		m.related = rfcGUID(e.Related)
	}
	return eventJV(tn.Provider+":"+s.Name, fields, m), nil
}

func rfcGUID(b []byte) trace.Value {
	return trace.StringValue(trace.FormatGUID([]byte{b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6],
		b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]}))
}
