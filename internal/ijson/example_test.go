package ijson_test

import (
	"fmt"

	"github.com/eddy-run/eddy/internal/ijson"
)

func ExampleCheck() {
	fmt.Println(ijson.Check([]byte(`{"a": 1, "a": 2}`)))
	fmt.Println(ijson.Check([]byte(`{"n": 1e400}`)))
	fmt.Println(ijson.Check([]byte(`{"a": {"a": 1}}`)))
	// Output:
	// duplicate object key at byte 9: "a"
	// number out of range at byte 6: 1e400 is beyond float64 (about ±1.8e308)
	// <nil>
}
