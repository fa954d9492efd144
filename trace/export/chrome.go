package export

import (
	"bufio"
	"cmp"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"viewer/trace"
)

// ChromeWriter writes events in the JSON trace-event format that
// chrome://tracing, Perfetto's UI and speedscope import (the "JSON Object
// Format" of Google's Trace Event Format document):
//
//   - every event is an instant (`"ph":"i"`, thread-scoped), its fields,
//     label and labels (activity ids) in `args`;
//   - a pair of events named …Start and …Stop of one provider on one
//     thread is a slice instead (`"ph":"X"` with the Start's args, and the
//     Stop's under "stop"): a Stop closes the innermost open Start of its
//     name, and the Starts opened inside it that no Stop closed stay
//     instants, as do Starts never closed, so slices nest;
//   - consecutive events with the same non-zero ActivityId (or
//     RelatedActivityId) are linked by a flow (`s` then `f`, one id per
//     link, bound to the enclosing slice), so the activity can be followed
//     across threads;
//   - tracks are named with `thread_name` and `process_name` metadata.
//
// Times are microseconds with nanosecond decimals. Events must be written
// in time order; Close finishes the document.
type ChromeWriter struct {
	w       *bufio.Writer
	m       *trace.Meta
	r       trace.Reader
	b       []byte
	n       int64
	last    trace.Time
	open    map[[2]int64][]openSlice // per (pid, tid): the open Starts, innermost last
	flows   map[string]flowEnd       // per activity id: its latest event
	nflow   int64
	threads map[[2]int64]string
	procs   map[int64]bool
	dropped int64 // links not drawn because flows was full
}

// openSlice is a Start event waiting for its Stop.
type openSlice struct {
	key  string // provider, NUL, name without "Start"
	name string // the slice's name
	cat  string
	ts   trace.Time
	args []byte // `{…}`
}

// maxOpen bounds the Starts a thread keeps open; past it a Start is an
// instant at once.
const maxOpen = 256

// flowEnd is where an activity's latest event happened.
type flowEnd struct {
	ts       trace.Time
	pid, tid int64
}

// MaxChromeFlows bounds the activities a ChromeWriter follows at once;
// past it new activities get no flow arrows (their ids stay in args).
const MaxChromeFlows = 1 << 20

// NewChromeWriter returns a writer of the events of r to w.
func NewChromeWriter(w io.Writer, r trace.Reader) *ChromeWriter {
	c := &ChromeWriter{w: bufio.NewWriterSize(w, 1<<16), m: r.Meta(), r: r,
		open: map[[2]int64][]openSlice{}, flows: map[string]flowEnd{}, threads: map[[2]int64]string{}, procs: map[int64]bool{}}
	c.w.WriteString(`{"displayTimeUnit":"ns","traceEvents":[` + "\n")
	return c
}

// ids returns the pid and tid an event is shown under: the track's, or
// for tracks without them (CPEL, elog) pid 1 and the track number.
func (c *ChromeWriter) ids(t trace.TrackID) (pid, tid int64, name string) {
	if t < 0 || int(t) >= len(c.m.Tracks) {
		return 0, 0, "no track"
	}
	tr := &c.m.Tracks[t]
	pid, tid = tr.PID, tr.TID
	if pid < 0 {
		pid = 1
	}
	if tid < 0 {
		tid = 1_000_000 + int64(t)
	}
	return pid, tid, tr.Name
}

