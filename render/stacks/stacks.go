// Package stacks aggregates stack samples into a prefix tree (a flame
// graph, a call tree), the one aggregation behind both the API's stacks
// endpoints and `viewer stacks`.
//
// Samples go in with their stack already named (leaf first) and
// interned: [Aggregator.Intern] turns a list of frame names into a
// [StackKey], so that the transforms, the view and the tree insertion run
// once per distinct stack (and thread), and a sample costs a cache lookup
// and an addition. [Aggregate] feeds an Aggregator from an index's
// stacked-event lists, naming each distinct stack once per span of time
// over which its names hold (render.SpanSymbolizer), so that it never
// resolves every frame of every sample and stays exact in time.
//
// The tree has one root, "all"; every node has a name, a total (the
// weight of the samples whose path goes through it) and a self weight (of
// those whose path ends at it). [Aggregator.Result] lays it out in
// preorder, children in name order, without the nodes too light to draw
// at a given width (see [Reply]).
package stacks

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"viewer/render"
	"viewer/trace"
)

// RootName is the name of the tree's root.
const RootName = "all"

// ViewKind is what tree the samples build.
type ViewKind uint8

const (
	// Top is the top-down tree: root-most frames first (flame graph,
	// call tree).
	Top ViewKind = iota
	// Bottom is the bottom-up (inverted) tree: leaf frames first.
	Bottom
	// Callers is the tree of a function's callers: the function under the
	// root, its callers below it, theirs below them (from the function's
	// frame nearest the leaf toward the root; stacks without it are left
	// out).
	Callers
	// Callees is the tree of a function's callees: the function under the
	// root, what it calls below it (from the function's frame nearest the
	// root toward the leaf; stacks without it are left out).
	Callees
)

// View is the tree to build; Func names the function of Callers and
// Callees.
type View struct {
	Kind ViewKind
	Func string
}

// ParseView parses "top", "bottom", "callers:NAME" or "callees:NAME"
// ("" is "top").
func ParseView(s string) (View, error) {
	switch {
	case s == "" || s == "top":
		return View{Kind: Top}, nil
	case s == "bottom":
		return View{Kind: Bottom}, nil
	case strings.HasPrefix(s, "callers:") && len(s) > len("callers:"):
		return View{Kind: Callers, Func: s[len("callers:"):]}, nil
	case strings.HasPrefix(s, "callees:") && len(s) > len("callees:"):
		return View{Kind: Callees, Func: s[len("callees:"):]}, nil
	}
	return View{}, fmt.Errorf("view: top, bottom, callers:NAME or callees:NAME, not %q", s)
}

func (v View) String() string {
	switch v.Kind {
	case Bottom:
		return "bottom"
	case Callers:
		return "callers:" + v.Func
	case Callees:
		return "callees:" + v.Func
	}
	return "top"
}

// Options configure an Aggregator.
type Options struct {
	View       View
	Transforms []Transform // applied in order to every stack before it is inserted
	// PerThread puts a node per thread under the root (named by
	// ThreadName), the stacks under it.
	PerThread  bool
	ThreadName func(trace.TrackID) string
	// Refs keeps every sample's event id and time, for Result.Hits.
	Refs bool
}

// StackKey names an interned stack (a list of frame names, leaf first).
type StackKey int32

// Sample is one stack sample.
type Sample struct {
	Time   trace.Time
	Track  trace.TrackID
	Stack  StackKey
	Weight int64
	Ev     render.EventID // kept with Options.Refs
}

type node struct {
	parent int32
	name   int32
	self   int64
	total  int64 // computed by finish
}

type ref struct {
	ev   render.EventID
	time trace.Time
	node int32
}

// Aggregator builds one tree. It is not safe for concurrent use.
type Aggregator struct {
	opts Options

	names  []string
	nameID map[string]int32

	// interned stacks: frames[off[k]:off[k+1]] are stack k's name ids.
	off    []int32
	frames []int32
	keys   map[string]StackKey

	leaf    []int32          // by StackKey: the node its samples add to; 0 unknown, -1 left out
	leafThr map[uint64]int32 // the same per (track, stack) with PerThread
	nodes   []node
	child   map[uint64]int32 // (parent, name) → child

	tf      []tfState
	focus   int32 // the view's function's name id
	scratch []int32
	path    []int32

	total, samples int64 // of every sample added
	refs           []ref
	done           bool
}

