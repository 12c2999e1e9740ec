package triggers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/eddy-run/eddy/store"
)

// storedAgrees checks that the scanned snapshots of a commit's stored
// changes give the CEL values (or errors) of decoding them with
// encoding/json, for entity and before; it returns whether the text was
// scanned rather than decoded.
func storedAgrees(t *testing.T, row store.Row, changes []byte) (scanned bool) {
	t.Helper()
	raw := store.RawCommit{Row: row, Changes: changes}
	want := &vars{in: Subject{Row: &raw.Row}}
	want.decodeRaw(&raw)
	got := newVars(SubjectOfRaw(&raw))
	for _, s := range []struct {
		name string
		snap snap
	}{{"entity", snapAfter}, {"before", snapBefore}} {
		w, g := celDump(want.record(s.name, s.snap)), celDump(got.record(s.name, s.snap))
		if g != w {
			t.Fatalf("%s of %q (row %s/%s):\n scanned %s\n decoded %s", s.name, changes, row.Type, row.EntityID, g, w)
		}
	}
	programsAgree(t, raw)
	return got.stored
}

// propertyReads are `when`s that read a snapshot's properties every way a
// CEL map is read: a first lookup (which a stored snapshot answers by
// scanning its text), a second, membership, indexing, size, equality,
// iteration and conversion.
var propertyReads = func() []*Program {
	var out []*Program
	for _, src := range []string{
		`has(entity.properties.n)`,
		`entity.properties.n == entity.properties.n`,
		`entity.properties.title == "row 1" || entity.properties.n > 0.0`,
		`'title' in entity.properties`,
		`entity.properties['é'] != null`,
		`entity.properties['a<b'] == before.properties['a<b']`,
		`size(entity.properties) > 1`,
		`entity.properties == before.properties`,
		`entity.properties.exists(k, k == 'n')`,
		`has(entity.properties.n.title)`,
		`type(entity.properties) == map && dyn(entity.properties) != {}`,
		`string(entity.properties.title) != ''`,
	} {
		p, err := Compile("when", src)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", src, err))
		}
		out = append(out, p)
	}
	return out
}()

// programsAgree checks that every propertyReads program judges the
// commit's scanned snapshots as it judges them decoded by encoding/json:
// the same stance and the same error.
func programsAgree(t *testing.T, raw store.RawCommit) {
	t.Helper()
	for _, p := range propertyReads {
		want := &vars{in: Subject{Row: &raw.Row}}
		want.decodeRaw(&raw)
		w, g := p.eval(want), p.eval(newVars(SubjectOfRaw(&raw)))
		if g.Stance != w.Stance || fmt.Sprint(g.Err) != fmt.Sprint(w.Err) {
			t.Fatalf("%s on %q:\n scanned %v %v\n decoded %v %v", p, raw.Changes, g.Stance, g.Err, w.Stance, w.Err)
		}
	}
}

