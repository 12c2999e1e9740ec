package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/eddy-run/eddy/definitions"
)

// backtestBody is the body of POST .../triggers/{name}/backtest; every
// field is optional.
type backtestBody struct {
	From    int64           `json:"from"`
	To      int64           `json:"to"`
	Samples int             `json:"samples"`
	MaxRows int             `json:"maxRows"`
	Trigger json.RawMessage `json:"trigger"`
}

// backtestTrigger answers POST .../triggers/{name}/backtest with what the
// trigger (or the changed definition in the body's "trigger", tested
// under that name without saving it) would have matched in (from, to].
func (s *Server) backtestTrigger(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	var body backtestBody
	if err := decodeOptional(r, &body); err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(body.Trigger), []byte("null")) {
		body.Trigger = nil
	}
	if len(body.Trigger) > 0 && body.Trigger[0] != '{' {
		return badRequest("trigger must be a JSON object (a trigger definition)").With("field", "trigger")
	}
	res, err := s.defs.Backtest(r.Context(), space, definitions.BacktestParams{
		Name: r.PathValue("name"), Trigger: body.Trigger,
		From: body.From, To: body.To, Samples: body.Samples, MaxRows: body.MaxRows,
	})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}

// decodeOptional decodes a strict JSON body into dst, leaving dst as is
// when the body is empty.
func decodeOptional(r *http.Request, dst any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return decodeJSON(r, dst, true)
}