// New returns an empty aggregator.
func New(opts Options) (*Aggregator, error) {
	a := &Aggregator{
		opts:   opts,
		nameID: map[string]int32{},
		off:    []int32{0},
		keys:   map[string]StackKey{},
		child:  map[uint64]int32{},
		nodes:  []node{{parent: -1}},
		// never nil: a nil stack from a transform means "left out"
		scratch: make([]int32, 0, 64),
	}
	a.name(RootName)
	if opts.PerThread {
		a.leafThr = map[uint64]int32{}
	}
	if (opts.View.Kind == Callers || opts.View.Kind == Callees) && opts.View.Func == "" {
		return nil, errors.New("stacks: the view needs a function")
	}
	a.focus = a.name(opts.View.Func)
	for _, t := range opts.Transforms {
		s, err := a.newTF(t)
		if err != nil {
			return nil, err
		}
		a.tf = append(a.tf, s)
	}
	return a, nil
}

func (a *Aggregator) name(s string) int32 {
	if id, ok := a.nameID[s]; ok {
		return id
	}
	id := int32(len(a.names))
	a.names = append(a.names, s)
	a.nameID[s] = id
	return id
}

// Intern returns the key of a stack given by its frame names, leaf first.
func (a *Aggregator) Intern(frames []string) StackKey {
	ids := a.scratch[:0]
	for _, f := range frames {
		ids = append(ids, a.name(f))
	}
	a.scratch = ids
	return a.internIDs(ids)
}

func (a *Aggregator) internIDs(ids []int32) StackKey {
	var b []byte
	if len(ids) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&ids[0])), 4*len(ids))
	}
	if k, ok := a.keys[string(b)]; ok {
		return k
	}
	k := StackKey(len(a.off) - 1)
	a.frames = append(a.frames, ids...)
	a.off = append(a.off, int32(len(a.frames)))
	a.keys[string(b)] = k
	return k
}

// Frames returns an interned stack's frame names, leaf first.
func (a *Aggregator) Frames(k StackKey) []string {
	ids := a.frames[a.off[k]:a.off[k+1]]
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = a.names[id]
	}
	return out
}

// Add adds one sample. Samples whose stack the transforms or the view
// leave out count in Total and Samples but not in the tree.
func (a *Aggregator) Add(s Sample) {
	a.total += s.Weight
	a.samples++
	var n int32
	if a.leafThr != nil {
		key := uint64(uint32(s.Track))<<32 | uint64(uint32(s.Stack))
		var ok bool
		if n, ok = a.leafThr[key]; !ok {
			n = a.insert(s.Stack, s.Track)
			a.leafThr[key] = n
		}
	} else {
		for int(s.Stack) >= len(a.leaf) {
			a.leaf = append(a.leaf, 0)
		}
		if n = a.leaf[s.Stack]; n == 0 {
			n = a.insert(s.Stack, s.Track)
			a.leaf[s.Stack] = n
		}
	}
	if n < 0 {
		return
	}
	a.nodes[n].self += s.Weight
	if a.opts.Refs {
		a.refs = append(a.refs, ref{ev: s.Ev, time: s.Time, node: n})
	}
}

