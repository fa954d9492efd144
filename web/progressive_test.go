package web

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"viewer/render"
	"viewer/render/wire"
	"viewer/trace/export"
	"viewer/trace/synth"
)

// TestProgressiveFirstFrame uploads a trace of millions of events and
// opens a session at once: it gets "ready", the tables and a reply to a
// whole-trace request while the trace still indexes (the reply holds a
// prefix, fewer events than the trace), "live" messages marked indexing
// as the prefix grows, replies with more events as it does, and at the
// end an "ended" message, after which the whole trace answers. The
// statistics are those of a build that published no snapshots.
func TestProgressiveFirstFrame(t *testing.T) {
	const events = 6_000_000
	data := synthFile(events, 11)
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("big", data)
	uploaded := time.Now()
	var firstFrame time.Duration
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))

	var (
		seq       uint32
		asked     = -1 // the live message the newest request was sent for
		pending   bool // a request is not answered yet
		readyAt   = -1 // messages before "ready"
		progress  []Progress
		lives     []liveJSON
		replies   []int64 // events in each reply, in order
		beforeEnd []int64 // those of replies that came before the ended message
		ended     bool
	)
	total := func(f wire.Frame) (n int64) {
		for _, k := range replyCounts(f.Reply) {
			n += k
		}
		return n
	}
	// ask requests the whole span of the newest live message.
	ask := func() {
		l := lives[len(lives)-1]
		seq++
		asked, pending = len(lives)-1, true
		req := viewportRequest(seq, int64(l.First), int64(l.Last)+1, 1000, 8)
		if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	for n := 0; ; n++ {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("reading after %d live messages, %d replies: %v", len(lives), len(replies), err)
		}
		if typ == websocket.BinaryMessage {
			f, err := wire.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind == wire.KindTables {
				continue
			}
			k := total(f)
			if firstFrame == 0 {
				firstFrame = time.Since(uploaded)
			}
			pending = pending && f.Seq != seq
			replies = append(replies, k)
			if !ended {
				beforeEnd = append(beforeEnd, k)
				if k < lives[asked].Events || k > events {
					t.Errorf("reply %d holds %d events, asked after %d were indexed (of %d)", f.Seq, k, lives[asked].Events, events)
				}
			}
			if ended {
				if f.Seq != seq {
					continue // asked before the end
				}
				if k != events {
					t.Errorf("after the end the whole trace holds %d events, want %d", k, events)
				}
				break
			}
			if asked < len(lives)-1 {
				ask() // the prefix grew meanwhile
			}
			continue
		}
		var m struct {
			Type string `json:"type"`
		}
		json.Unmarshal(b, &m)
		switch m.Type {
		case "ready":
			readyAt = n
		case "progress":
			var p struct{ Progress }
			json.Unmarshal(b, &p)
			progress = append(progress, p.Progress)
			if p.State == StateReady {
				t.Errorf("a progress message says ready: %s", b)
			}
		case "live":
			var l liveJSON
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			if !l.Indexing {
				t.Errorf("live message of an indexing build without indexing: %s", b)
			}
			if readyAt < 0 {
				t.Errorf("live message before ready: %s", b)
			}
			if len(lives) > 0 && l.Events < lives[len(lives)-1].Events {
				t.Errorf("live message %s after %d events", b, lives[len(lives)-1].Events)
			}
			lives = append(lives, l)
			if l.Ended {
				ended = true
			}
			if !pending || ended {
				ask() // the prefix grew; or ended: the whole trace
			}
		default:
			t.Fatalf("message %s", b)
		}
	}
	t.Logf("first frame %v after the upload; %d progress, %d live messages; replies before the end: %v",
		firstFrame, len(progress), len(lives), beforeEnd)
	if len(beforeEnd) < 2 {
		t.Fatalf("%d replies came before indexing ended, want several", len(beforeEnd))
	}
	if beforeEnd[0] >= events {
		t.Errorf("the first reply holds %d events: the whole trace, not a prefix", beforeEnd[0])
	}
	grew := false
	for i := 1; i < len(beforeEnd); i++ {
		if beforeEnd[i] < beforeEnd[i-1] {
			t.Errorf("reply %d holds %d events after %d", i, beforeEnd[i], beforeEnd[i-1])
		}
		grew = grew || beforeEnd[i] > beforeEnd[i-1]
	}
	if !grew {
		t.Errorf("the replies during indexing never grew: %v", beforeEnd)
	}
	// The progress went on with the prefix shown, below 100 %.
	sawProgress := false
	for _, p := range progress {
		if p.State == StateIndexing && p.Events > 0 && p.Percent > 0 && p.Percent < 100 {
			sawProgress = true
		}
	}
	if !sawProgress {
		t.Errorf("no indexing progress while the prefix showed: %+v", progress)
	}

	// The statistics of a normal build, with no snapshots.
	ti := ts.waitReady(id)
	r, err := synth.Format{}.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	x, err := render.Build(context.Background(), r, render.Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if want := capStats(x.Stats()); !sameStats(t, *ti.Stats, want) {
		t.Errorf("stats after a progressive build:\n%+v\nwant those of a plain build:\n%+v", *ti.Stats, want)
	}
}

// sameStats compares statistics as the API encodes them.
func sameStats(t *testing.T, a, b export.Stats) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var va, vb any
	json.Unmarshal(ja, &va)
	json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}

// TestSmallBuildNoPrefix: a build shorter than the snapshot interval
// publishes no prefix: a session that connects at once gets "ready" and
// its reply with the whole trace, and no "live" message.
func TestSmallBuildNoPrefix(t *testing.T) {
	const events = 2000
	ts := newTestServer(t, t.TempDir(), nil)
	_, id, _ := ts.upload("small", synthFile(events, 12))
	c, _, err := ts.dial(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := viewportRequest(1, -1<<62, 1<<62, 1000, 8)
	if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	f, _, msgs, _ := readUntilReply(t, c)
	var n int64
	for _, k := range replyCounts(f.Reply) {
		n += k
	}
	if n != events {
		t.Errorf("the first reply holds %d events, want all %d", n, events)
	}
	for _, m := range msgs {
		if m["type"] == "live" {
			t.Errorf("a small build sent %v", m)
		}
	}
	if len(msgs) == 0 || msgs[len(msgs)-1]["type"] != "ready" {
		t.Errorf("messages before the reply: %v, want ready last", msgs)
	}
}
