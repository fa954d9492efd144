package trace

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// TestClockTime checks the overflow-free tick conversion against big.Int
// arithmetic for frequencies seen in real files and random ones.
func TestClockTime(t *testing.T) {
	freqs := []uint64{1e9, 1e7, 3124099, 2533315, 1, 2.4e9, 1 << 40}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range freqs {
		for range 2000 {
			origin := rng.Int64N(1<<40) - 1<<39
			ticks := rng.Int64() >> rng.IntN(64)
			if rng.IntN(2) == 0 {
				ticks = -ticks
			}
			c := Clock{TicksPerSecond: f, OriginTicks: origin}
			got := c.Time(ticks)
			d := new(big.Int).Sub(big.NewInt(ticks), big.NewInt(origin))
			d.Mul(d, big.NewInt(1e9))
			want := new(big.Int).Quo(d, new(big.Int).SetUint64(f)) // truncates toward zero
			if !want.IsInt64() {
				continue // saturated; checked below
			}
			if int64(got) != want.Int64() {
				t.Fatalf("f=%d origin=%d ticks=%d: got %d, want %s", f, origin, ticks, got, want)
			}
		}
	}
	if got := (Clock{TicksPerSecond: 1}).Time(1 << 62); got != Time(1<<63-1) {
		t.Errorf("overflowing conversion = %d, want saturation", got)
	}
}

func TestValueString(t *testing.T) {
	guid := [16]byte{0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 1, 2, 3, 4, 5, 6, 7, 8}
	v := StructValue([]Field{
		{"a", IntValue(-3)},
		{"b", HexValue(255)},
		{"s", StringValue("<x>\"\xff")},
		{"g", GUIDValue(guid)},
		{"arr", ArrayValue([]Value{UintValue(1), FloatValue(0.5), BoolValue(true)})},
		{"t", TimeValue(time.Date(2024, 3, 28, 0, 45, 12, 640913120, time.UTC))},
	})
	if s := v.String(); s != "{a=-3, b=0xff, s=<x>\"\xff, g=12345678-1234-5678-0102-030405060708, arr=[1, 0.5, true], t=2024-03-28T00:45:12.64091312Z}" {
		t.Errorf("String = %q", s)
	}
}

// TestValueSetters checks that each in-place setter leaves exactly the
// value its constructor returns, whatever the value held before (a
// struct with members, a string, a number).
func TestValueSetters(t *testing.T) {
	before := []Value{StructValue([]Field{{Name: "a", Value: IntValue(1)}}), StringValue("x"), HexValue(7), {}}
	for _, b := range before {
		for _, tc := range []struct {
			set  func(*Value)
			want Value
		}{
			{func(v *Value) { v.SetInt(-3) }, IntValue(-3)},
			{func(v *Value) { v.SetUint(3) }, UintValue(3)},
			{func(v *Value) { v.SetHex(0xff) }, HexValue(0xff)},
			{func(v *Value) { v.SetString("hi") }, StringValue("hi")},
			{func(v *Value) { v.SetString("") }, StringValue("")},
		} {
			v := b
			tc.set(&v)
			if v.kind != tc.want.kind || v.num != tc.want.num || v.str != tc.want.str || v.list != nil || v.String() != tc.want.String() {
				t.Errorf("setter over %v gave %#v, want %#v", b, v, tc.want)
			}
		}
	}
}
