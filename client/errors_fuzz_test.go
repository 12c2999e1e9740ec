package client

import "testing"

// FuzzProblemOf feeds arbitrary error bodies to the problem decoder: it
// always yields an error with a code (the CLI prints it).
func FuzzProblemOf(f *testing.F) {
	f.Add(400, []byte(`{"error": {"code": "bad_request", "message": "x"}}`))
	f.Add(502, []byte("<html>bad gateway</html>"))
	f.Add(500, []byte(`{"error": null}`))
	f.Add(404, []byte{})
	f.Add(0, []byte(`{"error": {"code": "", "message": "no code"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if e := problemOf(status, nil, body); e.Code == "" {
			t.Fatalf("problemOf(%d, %q) = %+v: no code", status, body, e)
		}
	})
}
