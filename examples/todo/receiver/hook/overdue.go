package hook

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/functions"
)

// causeHeader carries the delivery's cause token, both on the request
// eddy sends and on the writes the receiver sends back.
const causeHeader = functions.HeaderCause

// Sweep is the answer of POST /overdue.
type Sweep struct {
	Checked int      `json:"checked"`
	Marked  []string `json:"marked"`
	// Skipped are overdue tasks that changed between the listing and the
	// patch; the next sweep looks at them again.
	Skipped []string `json:"skipped"`
	// Actions, set only when the request carried no Eddy-Cause token
	// (eddy triggers run sends none), are the patches for eddy to apply
	// as the delivery's own writes.
	Actions []Action `json:"actions,omitempty"`
}

// Action is one write a webhook may answer with.
type Action struct {
	Op       string          `json:"op"`
	Type     string          `json:"type"`
	EntityID string          `json:"entityId"`
	Patch    json.RawMessage `json:"patch"`
}

// overdue serves POST /overdue: mark every task past due and not done.
func (rc *receiver) overdue(w http.ResponseWriter, r *http.Request, body []byte) {
	var d Delivery
	_ = json.Unmarshal(body, &d) // only for the log line
	tasks, err := rc.api.tasks(r.Context())
	if err != nil {
		rc.fail(w, d, err)
		return
	}
	due := Overdue(tasks, rc.cfg.Now())
	res := Sweep{Checked: len(tasks), Marked: []string{}, Skipped: []string{}}
	cause := r.Header.Get(causeHeader)
	if cause == "" {
		res.Actions = actions(due)
		rc.cfg.Logger.Printf("overdue %s: %d tasks checked, %d to mark: no %s, answering them as actions", d.Delivery, len(tasks), len(due), causeHeader)
		writeJSON(w, res)
		return
	}
	for _, t := range due {
		err := rc.api.markOverdue(r.Context(), t, cause)
		switch {
		case errors.Is(err, errChanged):
			res.Skipped = append(res.Skipped, t.ID)
		case err != nil:
			rc.fail(w, d, err)
			return
		default:
			res.Marked = append(res.Marked, t.ID)
		}
	}
	rc.cfg.Logger.Printf("overdue %s: %d tasks checked, marked %v, skipped %v", d.Delivery, res.Checked, res.Marked, res.Skipped)
	writeJSON(w, res)
}

// fail answers 502 so that eddy retries the delivery; tasks marked before
// the failure are not overdue candidates any more.
func (rc *receiver) fail(w http.ResponseWriter, d Delivery, err error) {
	rc.cfg.Logger.Printf("overdue %s: %v", d.Delivery, err)
	http.Error(w, err.Error(), http.StatusBadGateway)
}

// Overdue returns the tasks to mark as of now: dueAt (RFC 3339) in the
// past, status not done, and not marked overdue yet. A task without a
// readable dueAt is never overdue.
func Overdue(tasks []Task, now time.Time) []Task {
	var out []Task
	for _, t := range tasks {
		p := t.Properties
		due, err := time.Parse(time.RFC3339Nano, p.DueAt)
		if err != nil || !due.Before(now) || p.Status == "done" || p.Overdue {
			continue
		}
		out = append(out, t)
	}
	return out
}

// actions are the patches marking tasks overdue, as a webhook answer.
func actions(tasks []Task) []Action {
	out := make([]Action, len(tasks))
	for i, t := range tasks {
		out[i] = Action{Op: "patch", Type: "task", EntityID: t.ID, Patch: json.RawMessage(`{"overdue":true}`)}
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
