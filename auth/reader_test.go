package auth

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// policyStore answers SpaceGet and TypeDefList from memory and counts
// the definition reads.
type policyStore struct {
	store.Store
	mu      sync.Mutex
	version int64
	defs    []store.TypeDef
	lists   int
}

func (s *policyStore) SpaceGet(_ context.Context, id string) (store.Space, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "s" {
		return store.Space{}, store.ErrNotFound
	}
	return store.Space{ID: id, SchemaVersion: s.version}, nil
}

func (s *policyStore) TypeDefList(context.Context, string) ([]store.TypeDef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return append([]store.TypeDef(nil), s.defs...), nil
}

func (s *policyStore) put(typ, def string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	for i := range s.defs {
		if s.defs[i].Type == typ {
			s.defs[i] = store.TypeDef{Type: typ, Def: json.RawMessage(def), UpdatedAt: time.Now()}
			return
		}
	}
	s.defs = append(s.defs, store.TypeDef{Type: typ, Def: json.RawMessage(def), UpdatedAt: time.Now()})
}

func doc(id, props string) *store.Record {
	return &store.Record{Type: "doc", ID: id, Version: 1, Properties: json.RawMessage(props)}
}

func mustPolicy(t *testing.T, defs map[string]string) *Policy {
	t.Helper()
	var tds []store.TypeDef
	for typ, d := range defs {
		tds = append(tds, store.TypeDef{Type: typ, Def: json.RawMessage(d)})
	}
	p, err := NewPolicy("s", 1, tds)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReaderRecords(t *testing.T) {
	t.Parallel()
	pol := mustPolicy(t, map[string]string{
		"doc":  `{"access": {"read": "user in entity.properties.members"}}`,
		"note": `{"strict": false}`,
	})
	admin := NewReader(&Principal{Role: RoleAdmin}, pol)
	ann := NewReader(&Principal{Role: RoleReader, User: "ann"}, pol)
	annNotes := NewReader(&Principal{Role: RoleReader, User: "ann", Types: []string{"note"}}, pol)
	service := NewReader(&Principal{Role: RoleReader}, pol)
	shared, private := doc("d1", `{"members":["ann","bob"]}`), doc("d2", `{"members":["bob"]}`)
	note := &store.Record{Type: "note", ID: "n1"}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"admin reads a private doc", admin.CanReadRecord(private), true},
		{"member reads", ann.CanReadRecord(shared), true},
		{"non-member does not", ann.CanReadRecord(private), false},
		{"no user: rule judged for \"\"", service.CanReadRecord(shared), false},
		{"type without rule", ann.CanReadRecord(note), true},
		{"allow-list outranks the rule", annNotes.CanReadRecord(shared), false},
		{"allow-list admits its type", annNotes.CanReadRecord(note), true},
		{"no properties: the rule errs and denies", ann.CanReadRecord(doc("d3", ``)), false},
		{"CanReadType ignores the rule", ann.CanReadType("doc"), true},
		{"CanReadType allow-list", annNotes.CanReadType("doc"), false},
		{"CanReadTypes all allowed", annNotes.CanReadTypes([]string{"note"}), true},
		{"CanReadTypes one refused", annNotes.CanReadTypes([]string{"note", "doc"}), false},
		{"CanReadEveryType with allow-list", annNotes.CanReadEveryType(), false},
		{"CanReadEveryType without", ann.CanReadEveryType(), true},
		{"Unlimited on a ruled type", ann.Unlimited([]string{"doc"}), false},
		{"Unlimited on a plain type", ann.Unlimited([]string{"note"}), true},
		{"Unlimited outside the allow-list", annNotes.Unlimited([]string{"task"}), false},
		{"admin Unlimited", admin.Unlimited([]string{"doc"}), true},
		{"UnlimitedEverywhere with rules", ann.UnlimitedEverywhere(), false},
		{"UnlimitedEverywhere without rules", NewReader(&Principal{Role: RoleReader}, nil).UnlimitedEverywhere(), true},
		{"definition on allowed types", annNotes.CanSeeDefinition(Scope{Types: []string{"note"}}), true},
		{"definition touching another type", annNotes.CanSeeDefinition(Scope{Types: []string{"note", "doc"}}), false},
		{"definition on every type, allow-list", annNotes.CanSeeDefinition(Scope{Every: true}), false},
		{"definition on every type, no allow-list", ann.CanSeeDefinition(Scope{Every: true}), true},
		{"definition on a ruled type", ann.CanSeeDefinition(Scope{Types: []string{"doc"}}), true},
		{"deliveries on a ruled type", ann.CanSeeDeliveries(Scope{Types: []string{"doc"}}), false},
		{"deliveries on a plain type", annNotes.CanSeeDeliveries(Scope{Types: []string{"note"}}), true},
		{"deliveries on every type under rules", ann.CanSeeDeliveries(Scope{Every: true}), false},
		{"admin deliveries on every type", admin.CanSeeDeliveries(Scope{Every: true}), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestReaderCommits(t *testing.T) {
	t.Parallel()
	pol := mustPolicy(t, map[string]string{"doc": `{"access": {"read": "user in entity.properties.members"}}`})
	ann := NewReader(&Principal{Role: RoleReader, User: "ann"}, pol)
	onlyA := NewReader(&Principal{Role: RoleReader, Types: []string{"a"}}, nil)
	shared, private := doc("d1", `{"members":["ann"]}`), doc("d2", `{"members":["bob"]}`)
	a1, b1 := &store.Record{Type: "a", ID: "1"}, &store.Record{Type: "b", ID: "1"}
	commit := func(typ, op string, changes ...store.Change) *store.Commit {
		return &store.Commit{Row: store.Row{Type: typ, Op: op}, Changes: changes}
	}
	tests := []struct {
		name string
		r    *Reader
		c    *store.Commit
		want bool
	}{
		{"readable put", ann, commit("doc", "put", store.Change{After: shared}), true},
		{"unreadable put", ann, commit("doc", "put", store.Change{After: private}), false},
		{"delete judged on before", ann, commit("doc", "delete", store.Change{Before: shared}), true},
		{"lost sight: judged on after", ann, commit("doc", "patch", store.Change{Before: shared, After: private}), false},
		{"gained sight", ann, commit("doc", "patch", store.Change{Before: private, After: shared}), true},
		{"merge of an unreadable entity", ann, commit("doc", "merge", store.Change{After: shared}, store.Change{Before: private}), false},
		{"merge across types", onlyA, commit("a", "merge", store.Change{After: a1}, store.Change{Before: b1}), false},
		{"split into another type", onlyA, commit("a", "split", store.Change{After: a1}, store.Change{After: b1}), false},
		{"merge within the allow-list", onlyA, commit("a", "merge", store.Change{After: a1}, store.Change{Before: a1}), true},
		{"engine row outside the allow-list", onlyA, commit("eddy.trigger", "fire"), false},
		{"engine row without allow-list", ann, commit("eddy.trigger", "fire"), true},
		{"park commit under rules", ann, commit("eddy.delivery", "park"), false},
		{"park commit without rules", onlyA, commit("a", "park"), true},
	}
	for _, tt := range tests {
		if got := tt.r.CanReadCommit(tt.c); got != tt.want {
			t.Errorf("%s: CanReadCommit = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReaderJudgeRow(t *testing.T) {
	t.Parallel()
	pol := mustPolicy(t, map[string]string{"doc": `{"access": {"read": "true"}}`})
	tests := []struct {
		name string
		r    *Reader
		row  store.Row
		want RowVerdict
	}{
		{"admin", NewReader(&Principal{Role: RoleAdmin}, pol), store.Row{Type: "doc", Op: "put"}, RowReadable},
		{"outside allow-list", NewReader(&Principal{Types: []string{"a"}}, pol), store.Row{Type: "b", Op: "put"}, RowHidden},
		{"ruled type", NewReader(&Principal{}, pol), store.Row{Type: "doc", Op: "put"}, RowNeedsCommit},
		{"plain type", NewReader(&Principal{}, pol), store.Row{Type: "a", Op: "put"}, RowReadable},
		{"merge under an allow-list", NewReader(&Principal{Types: []string{"a"}}, nil), store.Row{Type: "a", Op: "merge"}, RowNeedsCommit},
		{"split under rules", NewReader(&Principal{}, pol), store.Row{Type: "a", Op: "split"}, RowNeedsCommit},
		{"merge, nothing limits", NewReader(&Principal{}, nil), store.Row{Type: "a", Op: "merge"}, RowReadable},
		{"park row under rules", NewReader(&Principal{}, pol), store.Row{Type: "eddy.delivery", Op: "park"}, RowHidden},
		{"park row, no rules", NewReader(&Principal{}, nil), store.Row{Type: "eddy.delivery", Op: "park"}, RowReadable},
		{"park row, admin", NewReader(&Principal{Role: RoleAdmin}, pol), store.Row{Type: "eddy.delivery", Op: "park"}, RowReadable},
	}
	for _, tt := range tests {
		if got := tt.r.JudgeRow(&tt.row); got != tt.want {
			t.Errorf("%s: JudgeRow = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestPoliciesCachePerVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &policyStore{}
	st.put("doc", `{"access": {"read": "user == entity.properties.owner"}}`)
	ps := NewPolicies(st)
	p1, err := ps.For(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	rule := p1.Rule("doc")
	if rule == nil || p1.Version() != 1 {
		t.Fatalf("policy = %+v", p1)
	}
	if p2, _ := ps.For(ctx, "s"); p2 != p1 || st.lists != 1 {
		t.Errorf("the same version was rebuilt (%d definition reads)", st.lists)
	}
	st.put("note", `{}`) // another type changes: doc's rule is reused, not recompiled
	p3, err := ps.For(ctx, "s")
	if err != nil || p3 == p1 || p3.Rule("doc") != rule || p3.Rule("note") != nil {
		t.Fatalf("after a change: %+v, %v", p3, err)
	}
	st.put("doc", `{"access": {"read": "true"}}`)
	p4, _ := ps.For(ctx, "s")
	if p4.Rule("doc") == rule || p4.Rule("doc").String() != "true" || ps.Latest("s") != p4 {
		t.Errorf("a changed rule was not recompiled: %v", p4.Rule("doc"))
	}
	if _, err := ps.For(ctx, "missing"); err == nil {
		t.Errorf("For an unknown space succeeded")
	}
	r, err := ps.Reader(ctx, &Principal{User: "u"}, "s")
	if err != nil || r.Policy() != p4 || r.User() != "u" {
		t.Errorf("Reader = %+v, %v", r, err)
	}
	if sp, ok := r.Space(); !ok || sp.ID != "s" || sp.SchemaVersion != p4.Version() {
		t.Errorf("Reader.Space = %+v, %v: want the space its policy was found with", sp, ok)
	}
	if _, ok := NewReader(&Principal{}, p4).Space(); ok {
		t.Errorf("a reader made without reading the space has one")
	}
}

// BenchmarkCanReadRecord: judging a snapshot by an access rule against
// judging it by the allow-list alone (the ratio is the rule's cost).
func BenchmarkCanReadRecord(b *testing.B) {
	pol, err := NewPolicy("s", 1, []store.TypeDef{{Type: "doc", Def: json.RawMessage(`{"access": {"read": "user in entity.properties.members"}}`)}})
	if err != nil {
		b.Fatal(err)
	}
	rec := doc("d1", `{"members":["bob","ann"],"title":"a title","n":3}`)
	for _, bc := range []struct {
		name string
		r    *Reader
	}{
		{"allow-list", NewReader(&Principal{Role: RoleReader, User: "ann", Types: []string{"doc"}}, nil)},
		{"rule", NewReader(&Principal{Role: RoleReader, User: "ann", Types: []string{"doc"}}, pol)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if !bc.r.CanReadRecord(rec) {
					b.Fatal("not readable")
				}
			}
		})
	}
}
