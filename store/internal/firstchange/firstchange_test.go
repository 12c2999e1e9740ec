package firstchange

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// commit is one commit of a fake log: the entities it names and the
// changes it holds.
type commit struct {
	names   []store.EntityKey
	changes []store.Change
}

// fakeQuery answers probes from log (seq = index + 1) as a driver's query
// would: the first commit after a probe's After naming its key.
func fakeQuery(t *testing.T, log []commit, rounds *[][]Probe) Query {
	t.Helper()
	return func(probes []Probe) ([]Hit, error) {
		*rounds = append(*rounds, probes)
		var hits []Hit
		for i, p := range probes {
			for seq := p.After + 1; seq <= int64(len(log)); seq++ {
				c := log[seq-1]
				if !containsKey(c.names, p.Key) {
					continue
				}
				text, err := rowcodec.EncodeChanges(c.changes)
				if err != nil {
					t.Fatal(err)
				}
				hits = append(hits, Hit{Probe: int64(i), Seq: seq, Changes: text})
				break
			}
		}
		return hits, nil
	}
}

func containsKey(keys []store.EntityKey, k store.EntityKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func TestFind(t *testing.T) {
	t.Parallel()
	a, b, c := store.EntityKey{Type: "t", ID: "a"}, store.EntityKey{Type: "t", ID: "b"}, store.EntityKey{Type: "t", ID: "c"}
	ch := func(k store.EntityKey, v int64) store.Change {
		return store.Change{Kind: store.ChangeUpdated, Type: k.Type, ID: k.ID, Version: v, ConflictGroups: []string{}}
	}
	log := []commit{
		{names: []store.EntityKey{a}, changes: []store.Change{ch(a, 1)}},
		{names: []store.EntityKey{a, b}, changes: []store.Change{ch(a, 2)}}, // names b, changes only a
		{names: []store.EntityKey{b}, changes: []store.Change{ch(b, 3)}},
	}
	tests := []struct {
		name       string
		keys       []store.EntityKey
		after      int64
		want       map[store.EntityKey]store.Change
		wantRounds []int // probes per round
	}{
		{"no keys", nil, 0, map[store.EntityKey]store.Change{}, nil},
		{"first of each", []store.EntityKey{a, b, a}, 0, map[store.EntityKey]store.Change{a: ch(a, 1), b: ch(b, 3)}, []int{2, 1}},
		{"after", []store.EntityKey{a}, 1, map[store.EntityKey]store.Change{a: ch(a, 2)}, []int{1}},
		{"none", []store.EntityKey{c, b}, 3, map[store.EntityKey]store.Change{}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rounds [][]Probe
			got, err := Find(tc.keys, tc.after, fakeQuery(t, log, &rounds))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Find = %v, %v; want %v", got, err, tc.want)
			}
			var sizes []int
			for _, r := range rounds {
				sizes = append(sizes, len(r))
			}
			if !reflect.DeepEqual(sizes, tc.wantRounds) {
				t.Fatalf("Find ran rounds %v, want sizes %v", rounds, tc.wantRounds)
			}
		})
	}
}

func TestFindErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	keys := []store.EntityKey{{Type: "t", ID: "a"}}
	tests := []struct {
		name    string
		query   Query
		wantErr string
	}{
		{"query", func([]Probe) ([]Hit, error) { return nil, boom }, "boom"},
		{"index high", func([]Probe) ([]Hit, error) { return []Hit{{Probe: 1, Seq: 1, Changes: "[]"}}, nil }, "probe index 1 out of range"},
		{"index low", func([]Probe) ([]Hit, error) { return []Hit{{Probe: -1, Seq: 1, Changes: "[]"}}, nil }, "probe index -1 out of range"},
		{"bad changes", func([]Probe) ([]Hit, error) { return []Hit{{Probe: 0, Seq: 7, Changes: "{"}}, nil }, "seq 7: decode changes: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(keys, 0, tc.query)
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || got != nil {
				t.Fatalf("Find = %v, %v; want nil and an error starting %q", got, err, tc.wantErr)
			}
		})
	}
}
