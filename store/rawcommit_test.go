package store

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wantArrayLen is arrayLen's oracle: encoding/json's count of a valid
// array's elements (0 for any other valid value).
func wantArrayLen(t testing.TB, raw []byte) (int, bool) {
	t.Helper()
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	arr, _ := v.([]any)
	return len(arr), true
}

// arrayLenSeeds are the awkward texts: escapes before quotes, brackets
// and commas inside strings, nesting, whitespace, empty arrays.
var arrayLenSeeds = []string{
	`[]`, ` []`, `[ ]`, `[1]`, `[1,2,3]`, `["a,b","c"]`, `["\"",","]`, `["\\",1]`, `["\\\"]",2]`,
	`[{"a":[1,2,{"b":","}]},{"c":"]"}]`, `[[],[[]],{}]`, "[\n1 ,\t2\r]", `{"a":[1,2]}`, `"[1,2]"`, `null`, `7`,
	`[{"ordinal":0,"type":"task","id":"e1","after":{"properties":{"t":"x\\\\\"y,"}}}]`,
}

func TestArrayLen(t *testing.T) {
	t.Parallel()
	for _, s := range arrayLenSeeds {
		want, _ := wantArrayLen(t, []byte(s))
		if got := arrayLen([]byte(s)); got != want {
			t.Errorf("arrayLen(%s) = %d, want %d", s, got, want)
		}
	}
	// Random arrays of strings rich in quotes, backslashes and commas.
	rng := rand.New(rand.NewPCG(7, 9))
	alphabet := []string{`"`, `\`, `,`, `[`, `]`, `{`, `}`, `a`, ` `, `é`}
	for range 5000 {
		elems := make([]any, rng.IntN(5))
		for i := range elems {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			elems[i] = map[string]any{"k" + b.String(): []any{b.String(), i}}
		}
		raw, err := json.Marshal(elems)
		if err != nil {
			t.Fatal(err)
		}
		if got := arrayLen(raw); got != len(elems) {
			t.Fatalf("arrayLen(%s) = %d, want %d", raw, got, len(elems))
		}
	}
}

func FuzzArrayLen(f *testing.F) {
	for _, s := range arrayLenSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := arrayLen(raw)
		if want, valid := wantArrayLen(t, raw); valid && got != want {
			t.Fatalf("arrayLen(%q) = %d, want %d", raw, got, want)
		}
	})
}

// TestRawCommitAppendJSON: AppendJSON writes what json.Marshal writes for
// the same raw commit (HTML characters and U+2028/U+2029 escaped), with
// and without such characters anywhere in the commit.
func TestRawCommitAppendJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	strs := []string{"task", "e1", "<&>", "a>b", "x&y", "\u2028", "\u2029", "é", "plain"}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	for range 2000 {
		props, _ := json.Marshal(map[string]string{"t": pick()})
		c := RawCommit{
			Row: Row{Seq: rng.Int64N(1 << 40), Actor: pick(), Op: "put", EntityID: pick(), Type: pick(),
				Payload: json.RawMessage(`{"properties":{"t":"` + pick() + `"}}`)},
			// Stored JSON as an encoder without HTML escaping writes it.
			Changes:    json.RawMessage(`[{"id":"` + pick() + `","after":` + string(props) + `}]`),
			Receipt:    json.RawMessage(`{"note":"` + pick() + `"}`),
			Provenance: json.RawMessage(`{"actor":"` + pick() + `"}`),
		}
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got := c.AppendJSON([]byte("prefix"))
		if string(got) != "prefix"+string(want) {
			t.Fatalf("AppendJSON:\n got %s\nwant prefix%s", got, want)
		}
	}
}

// BenchmarkRawCommitAppendJSON encodes a pull page of 1,000 one-put
// commits as stored (payload, changes with the after-image, receipt and
// provenance), the handler's work per page besides the read: payloads
// naming the properties written, and payloads with a state value that
// holds a space.
func BenchmarkRawCommitAppendJSON(b *testing.B) {
	for _, bc := range []struct{ name, payload string }{
		{"names", `{"created":true,"properties":["n","title"]}`},
		{"state-with-space", `{"created":true,"properties":["n","title"],"state":{"status":"in review"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			page := rawPage(bc.payload)
			buf := make([]byte, 0, 1<<20)
			for b.Loop() {
				buf = buf[:0]
				for i := range page {
					buf = page[i].AppendJSON(buf)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(page)), "ns/commit")
		})
	}
}

// rawPage is 1,000 one-put commits with payload.
func rawPage(payload string) []RawCommit {
	page := make([]RawCommit, 1000)
	ts := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	for i := range page {
		n := strconv.Itoa(i)
		props := `{"n":` + n + `,"title":"row ` + n + `"}`
		page[i] = RawCommit{
			Row: Row{Seq: int64(i + 1), TS: ts.Add(time.Duration(i) * time.Millisecond), Actor: "bench", Op: "put", EntityID: "e" + n, Type: "note",
				Payload: json.RawMessage(payload)},
			Changes:    json.RawMessage(`[{"kind":"upsert","type":"note","id":"e` + n + `","version":1,"after":` + props + `}]`),
			Receipt:    json.RawMessage(`{"status":"applied","seq":` + n + `,"version":1}`),
			Provenance: json.RawMessage(`{"actor":"bench","via":"api"}`),
		}
	}
	return page
}
