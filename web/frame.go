package web

import (
	"encoding/binary"

	"viewer/render"
)

// appendFrame appends the payload of a viewport frame for slice s.
//
// This stands in for package render/wire until it lands: a header of
// i64 start, i64 res, u32 buckets, u32 tracks, then per track i32 track,
// u32 items and per item i32 bucket, i32 count, i32 first, i32 type, all
// little-endian.
func appendFrame(b []byte, s *render.Slice, _ *request) ([]byte, error) {
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(s.Start))
	b = le.AppendUint64(b, uint64(s.Res))
	b = le.AppendUint32(b, uint32(s.Buckets))
	b = le.AppendUint32(b, uint32(len(s.Tracks)))
	for _, t := range s.Tracks {
		b = le.AppendUint32(b, uint32(t.Track))
		b = le.AppendUint32(b, uint32(len(t.Items)))
		for _, it := range t.Items {
			b = le.AppendUint32(b, uint32(it.Bucket))
			b = le.AppendUint32(b, uint32(it.Count))
			b = le.AppendUint32(b, uint32(it.First))
			b = le.AppendUint32(b, uint32(it.Type))
		}
	}
	return b, nil
}
