package main

import (
	"fmt"
	"io"

	"github.com/itchyny/gojq"
)

// parseJQ compiles a --jq expression.
func parseJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usagef("--jq: %v", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usagef("--jq: %v", err)
	}
	return code, nil
}

// printJQ writes the results of code run over v (as its JSON document)
// the way gh's --jq does: one result a line, a string raw, anything else
// as compact JSON.
func (a *app) printJQ(code *gojq.Code, v any) error {
	g, err := generic(v)
	if err != nil {
		return err
	}
	iter := code.Run(g)
	for {
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := r.(error); ok {
			return fmt.Errorf("--jq: %w", err) // a run-time error: the expression parsed
		}
		if err := writeJQResult(a.stdout, r); err != nil {
			return err
		}
	}
}

// writeJQResult writes one result of a jq query on its own line.
func writeJQResult(w io.Writer, r any) error {
	if s, ok := r.(string); ok {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	b, err := gojq.Marshal(r)
	if err != nil {
		return fmt.Errorf("--jq: encode result: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
