package views

import (
	"encoding/json"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// snapshot is one record snapshot as membership judges it: its
// properties are decoded, and its CEL binding built, on first use and
// shared by every view judging it. A snapshot is used by one goroutine.
type snapshot struct {
	rec     *store.Record
	props   map[string]any
	decoded bool
	bind    *predicate.Binding
}

// newSnapshot wraps rec; nil stays nil.
func newSnapshot(rec *store.Record) *snapshot {
	if rec == nil {
		return nil
	}
	return &snapshot{rec: rec}
}

// property returns a top-level property's decoded value. Undecodable
// properties hold nothing.
func (s *snapshot) property(name string) (any, bool) {
	if !s.decoded {
		s.decoded = true
		if len(s.rec.Properties) > 0 {
			_ = json.Unmarshal(s.rec.Properties, &s.props) // a failure leaves props nil
		}
	}
	v, ok := s.props[name]
	return v, ok
}

// binding returns the snapshot's CEL activation.
func (s *snapshot) binding() *predicate.Binding {
	if s.bind == nil {
		s.bind = predicate.Bind(s.rec)
	}
	return s.bind
}