// celDump prints a CEL value with its types, map keys sorted.
func celDump(v ref.Val) string {
	switch v := v.(type) {
	case *types.Err:
		return "error(" + v.Error() + ")"
	case traits.Mapper:
		var parts []string
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			parts = append(parts, celDump(k)+":"+celDump(v.Get(k)))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	case traits.Lister:
		var parts []string
		for it := v.Iterator(); it.HasNext() == types.True; {
			parts = append(parts, celDump(it.Next()))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprintf("%s(%#v)", v.Type().TypeName(), v.Value())
}

// randomChanges returns a random commit's row and stored changes, in the
// form the store writes them (encoding/json's bytes).
func randomChanges(rng *rand.Rand) (store.Row, []byte) {
	row := store.Row{Seq: 9, Op: "put", Type: pick(rng, []string{"task", "note", ""}), EntityID: pick(rng, []string{"e1", "e2", ""})}
	changes := make([]store.Change, rng.IntN(4))
	for i := range changes {
		ch := &changes[i]
		ch.Ordinal, ch.Kind, ch.Version = i, pick(rng, []string{"created", "updated", "deleted"}), rng.Int64N(1<<40)
		ch.Type, ch.ID = pick(rng, []string{"task", "note", "t\u00e9", "<a>"}), pick(rng, []string{"e1", "e2", "e\"3"})
		ch.ConflictGroups = []string{}
		if rng.IntN(3) > 0 {
			ch.After = randomRecord(rng, ch.Type, ch.ID)
		}
		if rng.IntN(2) > 0 {
			ch.Before = randomRecord(rng, ch.Type, ch.ID)
		}
	}
	b, err := json.Marshal(changes)
	if err != nil {
		panic(err)
	}
	return row, b
}

func randomRecord(rng *rand.Rand, typ, id string) *store.Record {
	at := time.Date(2026, 1, 2, 3, 4, 5, rng.IntN(1000)*1000, time.UTC)
	r := &store.Record{Type: typ, ID: id, Version: rng.Int64N(1000), Links: []store.Link{}, CreatedAt: at, UpdatedAt: at}
	for range rng.IntN(3) {
		r.Links = append(r.Links, store.Link{Rel: pick(rng, []string{"owner", "in"}), Target: store.EntityKey{Type: "user", ID: pick(rng, []string{"u1", "u\u2028"})}})
	}
	p, err := json.Marshal(randomJSON(rng, 3))
	if err != nil {
		panic(err)
	}
	if rng.IntN(5) > 0 {
		r.Properties = p
	}
	return r
}

// randomJSON returns a random value of what JSON holds.
func randomJSON(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case k == 0 && depth > 0:
		l := []any{}
		for range rng.IntN(3) {
			l = append(l, randomJSON(rng, depth-1))
		}
		return l
	case k <= 2 && depth > 0:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[pick(rng, []string{"n", "title", "é", "a<b", "\x01", "k\\"})] = randomJSON(rng, depth-1)
		}
		return m
	case k == 3:
		return pick(rng, []string{"", "row 1", "tab\there", "\u2028", "😀", "a&b", `q"`})
	case k == 4:
		return pick(rng, []any{true, false, nil})
	case k == 5:
		return rng.NormFloat64() * 1e6
	}
	return rng.IntN(2000) - 1000
}

// mutate returns b with one random edit: text the store never writes,
// valid or not.
func mutate(rng *rand.Rand, b []byte) []byte {
	edits := []func([]byte) []byte{
		func(b []byte) []byte { return insertAt(rng, b, pick(rng, []string{" ", "\n", "\t"})) },
		func(b []byte) []byte {
			return insertAt(rng, b, pick(rng, []string{`"`, ",", "}", "]", "{", "null", "1e400", "\xff", `\u00`}))
		},
		func(b []byte) []byte { return b[:rng.IntN(len(b)+1)] },
		func(b []byte) []byte {
			from := pick(rng, []string{`"type"`, `"id"`, `"after"`, `"version"`, `"createdAt"`, `"links"`, `"rel"`, `"properties"`, `"n"`, `"ordinal"`, `"target"`, `"conflictGroups"`})
			to := pick(rng, []string{`"Type"`, `"ID"`, `"x"`, `"after":null,"after"`, `"version":1,"version"`, `"type":"a","type"`, `"n":1,"n"`, `"type\u0000"`, `"\u0074ype"`})
			return []byte(strings.Replace(string(b), from, to, 1))
		},
		func(b []byte) []byte {
			from := pick(rng, []string{`"2026-01-02T03:04:05`, `:0,`, `:1`, `"e1"`, `[]`, `{"type"`, `"task"`, `null`, `:[`, `true`})
			to := pick(rng, []string{`"2026-13-02T03:04:05`, `:0.5,`, `:"1"`, `null`, `{}`, `1`, `"t\u0061sk"`, `[null]`, `:99999999999999999999`, `"x"`, `1.0`, `-0`})
			return []byte(strings.Replace(string(b), from, to, 1))
		},
	}
	return edits[rng.IntN(len(edits))](slices.Clone(b))
}

func insertAt(rng *rand.Rand, b []byte, s string) []byte {
	i := rng.IntN(len(b) + 1)
	return slices.Concat(b[:i], []byte(s), b[i:])
}

