package synth

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"viewer/trace"
)

// Format is a [trace.Format] for tests and benchmarks of the server and
// the browser: a file of one text line names the parameters of a
// synthetic trace, so that a few bytes stand for millions of events with
// stacks, labels, lost events and decoded fields.
//
//	SYNTH1 events=N seed=S tracks=T [truncate]\n
type Format struct{}

// Magic starts every file of [Format].
const Magic = "SYNTH1 "

// File returns a file of [Format].
func File(events int64, seed uint64, tracks int) []byte {
	return fmt.Appendf(nil, "%sevents=%d seed=%d tracks=%d\n", Magic, events, seed, tracks)
}

// Name returns "synth".
func (Format) Name() string { return "synth" }

// Match reports whether head starts with [Magic].
func (Format) Match(head []byte) bool { return bytes.HasPrefix(head, []byte(Magic)) }

// Open parses the header line and returns the synthetic trace it names
// (8 tracks unless it says otherwise).
func (Format) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	if size > 4096 {
		return nil, &trace.FormatError{Format: "synth", Off: 0, Msg: "header too long"}
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	line, _, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, &trace.FormatError{Format: "synth", Off: size, Msg: "no header line", Err: trace.ErrTruncated}
	}
	cfg := Config{Tracks: 8}
	for f := range strings.FieldsSeq(strings.TrimPrefix(string(line), Magic)) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "events":
			_, err = fmt.Sscan(v, &cfg.Events)
		case "seed":
			_, err = fmt.Sscan(v, &cfg.Seed)
		case "tracks":
			_, err = fmt.Sscan(v, &cfg.Tracks)
		case "truncate":
			cfg.Truncate = true
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, &trace.FormatError{Format: "synth", Off: int64(len(Magic)), Msg: err.Error()}
		}
	}
	return New(cfg), nil
}
