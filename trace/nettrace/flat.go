package nettrace

import (
	"math"
	"slices"
	"strconv"

	"viewer/trace"
	"viewer/trace/clr"
)

// Flat plans. Most event types (all the runtime's method and loader
// events) have a schema of a few scalars and strings, no nesting. For
// those, a plan made once per type decodes a payload and writes its label
// in one pass: each field is decoded into its place, its value map
// applied, and its text appended to the label while the label is open,
// with no second walk over the fields, no dispatch on a field's kind for
// its label when the type says it, and no per-field checks that only
// nested schemas need (value budget, depth, array counts). What it
// produces is what appendDecoded and appendLabel produce; FuzzReader and
// TestFlatPlan check that.

// flatStep is one field of a flat plan.
type flatStep struct {
	name  string
	key   string   // the label's " name="
	typ   TypeCode // one of flatTypes
	m     *clr.Map // the manifest's value map, or nil
	short bool     // key fits in key32
	key32 [32]byte // key, padded: copied whole without a call
}

// flatTypes are the type codes a flat plan decodes.
var flatTypes = [...]bool{
	TypeByte: true, TypeSByte: true, TypeInt16: true, TypeUInt16: true, TypeInt32: true, TypeUInt32: true,
	TypeInt64: true, TypeUInt64: true, TypeBoolean32: true, TypeBoolean8: true, TypeSingle: true,
	TypeDouble: true, TypeUTF16String: true,
}

// maxFlatFields bounds a flat schema so that a payload's value budget
// (MaxValues, and 64 + 4 per byte) can never run out in it: every field
// decoded but the last takes a byte at least.
const maxFlatFields = 64

// newFlatPlan returns the plan for a schema (decoded as typeInfo does,
// with keys its labelKeys and maps the manifest's fields or nil), or nil
// when the schema is not flat.
func newFlatPlan(schema []Field, maps []clr.Field, keys []string) []flatStep {
	if len(schema) == 0 || len(schema) > maxFlatFields {
		return nil
	}
	plan := make([]flatStep, len(schema))
	for i, f := range schema {
		ok := int(f.Type) < len(flatTypes) && flatTypes[f.Type] ||
			f.Type == TypeHexInt32 || f.Type == TypeHexInt64 || f.Type == TypePointer
		if !ok {
			return nil
		}
		plan[i] = flatStep{name: f.Name, key: keys[i], typ: f.Type, short: len(keys[i]) <= 32}
		copy(plan[i].key32[:], keys[i])
		if i < len(maps) {
			plan[i].m = maps[i].Map
		}
	}
	return plan
}

// appendFlat appends what appendDetails appends for a type of this plan
// and name: the payload's fields to dst, its label to label, the strings
// in a (not nil). Each value is formatted from the number or string just
// read, never read back from the field: trace.Value's methods take a copy
// of it, whose loads would stall on the stores that just wrote it.
func appendFlat(plan []flatStep, dst []trace.Field, label []byte, name string, payload []byte, pointerSize int, a *arena) ([]trace.Field, []byte) {
	p := dec{b: payload} // no value budget: see maxFlatFields
	if cap(label)-len(label) < MaxLabel+64 {
		label = slices.Grow(label, MaxLabel+64) // room for most labels, and for key's whole moves
	}
	l := flatLabel{b: append(label, name...), start: len(label)}
	if cap(dst)-len(dst) < len(plan) {
		dst = slices.Grow(dst, len(plan))
	}
	for i := range plan {
		st := &plan[i]
		if p.left() == 0 {
			break
		}
		at := p.off
		dst = dst[:len(dst)+1] // both words of the field set below
		f := &dst[len(dst)-1]
		f.Name = st.name
		v := &f.Value
		switch st.typ {
		case TypeByte:
			l.uint(st, v, uint64(p.u8()), a)
		case TypeUInt16:
			l.uint(st, v, uint64(p.u16()), a)
		case TypeUInt32:
			l.uint(st, v, uint64(p.u32()), a)
		case TypeUInt64:
			l.uint(st, v, p.u64(), a)
		case TypeSByte:
			l.int(st, v, int64(int8(p.u8())), a)
		case TypeInt16:
			l.int(st, v, int64(int16(p.u16())), a)
		case TypeInt32:
			l.int(st, v, int64(int32(p.u32())), a)
		case TypeInt64:
			l.int(st, v, int64(p.u64()), a)
		case TypeHexInt32:
			l.hex(st, v, uint64(p.u32()), a)
		case TypeHexInt64:
			l.hex(st, v, p.u64(), a)
		case TypePointer:
			if pointerSize == 4 {
				l.hex(st, v, uint64(p.u32()), a)
			} else {
				l.hex(st, v, p.u64(), a)
			}
		case TypeBoolean32:
			l.bool(st, v, p.u32() != 0, a)
		case TypeBoolean8:
			l.bool(st, v, p.u8() != 0, a)
		case TypeSingle:
			l.float(st, v, float64(math.Float32frombits(p.u32())))
		case TypeDouble:
			l.float(st, v, math.Float64frombits(p.u64()))
		case TypeUTF16String:
			s, n := a.utf16zLast(p.b[p.off:], &a.last[i]) // p.utf16zTolerant()
			p.off += n
			v.SetString(s)
			l.string(st, s)
		}
		if p.bad { // cut short: the value read as zero stays, as in fields
			p.off = at
			break
		}
	}
	return dst, endLabel(l.b, l.start)
}