func appendTS(b []byte, t trace.Time) []byte {
	neg := t < 0
	u := uint64(t)
	if neg {
		u = -u
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// head appends `{"name":…,"cat":…,"ph":"X","ts":…,"pid":…,"tid":…`.
func (c *ChromeWriter) head(b []byte, name, cat, ph string, ts trace.Time, pid, tid int64) []byte {
	if c.n > 0 {
		b = append(b, ",\n"...)
	}
	c.n++
	b = append(b, `{"name":`...)
	b = AppendString(b, name)
	b = append(b, `,"cat":`...)
	b = AppendString(b, cat)
	b = append(b, `,"ph":"`...)
	b = append(b, ph...)
	b = append(b, `","ts":`...)
	b = appendTS(b, ts)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	return strconv.AppendInt(b, tid, 10)
}

// Write writes one event with its decoded details.
func (c *ChromeWriter) Write(e trace.Event, d trace.Details) error {
	pid, tid, tname := c.ids(e.Track)
	key := [2]int64{pid, tid}
	if _, ok := c.threads[key]; !ok {
		c.threads[key] = tname
	}
	c.procs[pid] = true
	name, cat := "?", ""
	if e.Type >= 0 && int(e.Type) < len(c.m.Types) {
		et := &c.m.Types[e.Type]
		name, cat = et.Name, et.Provider
	}
	if name == "" {
		name = "#" + strconv.FormatInt(int64(e.Type), 10)
	}
	args, acts := c.args(nil, name, e, d)
	b := c.b[:0]
	if base, ok := strings.CutSuffix(name, "Start"); ok && len(c.open[key]) < maxOpen {
		shown := strings.TrimRight(base, "/")
		if shown == "" {
			shown = name
		}
		c.open[key] = append(c.open[key], openSlice{key: cat + "\x00" + base, name: shown, cat: cat, ts: e.Time, args: args})
	} else if base, ok := strings.CutSuffix(name, "Stop"); ok && c.close(key, cat+"\x00"+base) >= 0 {
		st := c.open[key]
		k := c.close(key, cat+"\x00"+base)
		for _, o := range st[k+1:] { // opened inside, never closed
			b = c.instant(b, o.name, o.cat, o.ts, pid, tid, o.args)
		}
		o := st[k]
		b = c.head(b, o.name, o.cat, "X", o.ts, pid, tid)
		b = append(b, `,"dur":`...)
		b = appendTS(b, e.Time-o.ts)
		b = append(b, `,"args":`...)
		b = append(b, o.args[:len(o.args)-1]...)
		b = append(b, `,"stop":`...)
		b = append(b, args...)
		b = append(b, '}', '}')
		c.open[key] = st[:k]
	} else {
		b = c.instant(b, name, cat, e.Time, pid, tid, args)
	}
	for _, a := range acts {
		b = c.flow(b, a, flowEnd{e.Time, pid, tid})
	}
	c.last = max(c.last, e.Time)
	c.b = b
	_, err := c.w.Write(b)
	return err
}

// close returns the index of the innermost open Start of key on the
// thread, or -1.
func (c *ChromeWriter) close(thread [2]int64, key string) int {
	st := c.open[thread]
	for k := len(st) - 1; k >= 0; k-- {
		if st[k].key == key {
			return k
		}
	}
	return -1
}

// instant appends an instant event.
func (c *ChromeWriter) instant(b []byte, name, cat string, ts trace.Time, pid, tid int64, args []byte) []byte {
	b = c.head(b, name, cat, "i", ts, pid, tid)
	b = append(b, `,"s":"t","args":`...)
	b = append(b, args...)
	return append(b, '}')
}

// args appends an event's args object to b: its name, label, fields
// (as "field:NAME") and labels; acts are its non-zero activity ids.
func (c *ChromeWriter) args(b []byte, name string, e trace.Event, d trace.Details) ([]byte, []string) {
	b = append(b, `{"event":`...)
	b = AppendString(b, name)
	b = append(b, `,"label":`...)
	b = AppendString(b, d.Label)
	for i := range d.Fields {
		f := &d.Fields[i]
		b = append(b, ',')
		b = AppendString(b, "field:"+f.Name)
		b = append(b, ':')
		b = appendValue(b, &f.Value)
	}
	var acts []string
	if e.Labels != trace.NoLabels {
		for _, l := range c.r.Labels(e.Labels) {
			b = append(b, ',')
			b = AppendString(b, l.Key)
			b = append(b, ':')
			b = appendValue(b, &l.Value)
			if (l.Key == "ActivityId" || l.Key == "RelatedActivityId") && l.Value.Kind() == trace.KindGUID && l.Value.Str() != zeroGUID {
				acts = append(acts, l.Value.String())
			}
		}
	}
	return append(b, '}'), acts
}

var zeroGUID = string(make([]byte, 16))

// flow links the activity's previous event to this one.
func (c *ChromeWriter) flow(b []byte, act string, here flowEnd) []byte {
	prev, seen := c.flows[act]
	if !seen && len(c.flows) >= MaxChromeFlows {
		c.dropped++
		return b
	}
	c.flows[act] = here
	if !seen {
		return b
	}
	c.nflow++
	id := strconv.FormatInt(c.nflow, 10)
	b = c.head(b, act, "activity", "s", prev.ts, prev.pid, prev.tid)
	b = append(b, `,"id":`+id+`,"bp":"e"}`...)
	b = c.head(b, act, "activity", "f", here.ts, here.pid, here.tid)
	return append(b, `,"id":`+id+`,"bp":"e"}`...)
}

// Close writes the Starts still open as instants, names the threads and processes and
// finishes the document; it does not close the underlying writer.
func (c *ChromeWriter) Close() error {
	b := c.b[:0]
	for _, key := range sortedKeys(c.open) {
		for _, o := range c.open[key] { // never closed
			b = c.instant(b, o.name, o.cat, o.ts, key[0], key[1], o.args)
		}
	}
	for _, key := range sortedKeys(c.threads) {
		name := c.threads[key]
		b = c.head(b, "thread_name", "__metadata", "M", 0, key[0], key[1])
		b = append(b, `,"args":{"name":`...)
		b = AppendString(b, name)
		b = append(b, "}}"...)
	}
	for _, pid := range slices.Sorted(maps.Keys(c.procs)) {
		name := "process " + strconv.FormatInt(pid, 10)
		b = c.head(b, "process_name", "__metadata", "M", 0, pid, 0)
		b = append(b, `,"args":{"name":`...)
		b = AppendString(b, name)
		b = append(b, "}}"...)
	}
	b = append(b, "\n],\"otherData\":{\"format\":"...)
	b = AppendString(b, c.m.Format)
	b = append(b, `,"flows_dropped":`...)
	b = strconv.AppendInt(b, c.dropped, 10)
	b = append(b, "}}\n"...)
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.w.Flush()
}

func sortedKeys[V any](m map[[2]int64]V) [][2]int64 {
	return slices.SortedFunc(maps.Keys(m), func(a, b [2]int64) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
}
