package export

import (
	"testing"
	"time"

	"viewer/trace"
)

func TestValueJSON(t *testing.T) {
	guid := [16]byte{0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 1, 2, 3, 4, 5, 6, 7, 8}
	v := trace.StructValue([]trace.Field{
		{Name: "a", Value: trace.IntValue(-3)},
		{Name: "b", Value: trace.HexValue(255)},
		{Name: "s", Value: trace.StringValue("<x>\"\xff")},
		{Name: "g", Value: trace.GUIDValue(guid)},
		{Name: "arr", Value: trace.ArrayValue([]trace.Value{trace.UintValue(1), trace.FloatValue(0.5), trace.BoolValue(true)})},
		{Name: "t", Value: trace.TimeValue(time.Date(2024, 3, 28, 0, 45, 12, 640913120, time.UTC))},
	})
	got := string(AppendValue(nil, v))
	want := `[{"name":"a","value":-3},{"name":"b","value":"0xff"},{"name":"s","value":"\u003cx\u003e\"` + "\uFFFD" + `"},` +
		`{"name":"g","value":"12345678-1234-5678-0102-030405060708"},{"name":"arr","value":[1,0.5,true]},` +
		`{"name":"t","value":"2024-03-28T00:45:12.64091312Z"}]`
	if got != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
}