// flatLabel is a label being written by appendFlat: b[start:]. Its
// methods set a field's value, apply the field's value map (as applyMaps
// would: a number is looked up by its Number) and append the field's
// text while the label is shorter than MaxLabel (as appendLabel would).
type flatLabel struct {
	b     []byte
	start int
}

func (l *flatLabel) open() bool { return len(l.b)-l.start < MaxLabel }

// key appends a field's key.
func (l *flatLabel) key(st *flatStep) {
	if k, ok := l.keyIn(st, 0); ok {
		l.b = l.b[:k]
		return
	}
	l.b = append(l.b, st.key...)
}

// keyIn writes a short key in the label's spare room, when that holds
// its 32 padded bytes and n more, and returns where the key ends (the
// label is not lengthened): two moves instead of a call to memmove, and
// the value's text can then be written in place too.
func (l *flatLabel) keyIn(st *flatStep, n int) (end int, ok bool) {
	k := len(l.b)
	if !st.short || cap(l.b)-k < 32+n {
		return 0, false
	}
	*(*[32]byte)(l.b[k : k+32]) = st.key32
	return k + len(st.key), true
}

func (l *flatLabel) uint(st *flatStep, v *trace.Value, x uint64, a *arena) {
	v.SetUint(x)
	if st.m != nil && l.mapped(st, v, float64(x), a) || !l.open() {
		return
	}
	if k, ok := l.keyIn(st, 20); ok {
		l.b = l.b[:k+putDec((*[20]byte)(l.b[k:k+20]), x)]
		return
	}
	l.key(st)
	l.b = strconv.AppendUint(l.b, x, 10)
}

func (l *flatLabel) int(st *flatStep, v *trace.Value, x int64, a *arena) {
	v.SetInt(x)
	if st.m != nil && l.mapped(st, v, float64(x), a) || !l.open() {
		return
	}
	if k, ok := l.keyIn(st, 21); ok { // as uint, after a sign
		u := uint64(x)
		if x < 0 {
			l.b[k : k+1][0] = '-'
			k++
			u = -u
		}
		l.b = l.b[:k+putDec((*[20]byte)(l.b[k:k+20]), u)]
		return
	}
	l.key(st)
	l.b = strconv.AppendInt(l.b, x, 10)
}

func (l *flatLabel) hex(st *flatStep, v *trace.Value, x uint64, a *arena) {
	v.SetHex(x)
	if st.m != nil && l.mapped(st, v, float64(x), a) || !l.open() {
		return
	}
	if k, ok := l.keyIn(st, 18); ok {
		l.b = l.b[:k+putHex((*[18]byte)(l.b[k:k+18]), x)]
		return
	}
	l.key(st)
	l.b = appendHex(l.b, x)
}

func (l *flatLabel) bool(st *flatStep, v *trace.Value, x bool, a *arena) {
	*v = trace.BoolValue(x)
	n := 0.0
	if x {
		n = 1
	}
	if st.m != nil && l.mapped(st, v, n, a) || !l.open() {
		return
	}
	l.key(st)
	l.b = strconv.AppendBool(l.b, x)
}

// float sets a float value: value maps do not apply to floats.
func (l *flatLabel) float(st *flatStep, v *trace.Value, x float64) {
	*v = trace.FloatValue(x)
	if l.open() {
		l.key(st)
		l.b = strconv.AppendFloat(l.b, x, 'g', -1, 64)
	}
}

func (l *flatLabel) string(st *flatStep, s string) {
	if l.open() {
		l.key(st)
		l.b = append(l.b, truncUTF8(s, max(MaxLabel-(len(l.b)-l.start), 0)+4)...)
	}
}

// mapped applies the field's map to the number n it holds, and reports
// whether the map named it (the field is then that string, labelled).
func (l *flatLabel) mapped(st *flatStep, v *trace.Value, n float64, a *arena) bool {
	text, ok := mapNumber(v, n, st.m, a)
	if ok {
		l.string(st, text)
	}
	return ok
}
