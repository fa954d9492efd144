package span

import (
	"cmp"
	"slices"

	"viewer/trace"
)

// Activities pairs the Start and Stop events of activities by their
// activity id and nests them by the parent (related) activity id the
// Start names. It is format-neutral: the format's deriver says which
// events start and stop what (trace/clr: EventSource opcodes 1 and 2;
// trace/perf/eventheader: EventHeader activity opcodes) and hands over
// the ids as bytes.
//
// A Start opens a slice on the track the caller gives (the thread that
// started it); its depth is one more than its parent's when the parent is
// open on the same track, else 0. A Stop closes the latest open activity
// of the same task and id; a Stop with no open Start becomes an
// OpenStart slice from the trace's first time; activities still open at
// Finish become OpenEnd slices.
type Activities struct {
	open map[actKey][]*openAct
	byID map[string]*openAct // the latest open activity of each id
	seq  int64
	n    int // activities open
}

type actKey struct {
	task string
	id   string
}

type openAct struct {
	key    actKey
	start  trace.Time
	track  TrackID
	thread trace.TrackID
	name   NameID
	args   []trace.Field
	depth  uint16
	seq    int64 // order of the Starts
}

// MaxOpenActivities bounds the activities open at once; further Starts
// are counted as dropped.
const MaxOpenActivities = 1 << 20

// Start opens an activity: task pairs it with its Stop (the event name
// without "Start"), name is the slice's name, id its activity id, parent
// the related activity id (nil when none).
func (a *Activities) Start(b *Builder, track TrackID, thread trace.TrackID, t trace.Time, task, name string, id, parent []byte, args []trace.Field) {
	if a.open == nil {
		a.open, a.byID = map[actKey][]*openAct{}, map[string]*openAct{}
	}
	if a.n >= MaxOpenActivities {
		b.set.Dropped++
		return
	}
	k := actKey{task, string(id)}
	a.seq++
	o := &openAct{seq: a.seq, key: k, start: t, track: track, thread: thread, name: b.Name(name), args: args}
	if p := a.byID[string(parent)]; len(parent) > 0 && p != nil && p.track == track {
		o.depth = min(p.depth+1, MaxDepth)
	}
	a.open[k] = append(a.open[k], o)
	a.byID[string(id)] = o
	a.n++
}

// Stop closes the latest open activity of task and id at t; endArgs are
// appended to the slice's arguments, their names prefixed with "end.".
func (a *Activities) Stop(b *Builder, track TrackID, thread trace.TrackID, t trace.Time, task, name string, id []byte, endArgs []trace.Field) {
	k := actKey{task, string(id)}
	st := a.open[k]
	if len(endArgs) > 0 {
		ea := make([]trace.Field, len(endArgs))
		for i, f := range endArgs {
			ea[i] = trace.Field{Name: "end." + f.Name, Value: f.Value}
		}
		endArgs = ea
	}
	if len(st) == 0 {
		// A Stop without its Start: shown from the trace's start.
		b.Add(Slice{Start: b.First(), End: t, Track: track, Thread: thread, Name: b.Name(name), Args: b.Args(endArgs), Flags: OpenStart})
		return
	}
	o := st[len(st)-1]
	a.n--
	if len(st) == 1 {
		delete(a.open, k)
	} else {
		st[len(st)-1] = nil
		a.open[k] = st[:len(st)-1]
	}
	if a.byID[k.id] == o {
		delete(a.byID, k.id)
	}
	b.Add(Slice{Start: o.start, End: t, Track: o.track, Thread: o.thread, Name: o.name, Args: b.Args(append(o.args[:len(o.args):len(o.args)], endArgs...)), Depth: o.depth})
}

// Finish closes the activities still open as OpenEnd slices ending at the
// trace's last time.
func (a *Activities) Finish(b *Builder) {
	var all []*openAct
	for _, st := range a.open {
		all = append(all, st...)
	}
	slices.SortFunc(all, func(x, y *openAct) int { return cmp.Compare(x.seq, y.seq) })
	for _, o := range all {
		b.Add(Slice{Start: o.start, End: b.Last(), Track: o.track, Thread: o.thread, Name: o.name, Args: b.Args(o.args), Depth: o.depth, Flags: OpenEnd})
	}
	a.open, a.byID, a.n = nil, nil, 0
}
