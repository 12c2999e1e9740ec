package changelog

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDecodeMutations reports the time to decode and check the
// body of a one-put request (the HTTP write path's first step).
func BenchmarkDecodeMutations(b *testing.B) {
	bodies := make([]string, 1000)
	for i := range bodies {
		s := strconv.Itoa(i)
		bodies[i] = `{"mutations":[{"op":"put","type":"note","entityId":"h` + s + `","properties":{"n":` + s + `,"title":"row ` + s + `"}}]}`
	}
	for i := 0; b.Loop(); i++ {
		if _, _, err := DecodeMutations(strings.NewReader(bodies[i%len(bodies)])); err != nil {
			b.Fatal(err)
		}
	}
}
