package rowcodec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// The oracle tests hold the hand-written encoders to what Marshal
// (encoding/json) writes for the same values, on random inputs.

// oracleSnapshot is the stored form of a record built the slow way: a
// normalized copy for encoding/json.
func oracleSnapshot(r *store.Record) *store.Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Properties = json.RawMessage(RawText(c.Properties, "{}"))
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	c.CreatedAt, c.UpdatedAt = microUTC(c.CreatedAt), microUTC(c.UpdatedAt)
	c.Kind, c.GroupVersions = "", nil
	return &c
}

func oracleChanges(changes []store.Change) (string, error) {
	cs := make([]store.Change, len(changes))
	for i, ch := range changes {
		ch.Before, ch.After = oracleSnapshot(ch.Before), oracleSnapshot(ch.After)
		if ch.ConflictGroups == nil {
			ch.ConflictGroups = []string{}
		}
		cs[i] = ch
	}
	slices.SortStableFunc(cs, func(a, b store.Change) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	for i := 1; i < len(cs); i++ {
		if cs[i].Ordinal == cs[i-1].Ordinal {
			return "", fmt.Errorf("duplicate change ordinal %d", cs[i].Ordinal)
		}
	}
	return Marshal(cs)
}

// sameEncoding fails t unless both encoders succeeded with the same
// bytes or both failed.
func sameEncoding(t *testing.T, what, got string, gotErr error, want string, wantErr error) {
	t.Helper()
	if (gotErr != nil) != (wantErr != nil) || got != want {
		t.Fatalf("%s = %q, %v; encoding/json: %q, %v", what, got, gotErr, want, wantErr)
	}
}

// checkOracle compares every hand-written encoder with encoding/json on
// one commit and record.
func checkOracle(t *testing.T, c *store.Commit, r *store.Record) {
	t.Helper()
	got, err := EncodeChanges(c.Changes)
	want, wantErr := oracleChanges(c.Changes)
	sameEncoding(t, "EncodeChanges", got, err, want, wantErr)

	got, err = EncodeReceipt(c.Receipt)
	want, wantErr = Marshal(store.NormalizeReceipt(c.Receipt))
	sameEncoding(t, "EncodeReceipt", got, err, want, wantErr)
	got, err = MarshalReceipt(c.Receipt)
	want, wantErr = Marshal(c.Receipt)
	sameEncoding(t, "MarshalReceipt", got, err, want, wantErr)

	want, wantErr = Marshal(c.Provenance)
	sameEncoding(t, "EncodeProvenance", EncodeProvenance(c.Provenance), nil, want, wantErr)

	cols, err := EncodeRecord(r)
	links := r.Links
	if links == nil {
		links = []store.Link{}
	}
	want, wantErr = Marshal(links)
	sameEncoding(t, "EncodeRecord links", cols.Links, err, want, wantErr)
	want, wantErr = Marshal(r.GroupVersions)
	sameEncoding(t, "EncodeRecord group versions", cols.GroupVersions, err, want, wantErr)

	snap, err := EncodeSnapshot(r)
	want, wantErr = Marshal(oracleSnapshot(r))
	got = ""
	if snap != nil {
		got = *snap
	}
	sameEncoding(t, "EncodeSnapshot", got, err, want, wantErr)
}

// gen draws random values rich in what JSON encoders get wrong.
type gen struct{ r *rand.Rand }

var pieces = []string{"", "a", "note", "é", "日本", "\u2028", "\u2029", "\"", "\\", "<>&", "\x00", "\x1f", "\n\t\r",
	"\b\f", "\x7f", "\xff", "\xe2\x80", "\U0001F600", " ", "/"}

func (g gen) str() string {
	var b strings.Builder
	for range g.r.IntN(4) {
		b.WriteString(pieces[g.r.IntN(len(pieces))])
	}
	return b.String()
}

func (g gen) strs() []string {
	if g.r.IntN(4) == 0 {
		return nil
	}
	out := []string{}
	for range g.r.IntN(3) {
		out = append(out, g.str())
	}
	return out
}

var raws = []string{`{}`, `{"a":1}`, ` { "a" : [1, 2.5e3, "x\u00e9"] , "b":null } `, `"<&>"`, `[]`, `{"s":"\u2028 é \ud83d\ude00"}`,
	"{\"t\":\t\"x\"\n}", `{"a":`, `nope`}

func (g gen) raw() json.RawMessage {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return json.RawMessage{}
	}
	return json.RawMessage(raws[g.r.IntN(len(raws))])
}