// insert transforms a stack, lays it out for the view and inserts its
// path; it returns the path's last node, or -1 when the stack is left
// out.
func (a *Aggregator) insert(k StackKey, track trace.TrackID) int32 {
	ids := append(a.scratch[:0], a.frames[a.off[k]:a.off[k+1]]...)
	a.scratch = ids
	for i := range a.tf {
		if ids = a.apply(&a.tf[i], ids); ids == nil {
			return -1
		}
	}
	p := a.path[:0]
	if a.opts.PerThread {
		name := "thread"
		if a.opts.ThreadName != nil {
			name = a.opts.ThreadName(track)
		}
		p = append(p, a.name(name))
	}
	switch a.opts.View.Kind {
	case Top:
		for i := len(ids) - 1; i >= 0; i-- {
			p = append(p, ids[i])
		}
	case Bottom:
		p = append(p, ids...)
	case Callers:
		i := slices.Index(ids, a.focus)
		if i < 0 {
			return -1
		}
		p = append(p, ids[i:]...)
	case Callees:
		i := lastIndex(ids, a.focus)
		if i < 0 {
			return -1
		}
		for ; i >= 0; i-- {
			p = append(p, ids[i])
		}
	}
	a.path = p
	n := int32(0)
	for _, name := range p {
		key := uint64(uint32(n))<<32 | uint64(uint32(name))
		c, ok := a.child[key]
		if !ok {
			c = int32(len(a.nodes))
			a.nodes = append(a.nodes, node{parent: n, name: name})
			a.child[key] = c
		}
		n = c
	}
	return n
}

func lastIndex(s []int32, v int32) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}

// Total returns the weight of every sample added, and Samples their
// number (the tree's root holds those the transforms and view kept).
func (a *Aggregator) Total() int64   { return a.total }
func (a *Aggregator) Samples() int64 { return a.samples }

// finish computes the totals; a node's parent precedes it.
func (a *Aggregator) finish() {
	if a.done {
		return
	}
	a.done = true
	for i := range a.nodes {
		a.nodes[i].total = a.nodes[i].self
	}
	for i := len(a.nodes) - 1; i > 0; i-- {
		a.nodes[a.nodes[i].parent].total += a.nodes[i].total
	}
}

