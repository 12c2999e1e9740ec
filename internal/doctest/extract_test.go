package doctest

import (
	"reflect"
	"testing"
)

func TestExtract(t *testing.T) {
	doc := "# t\n" +
		"```sh\necho prose\n```\n" +
		"```sh runnable\nA=1\necho $A\n```\n" +
		"text\n" +
		"````md\n```sh runnable\nnot a block: inside another fence\n```\n````\n" +
		"```bash runnable\n  indented\n```\n" +
		"```go runnable\nnot shell\n```\n" +
		"~~~sh runnable\ntilde\n~~~\n"
	got, err := Extract([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Line: 5, Code: "A=1\necho $A\n"},
		{Line: 15, Code: "  indented\n"},
		{Line: 21, Code: "tilde\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Extract = %#v\nwant %#v", got, want)
	}
}

func TestExtractUnclosed(t *testing.T) {
	if _, err := Extract([]byte("```sh runnable\necho hi\n")); err == nil {
		t.Fatal("an unclosed runnable block is no error")
	}
	// An unclosed prose block is Markdown's business, not an error.
	if _, err := Extract([]byte("```sh\necho hi\n")); err != nil {
		t.Fatal(err)
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{"", "```sh runnable\nx\n```\n", "````\n```sh runnable\n````\n", "~~~bash runnable\n~~~~\n", "``` sh runnable ```"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		blocks, err := Extract(doc)
		if err != nil {
			return
		}
		last := 0
		for _, b := range blocks {
			if b.Line <= last {
				t.Fatalf("blocks out of order: %v", blocks)
			}
			last = b.Line
		}
	})
}
