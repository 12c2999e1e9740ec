package main

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// printJSON writes a JSON document to stdout, indented.
func (a *app) printJSON(body []byte) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("server answered with invalid JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := a.stdout.Write(buf.Bytes())
	return err
}

// compact returns a JSON document on one line (or as is if it is not
// valid JSON).
func compact(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
