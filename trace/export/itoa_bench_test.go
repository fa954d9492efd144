package export

import (
	"strconv"
	"testing"
)

func BenchmarkAppendUint(b *testing.B) {
	vals := make([]uint64, 1024)
	for i := range vals {
		vals[i] = uint64(uint32(i) * 2654435761)
	}
	buf := make([]byte, 0, 64)
	b.Run("ours", func(b *testing.B) {
		for i := range b.N {
			buf = appendUint(buf[:0], vals[i&1023])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := range b.N {
			buf = strconv.AppendUint(buf[:0], vals[i&1023], 10)
		}
	})
}
