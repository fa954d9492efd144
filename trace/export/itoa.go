package export

import (
	"math/bits"
	"slices"
)

// Decimal formatting for the JSON encoder, which writes two or three
// integers per event: eight digits at a time as two independent halves,
// which the processor computes in parallel, where strconv divides by 100
// in one dependent chain.

const digitPairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does,
// writing the digits in place from the last one.
func appendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	n := decimalLen(v)
	b = slices.Grow(b, n)
	i := len(b) + n
	b = b[:i]
	for v >= 1e8 {
		q := v / 1e8
		i -= 8
		put8(b[i:i+8], uint32(v-q*1e8))
		v = q
	}
	w := uint32(v)
	for w >= 100 {
		q := w / 100
		i -= 2
		put2(b[i:i+2], w-q*100)
		w = q
	}
	if w >= 10 {
		put2(b[i-2:i], w)
	} else {
		b[i-1] = byte('0' + w)
	}
	return b
}

// appendHexUint appends v in lower-case hex without a prefix, as
// strconv.AppendUint(b, v, 16) does, writing the digits in place.
func appendHexUint(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	n := max((bits.Len64(v)+3)/4, 1)
	b = slices.Grow(b, n)
	i := len(b) + n
	b = b[:i]
	for k := i - 1; k >= i-n; k-- {
		b[k] = digits[v&15]
		v >>= 4
	}
	return b
}

// decimalLen returns the number of decimal digits of v.
func decimalLen(v uint64) int {
	n := (bits.Len64(v) * 1233) >> 12 // about log10(v), maybe one less
	if n < len(pow10) && v >= pow10[n] {
		n++
	}
	return max(n, 1)
}

var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// appendInt appends v in decimal, as strconv.AppendInt(b, v, 10) does.
func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		return appendUint(append(b, '-'), -uint64(v))
	}
	return appendUint(b, uint64(v))
}

// put8 writes v < 1e8 as exactly eight digits.
func put8(d []byte, v uint32) {
	hi, lo := v/10000, v%10000
	put2(d[0:2], hi/100)
	put2(d[2:4], hi%100)
	put2(d[4:6], lo/100)
	put2(d[6:8], lo%100)
}

// put2 writes v < 100 as exactly two digits.
func put2(d []byte, v uint32) {
	d[0], d[1] = digitPairs[2*v], digitPairs[2*v+1]
}
