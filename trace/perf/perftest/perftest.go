// Package perftest writes perf.data files for the tests, benchmarks, fuzz
// seeds and fixtures of the perf reader: a [Writer] for any mode, byte
// order, attr size and sample layout, [Generate] for files of many
// tracepoint samples, and the tracefs formats and raw data of EventHeader
// and .NET runtime user_events.
//
// The package does not import the perf reader (whose internal tests use
// it, and Go forbids the cycle): the wire constants below and in the
// writer come from perf's own headers (tools/perf/util/header.h,
// include/uapi/linux/perf_event.h, tools/perf/util/event.h), so a round
// trip checks the reader against an independent encoder. The tracefs
// TRACING_DATA blob and EventHeader events come from
// [tracefstest] and [eventheadertest].
package perftest

import "strconv"

// sample_type bits of perf_event_attr (enum perf_event_sample_format),
// for [Attr].SampleType.
const (
	SampleIP         = 1 << 0
	SampleTID        = 1 << 1
	SampleTime       = 1 << 2
	SampleAddr       = 1 << 3
	SampleRead       = 1 << 4
	SampleCallchain  = 1 << 5
	SampleID         = 1 << 6
	SampleCPU        = 1 << 7
	SamplePeriod     = 1 << 8
	SampleStreamID   = 1 << 9
	SampleRaw        = 1 << 10
	SampleIdentifier = 1 << 16
)

// read_format bits of perf_event_attr (enum perf_event_read_format), for
// [Attr].ReadFormat.
const (
	ReadTotalTimeEnabled = 1 << 0
	ReadTotalTimeRunning = 1 << 1
	ReadID               = 1 << 2
	ReadGroup            = 1 << 3
	ReadLost             = 1 << 4
)

// Event types of perf_event_attr (enum perf_type_id), for [Attr].Type.
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2
)

// File layout (tools/perf/util/header.h).
const (
	magicLE          = "PERFILE2" // the magic in little-endian files
	magicBE          = "2ELIFREP" // and as a big-endian writer stores it
	fileHeaderSize   = 104        // magic, size, attr_size, 3 sections, 256 feature bits
	pipeHeaderSize   = 16         // magic, size
	recordHeaderSize = 8          // u32 type, u16 misc, u16 size
	maxRecordSize    = 1 << 16    // a record's size is a u16
	attrSizeVer0     = 64         // PERF_ATTR_SIZE_VER0
	attrClockIDOff   = 92         // clockid in perf_event_attr (PERF_ATTR_SIZE_VER3 = 96)
)

// Record types (enum perf_event_type, enum perf_user_event_type).
const (
	recLost          = 2
	recComm          = 3
	recExit          = 4
	recFork          = 7
	recSample        = 9
	recMmap2         = 10
	recLostSamples   = 13
	recHeaderAttr    = 64 // the first user (tool) record type
	recTracingData   = 66
	recFinishedRound = 68
	recEventUpdate   = 78
	recHeaderFeature = 80
	recCompressed    = 81
	recFinishedInit  = 82
	recCompressed2   = 83 // perf 6.16: COMPRESSED with u64 data_size, padded to 8 bytes
)

// PERF_EVENT_UPDATE__NAME: an EVENT_UPDATE record naming an event.
const eventUpdateName = 2

// perf_event_attr flag bits (the u64 bit field at offset 40).
const (
	attrSampleIDAll = 1 << 18
	attrUseClockID  = 1 << 25
)

// Feature bits (HEADER_…).
const (
	featTracingData = 1
	featHostname    = 3
	featOSRelease   = 4
	featArch        = 6
	featNrCPUs      = 7
	featCmdline     = 11
	featEventDesc   = 12
	featSampleTime  = 21
	featClockID     = 23
	featCompressed  = 27
	featClockData   = 29
	featLast        = 32 // HEADER_LAST_FEATURE: ends pipe mode's feature records
)

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
