package eventheader

import (
	"encoding/binary"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"viewer/trace"
)

// Render decodes one value of an encoding (its bytes as they appear in the
// payload, without a length prefix or terminator) with a format, the way
// the reference C++ formatter renders it: numbers as numbers, hex integers
// as "0x…", errno as "EPERM(1)", time as "2033-05-18T03:33:20", IP
// addresses, UUIDs and hex bytes as strings. Formats that do not apply to
// the encoding fall back to the encoding's default.
func Render(enc, format uint8, b []byte, bigEndian bool) trace.Value {
	bo := byteOrder(bigEndian)
	switch enc {
	case EncValue8, EncValue16, EncValue32, EncValue64:
		return renderInt(enc, format, b, bo)
	case EncValue128:
		switch format {
		case FmtUUID:
			return uuidValue(b)
		case FmtIPAddress, FmtIPAddressObsolete:
			return trace.StringValue(ipString(b))
		}
		return trace.StringValue(hexBytes(b))
	case EncZStringChar8:
		return renderChar8(format, b, false)
	case EncStringLen16Ch8, EncBinaryLen16Ch8:
		if v, ok := nullable(format, b, bo); ok {
			return v
		}
		return renderChar8(format, b, enc == EncBinaryLen16Ch8)
	case EncZStringChar16, EncStringLen16Ch16, EncZStringChar32, EncStringLen16Ch32:
		w := 2
		if enc == EncZStringChar32 || enc == EncStringLen16Ch32 {
			w = 4
		}
		switch format {
		case FmtHexBytes:
			return trace.StringValue(hexBytes(b))
		case FmtStringUTFBOM, FmtStringXML, FmtStringJSON:
			if s, ok := bomString(b); ok {
				return trace.StringValue(s)
			}
		}
		if w == 2 {
			return trace.StringValue(utf16String(b, bo))
		}
		return trace.StringValue(utf32String(b, bo))
	}
	return trace.StringValue(hexBytes(b))
}

// intBits reads an integer of encoding enc (8 to 64 bits) from b, as
// unsigned and as sign-extended.
func intBits(enc uint8, b []byte, bo binary.ByteOrder) (u uint64, s int64) {
	switch enc {
	case EncValue8:
		return uint64(b[0]), int64(int8(b[0]))
	case EncValue16:
		v := bo.Uint16(b)
		return uint64(v), int64(int16(v))
	case EncValue32:
		v := bo.Uint32(b)
		return uint64(v), int64(int32(v))
	}
	u = bo.Uint64(b)
	return u, int64(u)
}

func renderInt(enc, format uint8, b []byte, bo binary.ByteOrder) trace.Value {
	u, s := intBits(enc, b, bo)
	switch format {
	case FmtSignedInt:
		return trace.IntValue(s)
	case FmtHexInt:
		return trace.HexValue(u)
	case FmtHexBytes:
		return trace.StringValue(hexBytes(b))
	case FmtBoolean:
		if enc != EncValue64 {
			return boolValue(uint32(u))
		}
	case FmtString8:
		if enc == EncValue8 {
			return trace.StringValue(string(rune(b[0])))
		}
	case FmtStringUTF:
		if enc == EncValue16 || enc == EncValue32 {
			return trace.StringValue(string(rune(u)))
		}
	case FmtPort:
		if enc == EncValue16 {
			return trace.UintValue(uint64(binary.BigEndian.Uint16(b)))
		}
	case FmtPid:
		if enc == EncValue32 {
			return trace.IntValue(s)
		}
	case FmtErrno:
		if enc == EncValue32 {
			return trace.StringValue(Errno(int32(u)))
		}
	case FmtTime:
		if enc == EncValue32 || enc == EncValue64 {
			return trace.StringValue(DateTime(s))
		}
	case FmtFloat:
		if enc == EncValue32 {
			return float32Value(uint32(u))
		}
		if enc == EncValue64 {
			return float64Value(u)
		}
	case FmtIPAddress, FmtIPAddressObsolete:
		if enc == EncValue32 {
			return trace.StringValue(ipString(b))
		}
	}
	return trace.UintValue(u)
}

