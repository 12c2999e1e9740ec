package watch

import (
	"encoding/json"
	"strconv"

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
	return append(r.AppendJSON(b), '\n')
}
