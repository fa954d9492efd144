package nettrace

import (
	"math"
	"slices"

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
	name string
	key  string   // the label's " name="
	typ  TypeCode // one of flatTypes
	m    *clr.Map // the manifest's value map, or nil
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
		plan[i] = flatStep{name: f.Name, key: keys[i], typ: f.Type}
		if i < len(maps) {
			plan[i].m = maps[i].Map
		}
	}
	return plan
}

// appendFlat appends what appendDetails appends for a type of this plan
// and name: the payload's fields to dst, its label to label.
func appendFlat(plan []flatStep, dst []trace.Field, label []byte, name string, payload []byte, pointerSize int, a *arena) ([]trace.Field, []byte) {
	p := payloadDec{dec: dec{b: payload}, ptr: pointerSize, payload: payload, a: a} // no budget: see maxFlatFields
	start := len(label)
	label = append(label, name...)
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
			v.SetUint(uint64(p.u8()))
		case TypeSByte:
			v.SetInt(int64(int8(p.u8())))
		case TypeInt16:
			v.SetInt(int64(int16(p.u16())))
		case TypeUInt16:
			v.SetUint(uint64(p.u16()))
		case TypeInt32:
			v.SetInt(int64(int32(p.u32())))
		case TypeUInt32:
			v.SetUint(uint64(p.u32()))
		case TypeInt64:
			v.SetInt(int64(p.u64()))
		case TypeUInt64:
			v.SetUint(p.u64())
		case TypeHexInt32:
			v.SetHex(uint64(p.u32()))
		case TypeHexInt64:
			v.SetHex(p.u64())
		case TypePointer:
			if p.ptr == 4 {
				v.SetHex(uint64(p.u32()))
			} else {
				v.SetHex(p.u64())
			}
		case TypeBoolean32:
			*v = trace.BoolValue(p.u32() != 0)
		case TypeBoolean8:
			*v = trace.BoolValue(p.u8() != 0)
		case TypeSingle:
			*v = trace.FloatValue(float64(math.Float32frombits(p.u32())))
		case TypeDouble:
			*v = trace.FloatValue(math.Float64frombits(p.u64()))
		case TypeUTF16String:
			v.SetString(p.utf16zTolerant())
		}
		if st.m != nil {
			mapValue(v, st.m, a)
		}
		if len(label)-start < MaxLabel {
			label = appendLabelValue(append(label, st.key...), start, v)
		}
		if p.bad { // cut short: the value read as zero stays, as in fields
			p.off = at
			break
		}
	}
	return dst, endLabel(label, start)
}
