package perftest

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// seeker is an in-memory io.WriteSeeker.
type seeker struct {
	b   []byte
	off int64
}

func (s *seeker) Write(p []byte) (int, error) {
	if need := s.off + int64(len(p)); need > int64(len(s.b)) {
		s.b = append(s.b, make([]byte, need-int64(len(s.b)))...)
	}
	copy(s.b[s.off:], p)
	s.off += int64(len(p))
	return len(p), nil
}

func (s *seeker) Seek(off int64, whence int) (int64, error) {
	if whence == 0 {
		s.off = off
	} else {
		s.off = int64(len(s.b)) + off
	}
	return s.off, nil
}

func TestNewWriterErrors(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, WriterOptions{}); err == nil {
		t.Error("file mode to a bytes.Buffer accepted")
	}
	if _, err := NewWriter(&seeker{}, WriterOptions{AttrSize: 63}); err == nil {
		t.Error("attr size 63 accepted")
	}
	w, err := NewWriter(&seeker{}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Sample(Sample{Attr: 1})
	if err := w.Close(); err == nil {
		t.Error("sample of an unknown attr accepted")
	}
}

// TestGenerateHeader: Generate is deterministic, and the file header says
// what perf's header.h says (magic, sizes, the data section after the
// header, feature bits).
func TestGenerateHeader(t *testing.T) {
	for _, big := range []bool{false, true} {
		var a, b seeker
		if err := Generate(&a, 100, GenerateOptions{BigEndian: big, SchedEvery: 3}); err != nil {
			t.Fatal(err)
		}
		if err := Generate(&b, 100, GenerateOptions{BigEndian: big, SchedEvery: 3}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.b, b.b) {
			t.Fatal("Generate is not deterministic")
		}
		var bo binary.ByteOrder = binary.LittleEndian
		magic := "PERFILE2"
		if big {
			bo, magic = binary.BigEndian, "2ELIFREP"
		}
		h := a.b
		if string(h[:8]) != magic || bo.Uint64(h[8:]) != 104 || bo.Uint64(h[16:]) != 136+16 || bo.Uint64(h[40:]) != 104 {
			t.Errorf("big %v: header % x", big, h[:48])
		}
		features := bo.Uint64(h[72:])
		want := uint64(1<<featTracingData | 1<<featHostname | 1<<featOSRelease | 1<<featArch | 1<<featNrCPUs |
			1<<featCmdline | 1<<featEventDesc | 1<<featSampleTime | 1<<featClockID | 1<<featClockData)
		if features != want {
			t.Errorf("big %v: features %#x, want %#x", big, features, want)
		}
	}
}