// nullable applies the length-16 encodings' rules for fixed-size formats:
// length 0 is null, a length the format knows decodes as that value, any
// other length falls back to the encoding's default (ok false).
func nullable(format uint8, b []byte, bo binary.ByteOrder) (trace.Value, bool) {
	var sizes []int
	switch format {
	case FmtUnsignedInt, FmtSignedInt, FmtHexInt:
		sizes = []int{1, 2, 4, 8}
	case FmtBoolean:
		sizes = []int{1, 2, 4}
	case FmtErrno, FmtPid:
		sizes = []int{4}
	case FmtTime, FmtFloat:
		sizes = []int{4, 8}
	case FmtPort:
		sizes = []int{2}
	case FmtUUID:
		sizes = []int{16}
	case FmtIPAddress, FmtIPAddressObsolete:
		sizes = []int{4, 16}
	default:
		return trace.Value{}, false
	}
	if len(b) == 0 {
		return trace.Value{}, true
	}
	for _, n := range sizes {
		if len(b) == n {
			enc := map[int]uint8{1: EncValue8, 2: EncValue16, 4: EncValue32, 8: EncValue64, 16: EncValue128}[n]
			return Render(enc, format, b, bo == binary.BigEndian), true
		}
	}
	return trace.Value{}, false
}

// renderChar8 renders 8-bit text or binary: hex bytes, Latin-1 (string8),
// UTF with optional BOM, or UTF-8 with invalid bytes taken as Latin-1.
func renderChar8(format uint8, b []byte, binary bool) trace.Value {
	switch format {
	case FmtHexBytes:
		return trace.StringValue(hexBytes(b))
	case FmtString8:
		return trace.StringValue(latin1(b))
	case FmtStringUTF:
		return trace.StringValue(utf8Lenient(b))
	case FmtStringUTFBOM, FmtStringXML, FmtStringJSON:
		if s, ok := bomString(b); ok {
			return trace.StringValue(s)
		}
		return trace.StringValue(utf8Lenient(b))
	}
	if binary {
		return trace.StringValue(hexBytes(b))
	}
	return trace.StringValue(utf8Lenient(b))
}

func boolValue(v uint32) trace.Value {
	switch v {
	case 0:
		return trace.BoolValue(false)
	case 1:
		return trace.BoolValue(true)
	}
	return trace.IntValue(int64(int32(v)))
}

// float32Value keeps a float32's shortest decimal form: the float64 nearest
// to it renders the same digits. Non-finite values are strings as the C++
// formatter on Linux prints them.
func float32Value(bits uint32) trace.Value {
	f := math.Float32frombits(bits)
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return trace.StringValue(nonFinite(bits>>31 != 0, math.IsNaN(float64(f))))
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return trace.FloatValue(v)
}

func float64Value(bits uint64) trace.Value {
	f := math.Float64frombits(bits)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return trace.StringValue(nonFinite(bits>>63 != 0, math.IsNaN(f)))
	}
	return trace.FloatValue(f)
}

func nonFinite(neg, nan bool) string {
	s := "inf"
	if nan {
		s = "nan"
	}
	if neg {
		s = "-" + s
	}
	return s
}

// errnoNames are the Linux errno names the reference decoder knows.
var errnoNames = [...]string{"", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
	"ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
	"ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE",
	"EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY",
	"ELOOP", "", "ENOMSG", "EIDRM", "ECHRNG", "EL2NSYNC", "EL3HLT", "EL3RST", "ELNRNG", "EUNATCH",
	"ENOCSI", "EL2HLT", "EBADE", "EBADR", "EXFULL", "ENOANO", "EBADRQC", "EBADSLT", "", "EBFONT",
	"ENOSTR", "ENODATA", "ETIME", "ENOSR", "ENONET", "ENOPKG", "EREMOTE", "ENOLINK", "EADV", "ESRMNT",
	"ECOMM", "EPROTO", "EMULTIHOP", "EDOTDOT", "EBADMSG", "EOVERFLOW", "ENOTUNIQ", "EBADFD", "EREMCHG", "ELIBACC",
	"ELIBBAD", "ELIBSCN", "ELIBMAX", "ELIBEXEC", "EILSEQ", "ERESTART", "ESTRPIPE", "EUSERS", "ENOTSOCK", "EDESTADDRREQ",
	"EMSGSIZE", "EPROTOTYPE", "ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT", "EADDRINUSE", "EADDRNOTAVAIL",
	"ENETDOWN", "ENETUNREACH", "ENETRESET", "ECONNABORTED", "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS",
	"ETIMEDOUT", "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE", "EUCLEAN", "ENOTNAM", "ENAVAIL",
	"EISNAM", "EREMOTEIO", "EDQUOT", "ENOMEDIUM", "EMEDIUMTYPE", "ECANCELED", "ENOKEY", "EKEYEXPIRED", "EKEYREVOKED", "EKEYREJECTED",
	"EOWNERDEAD", "ENOTRECOVERABLE", "ERFKILL", "EHWPOISON"}

