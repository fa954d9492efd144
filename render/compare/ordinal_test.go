package compare

import "testing"

// TestOrdinalFields: ids and sequence numbers are not ranked as changes.
func TestOrdinalFields(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		want bool
	}{
		{[]float64{1, 2, 3, 4, 5}, true},
		{[]float64{1, 2, 3, 2, 5, 6, 7, 8, 9, 10, 11}, true}, // one step in ten falls
		{[]float64{1, 3, 2, 4, 3, 5}, false},                 // up and down: a quantity
		{[]float64{5, 5, 5, 5}, false},                       // constant
		{[]float64{1, 2}, false},                             // too few to tell
		{[]float64{9, 7, 5, 3}, false},
	} {
		var v values
		for _, x := range c.vals {
			v.add(x)
		}
		if v.rising() != c.want {
			t.Errorf("%v: rising %v, want %v", c.vals, v.rising(), c.want)
		}
	}
	for key, want := range map[string]bool{
		"Demo/OrderStart.OrderId": true, "GC/Start.ClrInstanceID": true,
		"GC/HeapStats.TotalHeapSize": false, "X/Y.Paid": false, "X/Y.Valid": false,
	} {
		if identifier(key) != want {
			t.Errorf("identifier(%q) = %v", key, !want)
		}
	}
}
