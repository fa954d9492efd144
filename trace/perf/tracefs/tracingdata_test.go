package tracefs

import (
	"errors"
	"strings"
	"testing"

	"viewer/trace/perf/tracefs/tracefstest"
)

// TestTracingDataRoundTrip parses blobs an independent encoder wrote, in
// both byte orders and word sizes, with a format file that does not parse
// (counted in Skipped), and checks that cuts before the trailer are errors, not panics.
func TestTracingDataRoundTrip(t *testing.T) {
	text := strings.ReplaceAll(testFormat, "offset:LO", "offset:2")
	text = strings.ReplaceAll(text, "size:LONG;", "size:8;")
	for _, big := range []bool{false, true} {
		for _, long := range []int{4, 8} {
			b := tracefstest.AppendTracingData(nil, big, long, []tracefstest.Format{
				{System: "a", Text: text}, {System: "b", Text: "not a format"}, {System: "a", Text: strings.Replace(text, "test_event", "second", 1)},
			})
			td, err := ParseTracingData(b)
			if err != nil {
				t.Fatalf("big %v long %d: %v", big, long, err)
			}
			if td.Version != "0.6" || td.BigEndian != big || td.LongSize != long || td.PageSize != 4096 || td.Skipped != 1 || len(td.Events) != 2 {
				t.Fatalf("big %v long %d: %+v", big, long, td)
			}
			if e := td.Events[1]; e.System != "a" || e.Name != "second" || e.ID != 42 || len(e.Fields) != 14 {
				t.Errorf("big %v long %d: event %+v", big, long, e)
			}
			// The trailer (kallsyms, printk formats, saved cmdlines: 16 bytes
			// when empty) is not read.
			for n := range len(b) - 16 {
				if _, err := ParseTracingData(b[:n]); err == nil {
					t.Fatalf("cut at %d of %d: no error", n, len(b))
				}
			}
		}
	}
	if _, err := ParseTracingData([]byte("tracing")); !errors.Is(err, ErrNotTracingData) {
		t.Errorf("bad magic: %v", err)
	}
}
