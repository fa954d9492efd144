package nettrace

import (
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"viewer/trace"
	"viewer/trace/clr"
)

// TestFlatPlan compares appendFlat with the schema walk (appendDecoded,
// then appendLabel) on random flat schemas, with and without value and
// bit maps, over random payloads: whole, cut anywhere, with strings
// ASCII, not, or unterminated, and with long strings that close the
// label early.
func TestFlatPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	types := []TypeCode{TypeByte, TypeSByte, TypeInt16, TypeUInt16, TypeInt32, TypeUInt32, TypeInt64, TypeUInt64,
		TypeBoolean32, TypeBoolean8, TypeSingle, TypeDouble, TypeUTF16String, TypeHexInt32, TypeHexInt64, TypePointer}
	values := &clr.Map{Entries: []clr.MapEntry{{Value: 0, Text: "Zero"}, {Value: 1, Text: "One"}, {Value: 255, Text: "Max8"}}}
	flags := &clr.Map{Bits: true, Entries: []clr.MapEntry{{Value: 1, Text: "A"}, {Value: 2, Text: "B"}, {Value: 0x80, Text: "H"}}}
	names := []string{"", "A", "Count", "MethodNamespace", "Count", "AFieldNameLongerThanThirtyTwoBytes"} // repeated, empty and long names too
	a := &arena{}
	for iter := range 20000 {
		schema := make([]Field, 1+rng.IntN(8))
		var maps []clr.Field
		manifest := rng.IntN(2) == 0
		for i := range schema {
			schema[i] = Field{Name: names[rng.IntN(len(names))], Type: types[rng.IntN(len(types))]}
			if manifest {
				var m *clr.Map
				if k := rng.IntN(4); k == 0 {
					m = values
				} else if k == 1 {
					m = flags
				}
				maps = append(maps, clr.Field{Name: schema[i].Name, Map: m})
			}
		}
		ti := typeInfo{name: "T/" + string(rune('a'+iter%26)), fields: schema}
		if manifest {
			ti.fields, ti.manifest, ti.maps = nil, schema, maps
		}
		ti.keys, ti.mapped = labelKeys(schema), mappedFields(maps)
		ti.flat = newFlatPlan(schema, maps, ti.keys)
		if ti.flat == nil {
			t.Fatalf("no flat plan for %v", schema)
		}
		var payload []byte
		for _, f := range schema {
			switch f.Type {
			case TypeUTF16String:
				n := rng.IntN(40)
				if rng.IntN(5) == 0 {
					n = 150 + rng.IntN(100) // past MaxLabel
				}
				few := rng.IntN(2) == 0 // texts that repeat (a.last), or differ in one letter
				if few {
					n = 6
				}
				for range n {
					u := uint16('a' + rng.IntN(26))
					if few {
						u = uint16('a' + rng.IntN(2))
					}
					if rng.IntN(30) == 0 {
						u = []uint16{0xe9, 0xd800, 0xdc00, 0x20ac}[rng.IntN(4)]
					}
					payload = append(payload, byte(u), byte(u>>8))
				}
				if rng.IntN(10) > 0 {
					payload = append(payload, 0, 0)
				}
			default:
				size := f.Type.fixedSize(4 << rng.IntN(2))
				for range size {
					payload = append(payload, byte(rng.IntN(4)*rng.IntN(256)/3))
				}
			}
		}
		if rng.IntN(3) == 0 {
			payload = payload[:rng.IntN(len(payload)+1)]
		}
		ptr := 4 << rng.IntN(2)
		var want, got strings.Builder
		gf := ti.appendDecoded([]trace.Field{{Name: "before"}}, payload, ptr, a)
		writeDetails(&want, gf, appendLabel([]byte("x"), ti.name, gf[1:], nil))
		ff, fl := appendFlat(ti.flat, []trace.Field{{Name: "before"}}, []byte("x"), ti.name, payload, ptr, a)
		writeDetails(&got, ff, fl)
		if got.String() != want.String() {
			t.Fatalf("schema %v, payload % x:\nflat %s\nwalk %s", schema, payload, got.String(), want.String())
		}
	}
}

func writeDetails(sb *strings.Builder, fields []trace.Field, label []byte) {
	for _, f := range fields {
		sb.WriteString(f.Name + "=" + string(rune('a'+f.Value.Kind())) + ":" + f.Value.String() + ";")
	}
	sb.WriteString("|" + string(label))
}

// TestFlatPlanSchemas checks which schemas get a flat plan: none with
// nesting, arrays or more than maxFlatFields fields.
func TestFlatPlanSchemas(t *testing.T) {
	flat := []Field{{Name: "A", Type: TypeUInt32}, {Name: "S", Type: TypeUTF16String}}
	for _, tc := range []struct {
		schema []Field
		want   bool
	}{
		{flat, true},
		{nil, false},
		{append(flat[:1:1], Field{Name: "O", Type: TypeObject, Fields: flat}), false},
		{append(flat[:1:1], Field{Name: "R", Type: TypeArray, Elem: &Field{Type: TypeByte}}), false},
		{[]Field{{Name: "G", Type: TypeGUID}}, false},
		{slices.Repeat(flat, maxFlatFields/2+1), false},
		{slices.Repeat(flat, maxFlatFields/2), true},
	} {
		if got := newFlatPlan(tc.schema, nil, labelKeys(tc.schema)) != nil; got != tc.want {
			t.Errorf("%d fields (%v…): flat %v, want %v", len(tc.schema), tc.schema[:min(len(tc.schema), 2)], got, tc.want)
		}
	}
}

// TestFlatPlanReal decodes every event of every real file both ways, by
// its type's flat plan and by the schema walk, and compares them.
func TestFlatPlanReal(t *testing.T) {
	for _, f := range realFiles {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			r, _ := openReal(t, f.path)
			var flat, fields []trace.Field
			var label []byte
			var n, planned int
			a := &arena{}
			for ; ; n++ {
				e, err := r.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				ti := &r.types[e.Type]
				if ti.flat == nil {
					continue
				}
				planned++
				payload, err := r.payload(e)
				if err != nil {
					t.Fatal(err)
				}
				var got, want strings.Builder
				flat, label = appendFlat(ti.flat, flat[:0], label[:0], ti.name, payload, r.meta.PointerSize, a)
				writeDetails(&got, flat, label)
				fields = ti.appendDecoded(fields[:0], payload, r.meta.PointerSize, a)
				writeDetails(&want, fields, appendLabel(label[:0], ti.name, fields, nil))
				if got.String() != want.String() {
					t.Fatalf("event %d (%s):\nflat %s\nwalk %s", n, ti.name, got.String(), want.String())
				}
			}
			t.Logf("%d of %d events by flat plans", planned, n)
		})
	}
}