// children returns the nodes' children in name order, as one list cut by
// offsets: children of node i are kids[start[i]:start[i+1]].
func (a *Aggregator) children() (kids, start []int32) {
	start = make([]int32, len(a.nodes)+1)
	for i := 1; i < len(a.nodes); i++ {
		start[a.nodes[i].parent+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	kids = make([]int32, len(a.nodes))
	fill := slices.Clone(start)
	for i := 1; i < len(a.nodes); i++ {
		p := a.nodes[i].parent
		kids[fill[p]] = int32(i)
		fill[p]++
	}
	for i := range a.nodes {
		if s := kids[start[i]:start[i+1]]; len(s) > 1 {
			slices.SortFunc(s, func(x, y int32) int { return strings.Compare(a.names[a.nodes[x].name], a.names[a.nodes[y].name]) })
		}
	}
	return kids, start
}

// Weighted is one distinct stack, root first, and its weight.
type Weighted struct {
	Frames []string
	Weight int64
}

// Collapsed returns the distinct paths of the tree that samples end at,
// root first (the root "all" left out, so empty stacks have no frames;
// with PerThread the thread is the first frame), with their weights, in preorder with children in name
// order: the "collapsed stacks" of flame-graph tools and speedscope.
func (a *Aggregator) Collapsed() []Weighted {
	a.finish()
	kids, start := a.children()
	var out []Weighted
	var path []string
	var walk func(n int32)
	walk = func(n int32) {
		if n != 0 {
			path = append(path, a.names[a.nodes[n].name])
		}
		if a.nodes[n].self != 0 {
			out = append(out, Weighted{Frames: slices.Clone(path), Weight: a.nodes[n].self})
		}
		for _, c := range kids[start[n]:start[n+1]] {
			walk(c)
		}
		if n != 0 {
			path = path[:len(path)-1]
		}
	}
	walk(0)
	return out
}

// Reply is a laid-out tree, as the API sends it.
type Reply struct {
	Total   int64    `json:"total"`   // weight of every sample in the query
	Samples int64    `json:"samples"` // number of samples in the query
	Unit    string   `json:"unit"`    // "samples", "ns" or a payload field's name
	Names   []string `json:"names"`   // names[0] is "all"
	// Nodes are [parent, name, total, self] in preorder, node 0 the root
	// (parent -1), children in name order; name indexes Names. A node's
	// total minus its self and its children's totals is the weight of
	// its pruned children.
	Nodes   [][4]int64 `json:"nodes"`
	Pruned  int        `json:"pruned"`            // nodes left out as lighter than total/width
	Partial bool       `json:"partial,omitempty"` // the query stopped early (deadline): only part of the range is in
}

// Result is a laid-out tree and what Hits needs to find a node's
// samples.
type Result struct {
	Reply
	a      *Aggregator
	mapped []int32 // by internal node: the output node of it or its nearest kept ancestor
	end    []int32 // by output node: one past its subtree's last output node
}

// Result lays the tree out, leaving out the nodes whose total is below
// the root's total / width (width ≤ 0 keeps every node) and, when more
// than maxNodes would remain (maxNodes > 0), the lightest of them, so
// that at most maxNodes remain. unit fills Reply.Unit.
func (a *Aggregator) Result(width, maxNodes int, unit string) *Result {
	a.finish()
	kids, start := a.children()
	r := &Result{a: a, mapped: make([]int32, len(a.nodes))}
	r.Total, r.Samples, r.Unit = a.total, a.samples, unit
	rootTotal := a.nodes[0].total
	var floor int64 = -1 // nodes must weigh more than floor
	if maxNodes > 0 && len(a.nodes) > maxNodes {
		// A node weighs no more than its parent, so keeping the heaviest
		// keeps a tree.
		totals := make([]int64, 0, len(a.nodes))
		for _, n := range a.nodes[1:] {
			totals = append(totals, n.total)
		}
		slices.Sort(totals)
		floor = totals[len(totals)-maxNodes] // maxNodes-1 kids at most, and the root
	}
	keep := func(n int32) bool {
		t := a.nodes[n].total
		return t > floor && (width <= 0 || t != 0 && t*int64(width) >= rootTotal)
	}
	nameOut := map[int32]int64{}
	var walk func(n int32, parent int64)
	walk = func(n int32, parent int64) {
		me := int32(len(r.Nodes))
		r.mapped[n] = me
		nd := a.nodes[n]
		nm, ok := nameOut[nd.name]
		if !ok {
			nm = int64(len(r.Names))
			r.Names = append(r.Names, a.names[nd.name])
			nameOut[nd.name] = nm
		}
		r.Nodes = append(r.Nodes, [4]int64{parent, nm, nd.total, nd.self})
		r.end = append(r.end, 0)
		for _, c := range kids[start[n]:start[n+1]] {
			if keep(c) {
				walk(c, int64(me))
			} else {
				r.Pruned += r.prune(c, me, kids, start)
			}
		}
		r.end[me] = int32(len(r.Nodes))
	}
	walk(0, -1)
	return r
}

// prune maps a left-out subtree to its kept ancestor out and returns its
// size.
func (r *Result) prune(n, out int32, kids, start []int32) int {
	r.mapped[n] = out
	k := 1
	for _, c := range kids[start[n]:start[n+1]] {
		k += r.prune(c, out, kids, start)
	}
	return k
}

// Hit is one sample's event.
type Hit struct {
	Ev   render.EventID
	Time trace.Time
}

// Hits returns the events of the samples under an output node (those
// whose path goes through it), in time order (then track, then index),
// at most limit of them; more says whether there were others. It needs
// Options.Refs.
func (r *Result) Hits(node, limit int) (hits []Hit, more bool) {
	if node < 0 || node >= len(r.Nodes) {
		return nil, false
	}
	lo, hi := int32(node), r.end[node]
	for _, s := range r.a.refs {
		if m := r.mapped[s.node]; m >= lo && m < hi {
			hits = append(hits, Hit{Ev: s.ev, Time: s.time})
		}
	}
	slices.SortFunc(hits, func(x, y Hit) int {
		return cmp.Or(cmp.Compare(x.Time, y.Time), cmp.Compare(x.Ev.Track, y.Ev.Track), cmp.Compare(x.Ev.Index, y.Ev.Index))
	})
	if len(hits) > limit {
		return hits[:limit], true
	}
	return hits, false
}