// Errno renders an errno value as "EPERM(1)", or "ERRNO(n)" when unnamed.
func Errno(v int32) string {
	n := strconv.FormatInt(int64(v), 10)
	if v >= 0 && int(v) < len(errnoNames) && errnoNames[v] != "" {
		return errnoNames[v] + "(" + n + ")"
	}
	return "ERRNO(" + n + ")"
}

// maxDateSeconds bounds the seconds that glibc's gmtime_r can render (the
// year must fit a C int).
const maxDateSeconds = 67767976233316800

// DateTime renders seconds since 1970 as "2033-05-18T03:33:20" (UTC, no
// zone suffix), or "TIME(n)" out of range.
func DateTime(sec int64) string {
	if sec > maxDateSeconds || sec < -maxDateSeconds {
		return "TIME(" + strconv.FormatInt(sec, 10) + ")"
	}
	t := time.Unix(sec, 0).UTC()
	y := t.Year()
	var sb strings.Builder
	if y < 0 {
		sb.WriteByte('-')
		pad(&sb, -y, 3)
	} else {
		pad(&sb, y, 4)
	}
	sb.WriteByte('-')
	pad(&sb, int(t.Month()), 2)
	sb.WriteByte('-')
	pad(&sb, t.Day(), 2)
	sb.WriteByte('T')
	pad(&sb, t.Hour(), 2)
	sb.WriteByte(':')
	pad(&sb, t.Minute(), 2)
	sb.WriteByte(':')
	pad(&sb, t.Second(), 2)
	return sb.String()
}

func pad(sb *strings.Builder, v, width int) {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		sb.WriteByte('0')
	}
	sb.WriteString(s)
}

const hexDigits = "0123456789abcdef"

// hexBytes renders bytes as "48 6f 77".
func hexBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	out := make([]byte, 0, 3*len(b)-1)
	for i, c := range b {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

// uuidValue turns 16 bytes in network (RFC 4122) order into a GUID value.
func uuidValue(b []byte) trace.Value {
	var g [16]byte
	copy(g[:], b)
	g[0], g[1], g[2], g[3] = g[3], g[2], g[1], g[0]
	g[4], g[5] = g[5], g[4]
	g[6], g[7] = g[7], g[6]
	return trace.GUIDValue(g)
}

func ipString(b []byte) string {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b)).String()
	case 16:
		return netip.AddrFrom16([16]byte(b)).String()
	}
	return hexBytes(b)
}

func latin1(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// utf8Lenient returns b as text: valid UTF-8 sequences as they are, every
// other byte as the Latin-1 character of that value.
func utf8Lenient(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			sb.WriteRune(rune(b[0]))
			b = b[1:]
			continue
		}
		sb.Write(b[:n])
		b = b[n:]
	}
	return sb.String()
}

func utf16String(b []byte, bo binary.ByteOrder) string {
	var sb strings.Builder
	for i := 0; i+2 <= len(b); i += 2 {
		w0 := rune(bo.Uint16(b[i:]))
		if w0 >= 0xD800 && w0 <= 0xDBFF && i+4 <= len(b) {
			if w1 := rune(bo.Uint16(b[i+2:])); w1 >= 0xDC00 && w1 <= 0xDFFF {
				sb.WriteRune((w0-0xD800)<<10 | (w1 - 0xDC00) + 0x10000)
				i += 2
				continue
			}
		}
		sb.WriteRune(w0) // unpaired surrogates become U+FFFD
	}
	return sb.String()
}

func utf32String(b []byte, bo binary.ByteOrder) string {
	var sb strings.Builder
	for i := 0; i+4 <= len(b); i += 4 {
		sb.WriteRune(rune(bo.Uint32(b[i:])))
	}
	return sb.String()
}

// bomString decodes text that starts with a byte order mark, checking the
// marks in the reference decoder's order (UTF-32 before UTF-16).
func bomString(b []byte) (string, bool) {
	switch {
	case len(b) >= 4 && b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0:
		return utf32String(b[4:len(b)&^3], binary.LittleEndian), true
	case len(b) >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF:
		return utf32String(b[4:len(b)&^3], binary.BigEndian), true
	case len(b) >= 2 && b[0] == 0xFF && b[1] == 0xFE:
		return utf16String(b[2:], binary.LittleEndian), true
	case len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF:
		return utf16String(b[2:], binary.BigEndian), true
	case len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF:
		return utf8Lenient(b[3:]), true
	}
	return "", false
}
