package wire_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"viewer/render"
	"viewer/render/wire"
	"viewer/trace/synth"
)

// A session: index a trace once, send the name tables, then answer each
// viewport request with a reply frame echoing the request's seq.
func Example() {
	x, err := render.Build(context.Background(), synth.New(synth.Config{Events: 10000, Tracks: 4, Seed: 1}), render.Options{SpillDir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer x.Close()
	tracks := x.Tracks()
	tables := wire.AppendTables(nil, 0, wire.NewTables(x.Meta(), tracks))

	first, last := x.Span()
	vp := render.Viewport{Start: first, End: last + 1, Width: 1000, Tracks: tracks}
	start := time.Now()
	s, err := x.Query(context.Background(), vp)
	if err != nil {
		panic(err)
	}
	reply := wire.AppendReply(nil, 17, wire.NewReply(s, time.Since(start)))

	for _, b := range [][]byte{tables, reply} {
		f, err := wire.Decode(b)
		if err != nil {
			panic(err)
		}
		switch f.Kind {
		case wire.KindTables:
			fmt.Println("tables:", len(f.Tables.Types), "types,", len(f.Tables.Tracks), "tracks")
		case wire.KindReply:
			n := 0
			for _, t := range f.Reply.Tracks {
				for _, c := range t.Count {
					n += int(c)
				}
			}
			fmt.Println("reply", f.Seq, "counts", n, "events in", f.Reply.Buckets, "buckets")
		}
	}
	// Output:
	// tables: 48 types, 4 tracks
	// reply 17 counts 10000 events in 714 buckets
}
