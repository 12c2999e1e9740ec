package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/eddy-run/eddy/internal/ijson"
	"github.com/eddy-run/eddy/problem"
)

// Limits of page sizes.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// singularFilters maps singular spellings of filter parameters to the
// plural the API takes.
var singularFilters = map[string]string{
	"type":         "types",
	"op":           "ops",
	"actor":        "actors",
	"excludeType":  "excludeTypes",
	"excludeOp":    "excludeOps",
	"excludeActor": "excludeActors",
}

// checkParams refuses query parameters outside allowed, and repeats of
// parameters not in repeatable. A singular spelling of an allowed plural
// filter parameter names the plural.
func checkParams(q url.Values, allowed, repeatable []string) error {
	for _, name := range slices.Sorted(mapKeys(q)) {
		if !slices.Contains(allowed, name) {
			if plural, ok := singularFilters[name]; ok && slices.Contains(allowed, plural) {
				return problem.Param(name, "unknown parameter; filter parameters are plural: use %q", plural).With("suggestion", plural)
			}
			return problem.Param(name, "unknown parameter")
		}
		if len(q[name]) > 1 && !slices.Contains(repeatable, name) {
			return problem.Param(name, "given more than once")
		}
	}
	return nil
}

func mapKeys(q url.Values) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range q {
			if !yield(k) {
				return
			}
		}
	}
}

// seqParam parses an optional non-negative seq parameter.
func seqParam(q url.Values, name string) (int64, bool, error) {
	if !q.Has(name) {
		return 0, false, nil
	}
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, problem.Param(name, "%q is not a seq (want a non-negative integer)", v)
	}
	return n, true, nil
}

// limitParam parses limit: default 100, 1..1000.
func limitParam(q url.Values) (int, error) {
	if !q.Has("limit") {
		return defaultLimit, nil
	}
	v := q.Get("limit")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, problem.Param("limit", "%q is not a page size (want an integer from 1 to %d)", v, maxLimit)
	}
	return n, nil
}

// decodeJSON decodes the request body into dst: exactly one JSON value
// that passes the strict I-JSON gate (ijson.Check: valid UTF-8, no
// duplicate keys, numbers a float64 holds), with unknown object fields
// refused when strict is set.
func decodeJSON(r *http.Request, dst any, strict bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := checkBody(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	return nil
}

// checkBody passes a request body through the one strict JSON gate; a
// refusal is bad_request with details.offset, the byte it concerns.
func checkBody(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("request body is empty; want JSON")
	}
	return ijsonProblem("request body", ijson.Check(body))
}

// ijsonProblem renders an ijson refusal as bad_request naming what.
func ijsonProblem(what string, err error) error {
	var e *ijson.Error
	if !errors.As(err, &e) {
		return err
	}
	return badRequest("%s: %s", what, e.Error()).With("offset", e.Offset)
}

// decodeObject reads a body that must be one JSON object and returns it.
func decodeObject(r *http.Request, what string) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := decodeJSON(r, &raw, false); err != nil {
		return nil, err
	}
	if raw[0] != '{' {
		return nil, badRequest("%s must be a JSON object", what)
	}
	return raw, nil
}

// jsonError turns a decoding error into a clear bad_request (or keeps a
// body-too-large error for the renderer).
func jsonError(err error) error {
	var (
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty; want JSON")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: unexpected end of body")
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		return typeError(te)
	default:
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return badRequest("unknown field %q", name).With("field", name)
		}
		return badRequest("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func typeError(te *json.UnmarshalTypeError) error {
	if te.Field == "" {
		return badRequest("wrong JSON type: got %s, want %s", te.Value, jsonKind(te.Type.String()))
	}
	return badRequest("field %q: got %s, want %s", te.Field, te.Value, jsonKind(te.Type.String())).With("field", te.Field)
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "*int64", "int32", "float64":
		return "a number"
	}
	if len(goType) > 2 && goType[:2] == "[]" {
		return "an array"
	}
	if len(goType) > 3 && goType[:3] == "map" {
		return "an object"
	}
	return fmt.Sprintf("a JSON value of the shape %s", goType)
}
