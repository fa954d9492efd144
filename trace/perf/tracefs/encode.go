package tracefs

import (
	"encoding/binary"
)

// Format is a format file to bundle into TRACING_DATA.
type Format struct {
	System string
	Text   string
}

// AppendTracingData appends a TRACING_DATA blob (version 0.6) holding the
// given format files to dst. The blob's own sizes use the given byte
// order; kallsyms, printk formats and saved cmdlines are empty.
func AppendTracingData(dst []byte, bigEndian bool, longSize int, formats []Format) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		bo = binary.BigEndian
	}
	dst = append(dst, tracingMagic...)
	dst = append(dst, "0.6\x00"...)
	be := byte(0)
	if bigEndian {
		be = 1
	}
	dst = append(dst, be, byte(longSize))
	dst = bo.AppendUint32(dst, 4096)
	for _, h := range []string{"header_page", "header_event"} {
		dst = append(dst, h...)
		dst = append(dst, 0)
		dst = bo.AppendUint64(dst, 0)
	}
	dst = bo.AppendUint32(dst, 0) // ftrace formats
	var systems []string
	bySystem := map[string][]string{}
	for _, f := range formats {
		if _, ok := bySystem[f.System]; !ok {
			systems = append(systems, f.System)
		}
		bySystem[f.System] = append(bySystem[f.System], f.Text)
	}
	dst = bo.AppendUint32(dst, uint32(len(systems)))
	for _, s := range systems {
		dst = append(dst, s...)
		dst = append(dst, 0)
		dst = bo.AppendUint32(dst, uint32(len(bySystem[s])))
		for _, text := range bySystem[s] {
			dst = bo.AppendUint64(dst, uint64(len(text)))
			dst = append(dst, text...)
		}
	}
	dst = bo.AppendUint32(dst, 0) // kallsyms
	dst = bo.AppendUint32(dst, 0) // printk
	dst = bo.AppendUint64(dst, 0) // saved cmdlines
	return dst
}
