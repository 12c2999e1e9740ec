package rowcodec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/eddy-run/eddy/store"
)

// EncodeChanges returns a commit's changes column: the JSON array of its
// changes in ordinal order, snapshots in stored form, nil conflict groups
// as []. Ordinals must be distinct.
func EncodeChanges(changes []store.Change) (string, error) {
	byOrdinal := func(a, b store.Change) int { return cmp.Compare(a.Ordinal, b.Ordinal) }
	cs := changes
	if !slices.IsSortedFunc(cs, byOrdinal) {
		cs = slices.Clone(changes)
		slices.SortStableFunc(cs, byOrdinal)
	}
	for i := 1; i < len(cs); i++ {
		if cs[i].Ordinal == cs[i-1].Ordinal {
			return "", fmt.Errorf("duplicate change ordinal %d", cs[i].Ordinal)
		}
	}
	return encode(func(b *bytes.Buffer) error {
		b.WriteByte('[')
		for i := range cs {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendChange(b, &cs[i]); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	})
}

// DecodeChanges decodes a changes column into a non-nil slice whose
// snapshots and conflict groups are normalized as EncodeChanges stores
// them.
func DecodeChanges(s string) ([]store.Change, error) {
	cs := []store.Change{}
	if err := json.Unmarshal([]byte(s), &cs); err != nil {
		return nil, fmt.Errorf("decode changes: %w", err)
	}
	if cs == nil {
		cs = []store.Change{}
	}
	for i := range cs {
		store.NormalizeChange(&cs[i])
	}
	return cs, nil
}

// ChangeOf decodes a changes column and returns the first change of key,
// and whether there is one.
func ChangeOf(s string, key store.EntityKey) (store.Change, bool, error) {
	cs, err := DecodeChanges(s)
	if err != nil {
		return store.Change{}, false, err
	}
	for _, ch := range cs {
		if ch.Type == key.Type && ch.ID == key.ID {
			return ch, true, nil
		}
	}
	return store.Change{}, false, nil
}

// SecondEntity returns the entity other than the commit's primary one
// (Type, EntityID) that its changes touch, or nil. The commits table
// indexes two entities per commit, so a commit whose changes touch a third
// is refused.
func SecondEntity(c *store.Commit) (*store.EntityKey, error) {
	primary := store.EntityKey{Type: c.Type, ID: c.EntityID}
	var second *store.EntityKey
	for _, ch := range c.Changes {
		k := store.EntityKey{Type: ch.Type, ID: ch.ID}
		switch {
		case k == primary:
		case second == nil:
			second = &k
		case k != *second:
			return nil, fmt.Errorf("changes touch %s/%s, a third entity", k.Type, k.ID)
		}
	}
	return second, nil
}

// EncodeReceipt encodes a commit's receipt, nil lists as [].
func EncodeReceipt(r store.Receipt) (string, error) { return MarshalReceipt(store.NormalizeReceipt(r)) }

// MarshalReceipt encodes a receipt as it is (nil lists as null), as
// Marshal would.
func MarshalReceipt(r store.Receipt) (string, error) {
	return encode(func(b *bytes.Buffer) error { return appendReceipt(b, &r) })
}

// EncodeProvenance encodes a commit's provenance, as Marshal would.
func EncodeProvenance(p store.Provenance) string {
	s, _ := encode(func(b *bytes.Buffer) error { appendProvenance(b, &p); return nil })
	return s
}

// DecodeReceipt decodes a commit's receipt, nil lists as empty.
func DecodeReceipt(s string) (store.Receipt, error) {
	var r store.Receipt
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("decode receipt: %w", err)
	}
	return store.NormalizeReceipt(r), nil
}
