package client

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// frameKind is what one line of a watch stream is.
type frameKind uint8

// Frame kinds (DESIGN.md section 5, watch framing).
const (
	// frameUnknown is a control frame this client does not know; it is
	// skipped, so a newer server's frames do not break an older client.
	frameUnknown frameKind = iota
	frameRow
	frameBookmark
	frameHeartbeat
	frameError
)

// frame is one decoded line of a watch stream.
type frame struct {
	kind     frameKind
	row      store.Row // frameRow
	bookmark int64     // frameBookmark
	err      *Error    // frameError
}

// decodeFrame decodes one ndjson line of a watch stream: a line with
// "seq" is a row; a line without is a control frame keyed by its single
// key: {} (heartbeat), {"bookmark": N} or the terminal {"error": {...}}.
func decodeFrame(line []byte) (frame, error) {
	line = bytes.TrimSpace(line)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil || keys == nil {
		return frame{}, badFrame(line, "not a JSON object")
	}
	if _, ok := keys["seq"]; ok {
		return decodeRow(line)
	}
	if len(keys) == 0 {
		return frame{kind: frameHeartbeat}, nil
	}
	if len(keys) > 1 {
		return frame{}, badFrame(line, "a control frame has one key")
	}
	if raw, ok := keys["bookmark"]; ok {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 0 {
			return frame{}, badFrame(line, "bookmark is not a position")
		}
		return frame{kind: frameBookmark, bookmark: n}, nil
	}
	if raw, ok := keys["error"]; ok {
		e := problemOf(0, nil, append(append([]byte(`{"error":`), raw...), '}'))
		if e.Code == "http_0" {
			return frame{}, badFrame(line, "error is not a problem object")
		}
		return frame{kind: frameError, err: e}, nil
	}
	return frame{kind: frameUnknown}, nil
}

// decodeRow decodes a row frame; its seq must be a positive integer.
func decodeRow(line []byte) (frame, error) {
	var r store.Row
	if err := json.Unmarshal(line, &r); err != nil {
		return frame{}, badFrame(line, err.Error())
	}
	if r.Seq < 1 {
		return frame{}, badFrame(line, "seq is not a positive integer")
	}
	return frame{kind: frameRow, row: r}, nil
}

// badFrame reports a line that is not a frame, quoting its start.
func badFrame(line []byte, why string) error {
	if len(line) > 80 {
		line = append(line[:80:80], "…"...)
	}
	return fmt.Errorf("%w %q: %s", ErrBadFrame, line, why)
}