func (g gen) time() time.Time {
	zones := []*time.Location{time.UTC, cest, time.FixedZone("W", -5*3600-1800)}
	sec := g.r.Int64N(4_000_000_000) - 500_000_000
	if g.r.IntN(20) == 0 {
		sec = 300_000_000_000 // year beyond 9999
	}
	return time.Unix(sec, g.r.Int64N(1e9)).In(zones[g.r.IntN(len(zones))])
}

func (g gen) record() *store.Record {
	if g.r.IntN(4) == 0 {
		return nil
	}
	r := &store.Record{Type: g.str(), ID: g.str(), Version: g.r.Int64N(1000) - 1, Kind: g.str(),
		Properties: g.raw(), CreatedAt: g.time(), UpdatedAt: g.time()}
	if g.r.IntN(3) > 0 {
		r.Links = []store.Link{}
		for range g.r.IntN(3) {
			r.Links = append(r.Links, store.Link{Rel: g.str(), Target: store.EntityKey{Type: g.str(), ID: g.str()}})
		}
	}
	if g.r.IntN(2) == 0 {
		r.GroupVersions = map[string]int64{}
		for range g.r.IntN(4) {
			r.GroupVersions[g.str()] = g.r.Int64() - g.r.Int64()
		}
	}
	return r
}

func (g gen) commit() *store.Commit {
	c := &store.Commit{}
	ordinals := g.r.Perm(4)
	if g.r.IntN(20) == 0 {
		ordinals[1] = ordinals[0]
	}
	for i := range g.r.IntN(4) {
		c.Changes = append(c.Changes, store.Change{Ordinal: ordinals[i], Kind: g.str(), Type: g.str(), ID: g.str(),
			Version: g.r.Int64N(9), Before: g.record(), After: g.record(), ConflictGroups: g.strs()})
	}
	c.Receipt = store.Receipt{MutationID: g.str(), Status: g.str(), Seq: g.r.Int64N(3), Version: g.r.Int64N(3),
		Accepted: g.strs(), Proposed: g.raw()}
	if g.r.IntN(3) > 0 {
		c.Receipt.Rejected = []store.RejectedProperty{}
		for range g.r.IntN(3) {
			c.Receipt.Rejected = append(c.Receipt.Rejected, store.RejectedProperty{Property: g.str(), Reason: g.str()})
		}
	}
	if g.r.IntN(2) == 0 {
		c.Receipt.Reason = &store.Reason{Code: g.str(), Message: g.str()}
	}
	c.Provenance = store.Provenance{Actor: g.str(), Via: g.str(), RequestID: g.str(), MutationID: g.str(),
		Trigger: g.str(), Delivery: g.str(), CausedBy: g.r.Int64N(3), Root: g.r.Int64N(3), Depth: g.r.IntN(3) - 1,
		Traceparent: g.str()}
	return c
}

func TestEncodersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(1, 2))}
	for range 5000 {
		r := g.record()
		if r == nil {
			r = &store.Record{}
		}
		checkOracle(t, g.commit(), r)
	}
}

func FuzzEncoders(f *testing.F) {
	f.Add("note", "e1", []byte(`{"n":1}`), int64(1767225600123456789), "rel", "api")
	f.Add("\u2028\xff", "\"\\", []byte(" [1, {\"a\" : \"<\"}] "), int64(-9_000_000_000_000_000_000), "\x00", "")
	f.Fuzz(func(t *testing.T, typ, id string, props []byte, nanos int64, rel, via string) {
		ts := time.Unix(0, nanos).In(cest)
		r := &store.Record{Type: typ, ID: id, Version: nanos % 1000, Properties: props, CreatedAt: ts, UpdatedAt: ts,
			Links: []store.Link{{Rel: rel, Target: store.EntityKey{Type: typ, ID: via}}}, GroupVersions: map[string]int64{rel: nanos, via: 1}}
		c := &store.Commit{
			Changes: []store.Change{{Ordinal: 1, Kind: rel, Type: typ, ID: id, Before: r, ConflictGroups: []string{via}},
				{Ordinal: 0, Type: via, ID: rel, After: r}},
			Receipt:    store.Receipt{MutationID: id, Status: via, Accepted: []string{rel}, Reason: &store.Reason{Code: typ, Message: rel}, Proposed: props},
			Provenance: store.Provenance{Actor: typ, Via: via, RequestID: id, Traceparent: rel, CausedBy: nanos},
		}
		checkOracle(t, c, r)
	})
}
