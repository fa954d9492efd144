package trace

// Decimal formatting for the JSON encoder, which writes two or three
// integers per event: eight digits at a time as two independent halves,
// which the processor computes in parallel, where strconv divides by 100
// in one dependent chain.

const digitPairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does.
func appendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	var buf [24]byte
	i := len(buf)
	for v >= 1e8 {
		q := v / 1e8
		i -= 8
		put8(buf[i:i+8], uint32(v-q*1e8))
		v = q
	}
	w := uint32(v)
	for w >= 100 {
		q := w / 100
		i -= 2
		put2(buf[i:i+2], w-q*100)
		w = q
	}
	if w >= 10 {
		i -= 2
		put2(buf[i:i+2], w)
	} else {
		i--
		buf[i] = byte('0' + w)
	}
	return append(b, buf[i:]...)
}

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
