package triggers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ordering is a delivery ordering policy. The zero value is unset.
type Ordering uint8

// Delivery orderings.
const (
	// OrderingEntity (the default) keeps one delivery in flight per
	// trigger and entity, delivered in seq order.
	OrderingEntity Ordering = iota + 1
	// OrderingNone runs deliveries in any order, up to the concurrency.
	OrderingNone
)

var orderingNames = []string{OrderingEntity: "entity", OrderingNone: "none"}

// String returns the ordering's JSON name.
func (o Ordering) String() string { return enumName(orderingNames, int(o)) }

// MarshalText implements encoding.TextMarshaler.
func (o Ordering) MarshalText() ([]byte, error) { return enumText(orderingNames, int(o), "ordering") }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Ordering) UnmarshalText(b []byte) error {
	i, err := enumParse(orderingNames, string(b), "ordering")
	*o = Ordering(i)
	return err
}

// CatchUp is a cron trigger's policy for firings missed while no process
// ran it. The zero value is unset.
type CatchUp uint8

// Catch-up policies.
const (
	// CatchUpNone drops missed firings.
	CatchUpNone CatchUp = iota + 1
	// CatchUpLast (the default) fires once for the latest missed time.
	CatchUpLast
	// CatchUpAll fires once for every missed time.
	CatchUpAll
)

var catchUpNames = []string{CatchUpNone: "none", CatchUpLast: "last", CatchUpAll: "all"}

// String returns the policy's JSON name.
func (c CatchUp) String() string { return enumName(catchUpNames, int(c)) }

// MarshalText implements encoding.TextMarshaler.
func (c CatchUp) MarshalText() ([]byte, error) { return enumText(catchUpNames, int(c), "catchUp") }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *CatchUp) UnmarshalText(b []byte) error {
	i, err := enumParse(catchUpNames, string(b), "catchUp")
	*c = CatchUp(i)
	return err
}

// Stance is a trigger's verdict on one row (DESIGN.md section 7). The
// zero value is unset.
type Stance uint8

// Stances.
const (
	// StancePending: the row is above the trigger's cursor.
	StancePending Stance = iota + 1
	// StanceNotStarted: the row is at or below the trigger's start.
	StanceNotStarted
	// StanceDisabled: the row was skipped while the trigger was disabled.
	StanceDisabled
	// StanceNotMatched: the prefilter or `when` rejected the row.
	StanceNotMatched
	// StanceError: evaluating `when` raised an error (recorded).
	StanceError
	// StanceCoalesced: a later matching row of the same entity in the
	// same batch was delivered instead.
	StanceCoalesced
	// StanceEcho: the row was authored by this trigger's own delivery.
	StanceEcho
	// StanceMatched: the row matched and has a delivery.
	StanceMatched
)

var stanceNames = []string{
	StancePending: "pending", StanceNotStarted: "not_started", StanceDisabled: "disabled",
	StanceNotMatched: "not_matched", StanceError: "error", StanceCoalesced: "coalesced",
	StanceEcho: "echo", StanceMatched: "matched",
}

// String returns the stance's JSON name.
func (s Stance) String() string { return enumName(stanceNames, int(s)) }

// MarshalText implements encoding.TextMarshaler.
func (s Stance) MarshalText() ([]byte, error) { return enumText(stanceNames, int(s), "stance") }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Stance) UnmarshalText(b []byte) error {
	i, err := enumParse(stanceNames, string(b), "stance")
	*s = Stance(i)
	return err
}

func enumName(names []string, i int) string {
	if i <= 0 || i >= len(names) {
		return "unset(" + strconv.Itoa(i) + ")"
	}
	return names[i]
}

func enumText(names []string, i int, what string) ([]byte, error) {
	if i <= 0 || i >= len(names) {
		return nil, fmt.Errorf("marshal %s: invalid value %d", what, i)
	}
	return []byte(names[i]), nil
}

func enumParse(names []string, s, what string) (int, error) {
	for i, n := range names {
		if i > 0 && n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(names[1:], ", "))
}

// StartPolicy says where a new trigger's cursor begins.
type StartPolicy uint8

// Start policies.
const (
	// StartHead (the default) begins at the space's head when the trigger
	// is saved: only later rows are evaluated.
	StartHead StartPolicy = iota + 1
	// StartBeginning evaluates every retained row.
	StartBeginning
	// StartSeq evaluates the rows after Start.Seq.
	StartSeq
)

// Start is a trigger's start position: "head", "beginning" or a seq. In
// JSON it is one of those strings or a number; a seq also decodes from a
// string of digits.
type Start struct {
	Policy StartPolicy
	// Seq is the last seq not evaluated (rows <= Seq are not_started);
	// set only with StartSeq.
	Seq int64
}

// String returns "head", "beginning" or the seq in decimal.
func (s Start) String() string {
	switch s.Policy {
	case StartHead:
		return "head"
	case StartBeginning:
		return "beginning"
	case StartSeq:
		return strconv.FormatInt(s.Seq, 10)
	}
	return "unset"
}

// MarshalJSON encodes a seq as a number and the policies as strings.
func (s Start) MarshalJSON() ([]byte, error) {
	switch s.Policy {
	case StartHead, StartBeginning:
		return json.Marshal(s.String())
	case StartSeq:
		return []byte(strconv.FormatInt(s.Seq, 10)), nil
	}
	return nil, fmt.Errorf("marshal start: invalid policy %d", s.Policy)
}

// UnmarshalJSON accepts "head", "beginning", a non-negative integer or a
// string of digits.
func (s *Start) UnmarshalJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	default:
		return fmt.Errorf(`want "head", "beginning" or a seq number`)
	}
	return s.parse(text)
}

func (s *Start) parse(text string) error {
	switch text {
	case "head":
		*s = Start{Policy: StartHead}
		return nil
	case "beginning":
		*s = Start{Policy: StartBeginning}
		return nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf(`want "head", "beginning" or a non-negative seq, not %q`, text)
	}
	*s = Start{Policy: StartSeq, Seq: n}
	return nil
}

// Duration is a time.Duration that reads and writes JSON as a Go
// duration string ("10s", "1m30s", "5m").
type Duration time.Duration

// String formats d without trailing zero units ("5m", not "5m0s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (time.ParseDuration).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as \"10s\": %w", err)
	}
	*d = Duration(v)
	return nil
}
