package watch

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// ContentType is the media type of a watch stream.
const ContentType = "application/x-ndjson"

// heartbeatFrame is the idle heartbeat line.
var heartbeatFrame = []byte("{}\n")

// appendBookmark appends the control frame {"bookmark":n} and a newline.
func appendBookmark(b []byte, n int64) []byte {
	b = append(b, `{"bookmark":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "}\n"...)
}

// appendError appends the terminal frame {"error":{...}} and a newline.
func appendError(b []byte, pe *problem.Error) []byte {
	j, err := json.Marshal(struct {
		Error *problem.Error `json:"error"`
	}{pe})
	if err != nil {
		j = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	b = append(b, j...)
	return append(b, '\n')
}

// appendRow appends r as one JSON line, byte for byte what encoding/json
// makes of a store.Row (so watch and history rows are identical), and a
// newline.
func appendRow(b []byte, r *store.Row) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"ts":`...)
	b = appendTime(b, r.TS)
	b = append(b, `,"actor":`...)
	b = appendString(b, r.Actor)
	b = append(b, `,"op":`...)
	b = appendString(b, r.Op)
	b = append(b, `,"entityId":`...)
	b = appendString(b, r.EntityID)
	b = append(b, `,"type":`...)
	b = appendString(b, r.Type)
	b = append(b, `,"payload":`...)
	b = appendRaw(b, r.Payload)
	return append(b, "}\n"...)
}

func appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return appendMarshal(b, t)
	}
	return store.AppendTime(b, t)
}

// appendString quotes s the way encoding/json does; the common case
// (printable ASCII that needs no escape) is copied as is.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendMarshal(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendRaw appends a stored payload as encoding/json renders a
// json.RawMessage: compacted (the changelog stores every payload
// compact, so it is copied, not scanned) and HTML-escaped; null when
// empty.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return store.AppendHTMLSafe(b, raw)
}

func appendMarshal(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}
