package journal

import (
	"github.com/eddy-run/eddy/store"
)

// Reader decides which entity snapshots a journal's user may read. It is
// the one readability rule of package auth (the token's type allow-list
// and the type's access rule, judged on the snapshot); the journal only
// asks it.
type Reader interface {
	CanReadRecord(r *store.Record) bool
}

// Fingerprinted is a Reader that names what its verdicts depend on
// besides the snapshot and the user ((*auth.Reader).AccessFingerprint:
// the type allow-list and the access rules). A session binds its cursors
// to it: when it changes, a visibility boundary may have moved without a
// commit, and the cursor is refused (cursor_expired, reason
// access_changed) so the client rebuilds.
type Fingerprinted interface {
	Reader
	AccessFingerprint() string
}

// fingerprint returns r's access fingerprint, or "" when it has none.
func fingerprint(r Reader) string {
	if f, ok := r.(Fingerprinted); ok {
		return f.AccessFingerprint()
	}
	return ""
}

// Kind is what a journal record tells a client.
type Kind string

// Record kinds.
const (
	// Object carries the card: the entity as it stood in that commit.
	Object Kind = "object"
	// Tombstone says the entity is gone (Reason says how); no card.
	Tombstone Kind = "tombstone"
	// Access says the user lost or gained sight of the entity: look at
	// Scope again. It carries no card.
	Access Kind = "access"
)

// Tombstone reasons.
const (
	ReasonDeleted = "deleted"
	ReasonMerged  = "merged"
)

// Warning reasons.
const (
	// ObjectUnavailable is an object still visible to the user with no
	// card to build.
	ObjectUnavailable = "OBJECT_UNAVAILABLE"
	// RecordUnreadable is a commit whose op, change kind or tombstone
	// reason this binary does not know (a newer version wrote it).
	RecordUnreadable = "RECORD_UNREADABLE"
)

// Record is one record of a journal page.
type Record struct {
	Kind   Kind             `json:"kind"`
	Seq    int64            `json:"seq"`
	Type   string           `json:"type"`
	ID     string           `json:"id"`
	Card   *store.Record    `json:"card,omitempty"`
	Reason string           `json:"reason,omitempty"`
	Scope  *store.EntityKey `json:"scope,omitempty"`
}

// Warning names what a page could not describe; the page forms round it
// and its position moves past it. Type and ID, when known, let the client
// read the entity back with the state check.
type Warning struct {
	Reason string `json:"reason"`
	Seq    int64  `json:"seq"`
	Type   string `json:"type,omitempty"`
	ID     string `json:"id,omitempty"`
}

// Entry is one step of a commit's description: a record or a warning.
type Entry struct {
	Record  *Record
	Warning *Warning
}

// knownOps are the commit ops this binary can describe; tombstoneReasons
// say which of them may delete an entity, and with which reason.
var (
	knownOps = map[string]bool{
		"put": true, "patch": true, "delete": true, "link": true, "unlink": true,
		"merge": true, "split": true, "fire": true, "park": true,
	}
	tombstoneReasons = map[string]string{"delete": ReasonDeleted, "merge": ReasonMerged}
)

// Describe is the one rule of what a journal says about a commit to a
// reader, change by change in ordinal order:
//
//   - a change the reader can read on neither side says nothing (its
//     content, and that it happened, stay hidden);
//   - a commit with an op this binary does not know, a change of an
//     unknown kind, or a deletion by an op that names no tombstone reason
//     is a RECORD_UNREADABLE warning;
//   - a creation, or an update readable on both sides, is an object with
//     the after snapshot as its card; an update that became readable is an
//     access record then the object; one that stopped being readable is an
//     access record alone (no card);
//   - a deletion readable before it is a tombstone (no card) with the
//     reason of its op: deleted, or merged;
//   - a readable change with no card to build (no after snapshot, or
//     properties that are not an object) is an OBJECT_UNAVAILABLE warning.
func Describe(c *store.Commit, r Reader) []Entry {
	var out []Entry
	for i := range c.Changes {
		out = describeChange(out, c, &c.Changes[i], r)
	}
	return out
}

func describeChange(out []Entry, c *store.Commit, ch *store.Change, r Reader) []Entry {
	before, after := readable(r, ch.Before), readable(r, ch.After)
	if ch.Before == nil && ch.After == nil {
		before = r.CanReadRecord(stub(ch)) // nothing else to judge it on
	}
	if !before && !after {
		return out
	}
	if !knownOps[c.Op] {
		return append(out, warn(RecordUnreadable, c, ch))
	}
	switch ch.Kind {
	case store.ChangeCreated, store.ChangeUpdated:
		return describeLive(out, c, ch, before, after)
	case store.ChangeDeleted:
		reason, ok := tombstoneReasons[c.Op]
		switch {
		case !ok:
			return append(out, warn(RecordUnreadable, c, ch))
		case !before:
			return out
		}
		return append(out, Entry{Record: &Record{Kind: Tombstone, Seq: c.Seq, Type: ch.Type, ID: ch.ID, Reason: reason}})
	}
	return append(out, warn(RecordUnreadable, c, ch))
}

// describeLive describes a creation or an update that is readable on at
// least one side.
func describeLive(out []Entry, c *store.Commit, ch *store.Change, before, after bool) []Entry {
	if !hasCard(ch.After) {
		return append(out, warn(ObjectUnavailable, c, ch))
	}
	if ch.Kind == store.ChangeUpdated && before != after {
		out = append(out, Entry{Record: &Record{Kind: Access, Seq: c.Seq, Type: ch.Type, ID: ch.ID,
			Scope: &store.EntityKey{Type: ch.Type, ID: ch.ID}}})
	}
	if !after {
		return out
	}
	return append(out, Entry{Record: &Record{Kind: Object, Seq: c.Seq, Type: ch.Type, ID: ch.ID, Card: ch.After}})
}

// hasCard reports whether a snapshot can be sent as a card.
func hasCard(rec *store.Record) bool {
	return rec != nil && len(rec.Properties) > 0 && rec.Properties[0] == '{'
}

// readable asks the reader about a snapshot; a missing one is not.
func readable(r Reader, rec *store.Record) bool { return rec != nil && r.CanReadRecord(rec) }

// stub stands in for a change that carries no snapshot at all: its type,
// id and version, nothing else.
func stub(ch *store.Change) *store.Record {
	return &store.Record{Type: ch.Type, ID: ch.ID, Version: ch.Version, Kind: store.KindLive, Properties: []byte(`{}`)}
}

func warn(reason string, c *store.Commit, ch *store.Change) Entry {
	return Entry{Warning: &Warning{Reason: reason, Seq: c.Seq, Type: ch.Type, ID: ch.ID}}
}
