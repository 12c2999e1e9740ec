package watch

import (
	"runtime"
	"testing"
)

// TestFanOutOverWorkers: with more watchers than one fan-out worker
// takes, split among several workers that take them fanChunk at a time,
// every watcher gets every row its filter selects, once and in order
// (a filtered one a bookmark for the row it skips). It
// is not parallel: it raises GOMAXPROCS so that several workers run on
// any machine.
func TestFanOutOverWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	n := 3*fanChunk + 5 // four workers, the last chunk short
	e := newEnv(t, drivers[0].open(t), Options{MaxStreams: n, MaxStreamsPerKey: n})
	clients := make([]*client, n)
	for i := range clients {
		query := ""
		if i%2 == 1 {
			query = "types=task"
		}
		clients[i] = e.open(query, nil)
		if f := clients[i].must(); f.Bookmark == nil || *f.Bookmark != 0 {
			t.Fatalf("stream %d: first frame %s, want bookmark 0", i, f.Raw)
		}
	}
	waitWatchers(t, e.hub, n)
	e.write("note", 1)
	e.write("task", 1)
	for i, c := range clients {
		want := []int64{1, 2}
		if i%2 == 1 {
			want = want[1:] // the note is not theirs
		}
		for _, seq := range want {
			f := c.must()
			for f.Bookmark != nil && *f.Bookmark < seq { // a filtered stream's progress
				f = c.must()
			}
			if f.Seq == nil || *f.Seq != seq {
				t.Fatalf("stream %d: frame %s, want seq %d", i, f.Raw, seq)
			}
		}
	}
}
