package views

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestPropertyAgreesWithDecode: a snapshot's property lookup answers
// what decoding the whole object answers, for every key, on random
// objects with escapes, duplicates, nesting, whitespace and bad bytes.
func TestPropertyAgreesWithDecode(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 9))
	keys := []string{`"p"`, `"q"`, `"p\u0071"`, `"\u0070"`, `"é"`, `"a b"`, `"x\"y"`}
	vals := []string{`1`, `-0.5e3`, `1E2`, `"a"`, `"a\"b"`, `"é"`, `"\u00e9"`, "\"\xff\"", `true`, `false`, `null`,
		`[1,"]",{"p":2}]`, `{"p":{"q":"}"}}`, `{}`, `[]`, `"\\"`, `12345678901234567890`}
	space := []string{"", " ", "\n\t"}
	for range 5000 {
		var b strings.Builder
		b.WriteString(pick(rng, space) + "{")
		n := rng.IntN(5)
		for i := range n {
			if i > 0 {
				b.WriteString(pick(rng, space) + ",")
			}
			b.WriteString(pick(rng, space) + pick(rng, keys) + pick(rng, space) + ":" + pick(rng, space) + pick(rng, vals))
		}
		b.WriteString(pick(rng, space) + "}")
		raw := b.String()
		if rng.IntN(20) == 0 {
			raw = raw[:len(raw)-1] // malformed
		}
		var all map[string]any
		decodes := json.Unmarshal([]byte(raw), &all) == nil
		s := newSnapshot(&store.Record{Type: "task", Properties: json.RawMessage(raw)})
		for _, k := range []string{"p", "q", "pq", "é", "a b", `x"y`, "zz"} {
			got, ok := s.property(k)
			want, wok := all[k]
			if !decodes {
				want, wok = nil, false
			}
			if ok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: property %q = %#v, %v; decoding says %#v, %v", raw, k, got, ok, want, wok)
			}
		}
	}
}
