// Package perf reads Linux perf.data files (file and pipe mode, either
// byte order) whose samples are tracepoints: kernel tracepoints described
// by tracefs format files, EventHeader user_events and .NET runtime
// user_events.
//
// # Design
//
// [Format].Open parses the header, the attrs and the feature sections of a
// file-mode file (pipe mode delivers the same facts as records) and returns
// a [Reader] that walks the data records front to back through a chunked
// buffer. Side-band records feed the tables: COMM and FORK name threads
// and group them under process tracks, LOST and LOST_SAMPLES become
// [trace.Gap]s, FINISHED_ROUND becomes a [trace.Marker]. SAMPLE records
// become [trace.Event]s whose payload location is the tracepoint's raw
// data; fields are decoded later by [Reader.Details] with the tracefs
// format ([tracefs.Event]) or the EventHeader metadata the raw data
// carries ([eventheader]).
//
// perf writes records per CPU buffer, not in time order. The reader queues
// samples and applies perf's own two-round rule: at each FINISHED_ROUND it
// delivers, sorted by time then file order, the queued events not later
// than the largest time seen before the previous FINISHED_ROUND. Sorting
// each round on its own is not enough (a record may belong before the
// previous round's tail; NOTES.md §ordering). [Options].Order selects a
// full sort instead.
//
// COMPRESSED records (perf record -z) hold one zstd stream split at flush
// points (NOTES.md §compressed); perf 6.16 and later write COMPRESSED2
// records instead, whose u64 data_size gives the payload's length before
// the padding that keeps the next record 8-byte aligned. The reader
// decompresses them with one streaming decoder whose input
// walks the COMPRESSED records of the file, and writes the raw data of the
// samples found inside to an unlinked temporary file ([Options].TempDir),
// so that decompressed data costs disk rather than memory: their
// [trace.Loc] offsets lie past the end of the file (size + offset in the
// temporary file), which is how Details tells them apart from bytes it
// can read from the file. [Reader.Close] removes the file; a reader that
// is dropped without Close has it closed by the garbage collector.
//
// Record types: the reader knows every type of current perf by name (see
// recordTypes). Records it does not apply (MMAP2, KSYMBOL…) and records of
// unknown types are counted and reported in [trace.Meta].Notices, and the
// count of every type is in the "records" entry of [trace.Meta].Info.
//
// Lost events: LOST records become gaps; the LOST_SAMPLES records perf
// writes per event at the end of a recording repeat those counts, so only
// their excess is added (with a notice).
//
// NOTES.md in this directory records where real recordings and the
// reference decoders depart from the format documents, for this package,
// tracefs and eventheader; comments cite it as "NOTES.md §name".
//
// # Security
//
// The reader is meant for untrusted input. Record sizes, section offsets,
// id arrays, strings and counts are checked against the bytes present;
// named Max… limits bound what a file can make the reader allocate.
package perf

// BUG(perf): Pipe-mode data must be in a file (an io.ReaderAt): the reader
// does not read from a non-seekable stream. The process tree is kept as
// thread → process tracks; a process's parent (FORK ppid) is not
// recorded. Native .NET runtime events, which never carry metadata, are
// named and decoded from the CLR schema (trace/clr) through the decoder
// that cmd/viewer plugs into [Format].DotNet, with the newest version of
// the event the schema knows, since the version is not in the data; an
// event the schema lacks, or on a tracepoint whose name does not say which
// runtime provider it carries, is typed by tracepoint and event id only
// and its payload is one bytes field.

import (
	"encoding/binary"
	"io"

	"viewer/trace"
)

// Format is the perf.data format. DotNet, when set, makes the decoder of
// .NET runtime user_events for each file opened (see [DotNetDecoder]);
// without it their payloads stay raw bytes.
type Format struct {
	DotNet func() DotNetDecoder
	// TempDir is where readers keep the decompressed samples of
	// COMPRESSED data; "" means os.TempDir().
	TempDir string
}

// Name returns "perf".
func (Format) Name() string { return "perf" }

// Match reports whether head starts with the perf.data magic of either
// byte order.
func (Format) Match(head []byte) bool {
	return len(head) >= 8 && (string(head[:8]) == magicLE || string(head[:8]) == magicBE)
}

// Open returns a reader for the perf.data file r of the given size.
func (f Format) Open(r io.ReaderAt, size int64) (trace.Reader, error) {
	opts := Options{TempDir: f.TempDir}
	if f.DotNet != nil {
		opts.DotNet = f.DotNet()
	}
	return NewReader(r, size, opts)
}

const (
	magicLE = "PERFILE2"
	magicBE = "2ELIFREP"
)

