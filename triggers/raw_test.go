package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// rawOf returns the commit of in (its primary change from Entity and
// Before, plus another entity's change first) as a store.RawCommit.
func rawOf(t *testing.T, in Subject) store.RawCommit {
	t.Helper()
	c := store.Commit{Row: *in.Row, Changes: []store.Change{
		{Ordinal: 0, Kind: "updated", Type: "other", ID: "o1", Version: 1, After: &store.Record{Type: "other", ID: "o1", Properties: json.RawMessage(`{"n":99}`)}},
		{Ordinal: 1, Kind: "updated", Type: in.Row.Type, ID: in.Row.EntityID, Version: in.Row.Seq, Before: in.Before, After: in.Entity},
	}}
	changes, err := json.Marshal(c.Changes)
	if err != nil {
		t.Fatal(err)
	}
	return store.RawCommit{Row: c.Row, Changes: changes, Provenance: json.RawMessage(`{"actor":"owner"}`)}
}

// TestSubjectOfRaw: a raw commit's Subject judges as SubjectOf of the decoded
// commit, through Eval and through the match index, for programs over
// row, entity and before.
func TestSubjectOfRaw(t *testing.T) {
	t.Parallel()
	in := testInput()
	raw := rawOf(t, in)
	dec, err := raw.Decode()
	if err != nil {
		t.Fatal(err)
	}
	srcs := []string{
		`row.type == 'task'`,
		`entity.properties.status == 'done'`,
		`entity.links[0].target.id == 'u1'`,
		`before.properties.n == 2 && entity.properties.n == 3`,
		`entity.properties.missing == 1`,
		`entity.properties.n % 2 == 1`,
		`entity.version == 42 && before.version == 7`,
	}
	var ts []*Trigger
	for i, src := range srcs {
		p, err := Compile("when", src)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Eval(SubjectOf(&dec))
		got, _ := p.Eval(SubjectOfRaw(&raw))
		if got.Stance != want.Stance || fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
			t.Errorf("%s: raw %+v, decoded %+v", src, got, want)
		}
		def, _ := json.Marshal(map[string]string{"when": src})
		ts = append(ts, mustTrigger(t, fmt.Sprintf("t%d", i), string(def)))
	}
	x := NewIndex(ts)
	if got, want := x.Match(SubjectOfRaw(&raw)), x.Match(SubjectOf(&dec)); !sameResults(got, want) {
		t.Errorf("index: raw %+v, decoded %+v", got, want)
	}
}

func sameResults(a, b []Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Trigger != b[i].Trigger || a[i].Stance != b[i].Stance || fmt.Sprint(a[i].Err) != fmt.Sprint(b[i].Err) {
			return false
		}
	}
	return true
}

// TestSubjectOfRawLazy: a raw commit's changes are decoded only for a
// program that reads entity or before; changes that do not decode make
// those reads errors wrapping ErrBadInput, and leave programs over row
// alone.
func TestSubjectOfRawLazy(t *testing.T) {
	t.Parallel()
	in := testInput()
	raw := store.RawCommit{Row: *in.Row, Changes: json.RawMessage(`[{"type":`)}
	for src, want := range map[string]Stance{
		`row.type == 'task'`:              StanceMatched,
		`entity.id == 't1'`:               StanceError,
		`before == null`:                  StanceError,
		`row.op == 'put' && entity.n > 1`: StanceNotMatched, // false before entity is read
	} {
		p, err := Compile("when", src)
		if err != nil {
			t.Fatal(err)
		}
		o, err := p.Eval(SubjectOfRaw(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if o.Stance != want || (want == StanceError && !errors.Is(o.Err, ErrBadInput)) {
			t.Errorf("%s: %+v, want %s", src, o, want)
		}
	}
}
