// Package tracefstest writes the tracefs event descriptions perf.data files
// carry, for tests, benchmarks and fuzz seeds of the readers: the
// TRACING_DATA blob (trace-cmd's tracing data, version 0.6) that bundles
// the format files of the recorded tracepoints.
//
// The encoder follows the layout perf writes (tools/perf/util/trace-event-info.c)
// on its own: it does not import package tracefs, so the tests of tracefs
// and of the perf reader can use it (and it checks the reader instead of
// sharing its constants).
package tracefstest

import (
	"encoding/binary"
)

// magic starts every TRACING_DATA blob: 0x17 0x08 0x44 "tracing".
const magic = "\x17\x08\x44tracing"

// Format is a format file to bundle into TRACING_DATA: the text the kernel
// shows in events/<System>/<name>/format.
type Format struct {
	System string
	Text   string
}

// AppendTracingData appends a TRACING_DATA blob (version 0.6) holding the
// given format files to dst, grouped by system in order of first
// appearance. The blob's own sizes use the given byte order; longSize is
// the traced kernel's word size (4 or 8). The header_page and header_event
// files, ftrace formats, kallsyms, printk formats and saved cmdlines are
// empty.
func AppendTracingData(dst []byte, bigEndian bool, longSize int, formats []Format) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		bo = binary.BigEndian
	}
	dst = append(dst, magic...)
	dst = append(dst, "0.6\x00"...)
	be := byte(0)
	if bigEndian {
		be = 1
	}
	dst = append(dst, be, byte(longSize))
	dst = bo.AppendUint32(dst, 4096) // page size
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