// Order says how a [Reader] puts records in time order.
type Order uint8

const (
	// OrderRounds applies perf's two-round rule at each FINISHED_ROUND.
	OrderRounds Order = iota
	// OrderFullSort sorts all samples of the file before delivering any.
	OrderFullSort
	// OrderPerRound sorts each round on its own, as the LinuxTracepoints
	// readers do. It can leave time inversions; it exists to measure them.
	OrderPerRound
)

// Options tune a [Reader].
type Options struct {
	Order Order
	// DotNet decodes .NET runtime user_events payloads; nil leaves them as
	// raw fields. See [DotNetDecoder].
	DotNet DotNetDecoder
	// TempDir is where the reader keeps the raw data of samples found in
	// COMPRESSED data, in an unlinked temporary file; "" means
	// os.TempDir().
	TempDir string
}

// Limits on what a file can make the reader hold.
const (
	MaxAttrs          = 1 << 14   // attrs (events) in one file
	MaxIDs            = 1 << 20   // sample ids over all attrs
	MaxSection        = 256 << 20 // bytes of one feature section or TRACING_DATA record
	MaxDecompressed   = 4 << 30   // bytes of decompressed COMPRESSED records
	MaxRatio          = 256       // decompressed bytes per compressed byte (perf -z reaches about 16)
	MaxCallchain      = 4096      // frames of one callchain
	MaxAttrSize       = 4096      // perf_event_attr size
	MaxCommLen        = 256       // bytes of a COMM name
	maxRecordSize     = 1 << 16   // a record's u16 size
	recordHeaderSize  = 8
	fileHeaderSize    = 104
	pipeHeaderSize    = 16
	attrSizeVer0      = 64
	featureBitmapBits = 256
)

// Record types.
const (
	recMmap            = 1
	recLost            = 2
	recComm            = 3
	recExit            = 4
	recFork            = 7
	recSample          = 9
	recMmap2           = 10
	recLostSamples     = 13
	recHeaderAttr      = 64
	recHeaderEventType = 65
	recTracingData     = 66
	recBuildID         = 67
	recFinishedRound   = 68
	recAuxtrace        = 71
	recEventUpdate     = 78
	recHeaderFeature   = 80
	recCompressed      = 81
	recFinishedInit    = 82
	recCompressed2     = 83 // COMPRESSED with a data_size field and 8-byte padding
)

// sample_type bits.
const (
	sampleIP         = 1 << 0
	sampleTID        = 1 << 1
	sampleTime       = 1 << 2
	sampleAddr       = 1 << 3
	sampleRead       = 1 << 4
	sampleCallchain  = 1 << 5
	sampleID         = 1 << 6
	sampleCPU        = 1 << 7
	samplePeriod     = 1 << 8
	sampleStreamID   = 1 << 9
	sampleRaw        = 1 << 10
	sampleIdentifier = 1 << 16
)

// read_format bits.
const (
	readTotalTimeEnabled = 1 << 0
	readTotalTimeRunning = 1 << 1
	readID               = 1 << 2
	readGroup            = 1 << 3
	readLost             = 1 << 4
)

// attr flag bits (the u64 at offset 40).
const (
	attrSampleIDAll = 1 << 18
	attrUseClockID  = 1 << 25
)

// attr types.
const attrTracepoint = 2

// Feature bits.
const (
	featTracingData = 1
	featHostname    = 3
	featOSRelease   = 4
	featVersion     = 5
	featArch        = 6
	featNrCPUs      = 7
	featCPUDesc     = 8
	featCmdline     = 11
	featEventDesc   = 12
	featSampleTime  = 21
	featClockID     = 23
	featCompressed  = 27
	featClockData   = 29
)

// contextMax: callchain entries at or above this value are context markers
// (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER…), not addresses.
const contextMax = ^uint64(0) - 4095

// contextModules names the module of the frames that follow each context
// marker of a call chain (perf_event.h's PERF_CONTEXT_*, written as the
// negative numbers they are), as perf script names unresolved ones.
var contextModules = [...]struct {
	marker uint64
	module string
}{
	{-32 & (1<<64 - 1), "[hypervisor]"},
	{-128 & (1<<64 - 1), "[kernel.kallsyms]"},
	{-512 & (1<<64 - 1), "[user]"},
	{-2048 & (1<<64 - 1), "[guest]"},
	{-2176 & (1<<64 - 1), "[guest.kernel.kallsyms]"},
	{-2560 & (1<<64 - 1), "[guest.user]"},
}

func order(magic []byte) binary.ByteOrder {
	if string(magic) == magicBE {
		return binary.BigEndian
	}
	return binary.LittleEndian
}