// TestStoredSnapshotsAgree: over random commits in stored form (all
// scanned) and random edits of them (scanned or decoded), entity and
// before have the values and errors encoding/json's decoding gives.
func TestStoredSnapshotsAgree(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 15))
	scanned, edited := 0, 0
	for range 4000 {
		row, b := randomChanges(rng)
		if !storedAgrees(t, row, b) {
			t.Fatalf("stored form %s was not scanned", b)
		}
		for range 1 + rng.IntN(3) {
			b = mutate(rng, b)
		}
		if storedAgrees(t, row, b) {
			scanned++
		}
		edited++
	}
	if scanned == 0 || scanned == edited {
		t.Errorf("%d of %d edited texts scanned: the edits test one path only", scanned, edited)
	}
}

// TestStoredSnapshotsEdges: texts at the edges of the stored form.
func TestStoredSnapshotsEdges(t *testing.T) {
	t.Parallel()
	row := store.Row{Type: "task", EntityID: "e1"}
	rec := `{"type":"task","id":"e1","version":3,"properties":{"n":1},"links":[],"createdAt":"2026-01-02T03:04:05Z","updatedAt":null}`
	for text, scanned := range map[string]bool{
		`[]`:    true,
		` [ ] `: true,
		`null`:  false,
		``:      false,
		`[{}]`:  true,
		`[{"type":"note","id":"e1","after":` + rec + `},{"type":"task","id":"e1","before":` + rec + `}]`: true,
		`[{"type":"ta\u0073k","id":"e1","after":` + rec + `}]`:                                           true,
		`[{"after":{"properties":null,"links":null}}]`:                                                   true,
		`[{"after":{"properties":"s"}}]`:                                                                 true,
		`[{"after":{"properties":{"a":1,"a":2}}}]`:                                                       false,
		`[{"after":{"properties":{"n":1e400}}}]`:                                                         false,
		`[{"after":{"properties":{"n":1e300,"m":-0.0,"s":"\ud83d\ude00\u2028\/"}}}]`:                     true,
		`[{"after":{"properties":{"s":"\ud800"}}}]`:                                                      false,
		`[{"after":{"version":1.5}}]`:                                                                    false,
		`[{"after":{"version":"1"}}]`:                                                                    false,
		`[{"after":{"createdAt":"2026-01-02"}}]`:                                                         false,
		`[{"after":{"createdAt":1}}]`:                                                                    false,
		`[{"after":{"links":[{"rel":"r","target":{"type":"u","id":"1"}}]}}]`:                             true,
		`[{"after":{"links":[{"target":null}]}}]`:                                                        false,
		`[{"after":{"Type":"x"}}]`:                                                                       false,
		`[{"after":{"kind":"x"}}]`:                                                                       false,
		`[{"after":[]}]`:                                                                                 false,
		`[{"conflictGroups":null,"after":{}}]`:                                                           true,
		`[{"conflictGroups":[1]}]`:                                                                       false,
		`[{"ordinal":"0"}]`:                                                                              false,
		`[{"ordinal":0}] x`:                                                                              false,
		`[null]`:                                                                                         false,
		`[{"after":{"properties":{"s":"` + "\xff" + `"}}}]`:                                              false,
		`[{"after":{"properties":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}}]`: false,
		`[{"after":{"properties":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}}]`: true,
	} {
		if got := storedAgrees(t, row, []byte(text)); got != scanned {
			t.Errorf("%.80s: scanned %v, want %v", text, got, scanned)
		}
	}
}

// FuzzStoredSnapshots: scanned snapshots agree with encoding/json's
// decoding on any text.
func FuzzStoredSnapshots(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 20 {
		row, b := randomChanges(rng)
		f.Add(row.Type, row.EntityID, b)
		f.Add(row.Type, row.EntityID, mutate(rng, b))
	}
	f.Fuzz(func(t *testing.T, typ, id string, changes []byte) {
		storedAgrees(t, store.Row{Type: typ, EntityID: id}, changes)
	})
}
