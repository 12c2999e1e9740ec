package engine

import (
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Time is a timestamp written like every timestamp on eddy's wire: RFC
// 3339 in UTC with six fractional digits (store.TimeLayout).
type Time struct{ time.Time }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) { return store.AppendTime(nil, t.Time), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error { return t.Time.UnmarshalJSON(b) }

// Status is a trigger's runtime state at a glance: where its cursor is,
// how far behind the head, who holds its lease and how its deliveries
// stand.
type Status struct {
	Trigger string `json:"trigger"`
	Enabled bool   `json:"enabled"`
	// Cursor: every row <= Cursor has a stance. Start: rows <= Start are
	// not_started. Lag is Head - Cursor (0 for a cron trigger).
	Cursor  int64            `json:"cursor"`
	Start   int64            `json:"start"`
	Head    int64            `json:"head"`
	Lag     int64            `json:"lag"`
	Skipped []store.SeqRange `json:"skipped"`
	// Fired is the scheduled time of a cron trigger's last firing.
	Fired *Time `json:"fired,omitempty"`
	// Owner holds the lease until LeaseExpires; Epoch counts hand-overs.
	Owner        string `json:"owner,omitempty"`
	Epoch        int64  `json:"epoch"`
	LeaseExpires *Time  `json:"leaseExpires,omitempty"`
	// Deliveries counts deliveries by status; OldestOpen is the creation
	// time of the oldest one still open.
	Deliveries map[store.DeliveryStatus]int `json:"deliveries"`
	OldestOpen *Time                        `json:"oldestOpen,omitempty"`
}

// DeliveryInfo is a delivery as the API shows it (store.Delivery with
// wire timestamps and no space).
type DeliveryInfo struct {
	ID            string               `json:"id"`
	Trigger       string               `json:"trigger"`
	Seq           int64                `json:"seq"`
	Entity        store.EntityKey      `json:"entity"`
	Status        store.DeliveryStatus `json:"status"`
	Attempts      int                  `json:"attempts"`
	Depth         int                  `json:"depth"`
	LastError     string               `json:"lastError"`
	NextAttemptAt *Time                `json:"nextAttemptAt"`
	CreatedAt     Time                 `json:"createdAt"`
	UpdatedAt     Time                 `json:"updatedAt"`
}

// DeliveryPage is one page of a trigger's deliveries; Next, when set, is
// the opaque position to pass as after for the following page.
type DeliveryPage struct {
	Deliveries []DeliveryInfo `json:"deliveries"`
	Next       string         `json:"next,omitempty"`
}

// DeliveryQuery selects a page of a trigger's deliveries.
type DeliveryQuery struct {
	Space    string
	Trigger  string
	Statuses []store.DeliveryStatus
	After    string
	Limit    int
}

// TriggerStance is one trigger's stance on a row, as the API shows it.
type TriggerStance struct {
	Trigger  string          `json:"trigger"`
	Stance   triggers.Stance `json:"stance"`
	Delivery *StanceDelivery `json:"delivery,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// StanceDelivery is the delivery a matched row got.
type StanceDelivery struct {
	ID       string               `json:"id"`
	Status   store.DeliveryStatus `json:"status"`
	Attempts int                  `json:"attempts"`
}

// Stances answers GET .../changes/{seq}/stances.
type Stances struct {
	Seq     int64           `json:"seq"`
	Stances []TriggerStance `json:"stances"`
}

// FenceResult answers GET .../fence: Done, or the triggers still
// waiting when the timeout passed.
type FenceResult struct {
	Seq     int64    `json:"seq"`
	Done    bool     `json:"done"`
	Waiting []string `json:"waiting,omitempty"`
}
