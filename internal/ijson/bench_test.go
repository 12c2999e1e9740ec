package ijson

import "testing"

// storedChange is a commit's stored changes text as eddy writes it: one
// put of a new entity.
const storedChange = `[{"ordinal":0,"kind":"created","type":"task","id":"e123456","version":123457,"before":null,` +
	`"after":{"type":"task","id":"e123456","version":123457,"properties":{"n":123456,"title":"row 123456"},` +
	`"links":[],"createdAt":"2026-12-06T05:30:00.123456Z","updatedAt":"2026-12-06T05:30:00.123456Z"},` +
	`"conflictGroups":["n","title"]}]`

// BenchmarkCheck reports the time to check a stored changes text.
func BenchmarkCheck(b *testing.B) {
	text := []byte(storedChange)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if err := Check(text); err != nil {
			b.Fatal(err)
		}
	}
}
