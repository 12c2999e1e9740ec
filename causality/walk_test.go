package causality

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// fakeLog is a Reader over commits held in memory, pruned through
// horizon.
type fakeLog struct {
	horizon int64
	commits map[int64]store.Commit
	reads   int
}

func (f *fakeLog) SpaceGet(_ context.Context, id string) (store.Space, error) {
	return store.Space{ID: id, Horizon: f.horizon}, nil
}

func (f *fakeLog) Commits(_ context.Context, p store.CommitsParams) ([]store.Commit, error) {
	f.reads++
	for seq := p.After + 1; seq <= p.After+64; seq++ {
		if c, ok := f.commits[seq]; ok && seq > f.horizon {
			return []store.Commit{c}, nil
		}
	}
	return nil, nil
}

// chainLog holds rows 1..n: row 1 an API write, each next row caused by
// the previous one at one more depth; then row n+1, an unrelated API
// write.
func chainLog(n int) *fakeLog {
	f := &fakeLog{commits: map[int64]store.Commit{}}
	for seq := int64(1); seq <= int64(n); seq++ {
		p := store.Provenance{Actor: "owner", Via: "api"}
		if seq > 1 {
			p = Effect{Trigger: "t", ID: "d" + string(rune('a'+seq)), Cause: Cause{Seq: seq - 1, Depth: int(seq - 2)}}.Provenance("", "")
		}
		f.commits[seq] = store.Commit{Row: store.Row{Seq: seq, Op: "patch"}, Provenance: p}
	}
	f.commits[int64(n)+1] = store.Commit{Row: store.Row{Seq: int64(n) + 1, Op: "put"}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
	return f
}

func TestWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		log     *fakeLog
		seq     int64
		want    []Link
		wantErr any  // a pointer for errors.As
		anyErr  bool // some untyped error
	}{
		{"root", chainLog(3), 1, []Link{{Seq: 1}}, nil, false},
		{"unrelated write", chainLog(3), 4, []Link{{Seq: 4}}, nil, false},
		{"three deep", chainLog(3), 3, []Link{
			{Seq: 3, Depth: 2, Trigger: "t", Delivery: "dd"},
			{Seq: 2, Depth: 1, Trigger: "t", Delivery: "dc"},
			{Seq: 1},
		}, nil, false},
		{"pruned cause", withHorizon(chainLog(3), 1), 3, []Link{
			{Seq: 3, Depth: 2, Trigger: "t", Delivery: "dd"},
			{Seq: 2, Depth: 1, Trigger: "t", Delivery: "dc"},
			{Seq: 1, Pruned: true},
		}, nil, false},
		{"pruned row", withHorizon(chainLog(3), 3), 3, nil, new(*changelog.HistoryUnavailableError), false},
		{"longest chain", chainLog(MaxDepth + 1), MaxDepth + 1, nil, nil, false},
		{"too long", chainLog(MaxDepth + 2), MaxDepth + 2, nil, new(*MalformedError), false},
		{"cause not smaller", corrupt(chainLog(3), 2, 2), 3, nil, new(*MalformedError), false},
		{"cause larger", corrupt(chainLog(3), 2, 3), 3, nil, new(*MalformedError), false},
		{"missing above horizon", missing(chainLog(3), 2), 3, nil, nil, true},
	}
	for _, tt := range tests {
		ch, err := Walk(context.Background(), tt.log, "s", tt.seq, MaxDepth)
		switch {
		case tt.anyErr:
			if err == nil {
				t.Errorf("%s: Walk succeeded", tt.name)
			}
		case tt.wantErr != nil:
			if !errors.As(err, tt.wantErr) {
				t.Errorf("%s: err = %v, want %T", tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == nil:
			if len(ch.Links) != int(tt.seq) || ch.Links[len(ch.Links)-1].Depth != 0 || ch.Links[0].Depth != int(tt.seq)-1 {
				t.Errorf("%s: chain of %d links from depth %d", tt.name, len(ch.Links), ch.Links[0].Depth)
			}
		case !reflect.DeepEqual(ch.Links, tt.want):
			t.Errorf("%s: chain = %+v, want %+v", tt.name, ch.Links, tt.want)
		case ch.Seq != tt.seq || ch.Start.Seq != tt.seq:
			t.Errorf("%s: chain seq %d, start %d; want %d", tt.name, ch.Seq, ch.Start.Seq, tt.seq)
		}
	}
}

func withHorizon(f *fakeLog, h int64) *fakeLog { f.horizon = h; return f }

func corrupt(f *fakeLog, seq, causedBy int64) *fakeLog {
	c := f.commits[seq]
	c.Provenance.CausedBy = causedBy
	f.commits[seq] = c
	return f
}

func missing(f *fakeLog, seq int64) *fakeLog { delete(f.commits, seq); return f }

func TestLinkJSON(t *testing.T) {
	t.Parallel()
	ch := Chain{Seq: 9, Links: []Link{
		{Seq: 9, Depth: 2, Trigger: "t", Delivery: "d2"},
		{Seq: 5, Depth: 1, Trigger: "t", Delivery: "d1"},
		{Seq: 3},
		{Seq: 1, Pruned: true},
	}, Root: 3, RootRows: 2, Cap: 16, Budget: 1000}
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":9,"chain":[{"seq":9,"depth":2,"trigger":"t","delivery":"d2"},{"seq":5,"depth":1,"trigger":"t","delivery":"d1"},{"seq":3,"depth":0},{"seq":1,"pruned":true}],"root":3,"rootRows":2,"cap":16,"budget":1000}`
	if string(b) != want {
		t.Fatalf("json = %s\nwant   %s", b, want)
	}
	var back Chain
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Links, ch.Links) {
		t.Fatalf("round trip = %+v, %v", back.Links, err)
	}
}

// counts is a store.RootCountStore over counters held in memory.
type counts map[int64]store.RootCount

func (c counts) RootCounts(_ context.Context, _ string, roots []int64) (map[int64]store.RootCount, error) {
	out := map[int64]store.RootCount{}
	for _, r := range roots {
		if v, ok := c[r]; ok {
			out[r] = v
		}
	}
	return out, nil
}

func TestTally(t *testing.T) {
	t.Parallel()
	ch, err := Walk(context.Background(), chainLog(3), "s", 3, MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Root != RootOf(&ch.Start) || ch.Cap != DefaultCap || ch.Budget != DefaultBudget {
		t.Fatalf("walk = root %d cap %d budget %d", ch.Root, ch.Cap, ch.Budget)
	}
	if err := ch.Tally(context.Background(), counts{ch.Root: {Root: ch.Root, Rows: 7}}, "s", 8, 50); err != nil {
		t.Fatal(err)
	}
	if ch.RootRows != 7 || ch.Cap != 8 || ch.Budget != 50 {
		t.Fatalf("tally = rows %d cap %d budget %d, want 7, 8, 50", ch.RootRows, ch.Cap, ch.Budget)
	}
	if err := ch.Tally(context.Background(), counts{}, "s", 0, 0); err != nil || ch.RootRows != 0 || ch.Budget != DefaultBudget {
		t.Fatalf("tally of a root that caused nothing = %+v, %v", ch, err)
	}
}
