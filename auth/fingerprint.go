package auth

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// AccessFingerprint names everything the reader's verdicts depend on
// besides the snapshot and the user: the principal's types allow-list
// (and whether it is an admin), and the access rule (its source) of every type of the
// policy. Two readers of one user with the same fingerprint judge every
// snapshot alike; a rule change or another allow-list changes it. The
// journal binds its cursors to it, so a visibility boundary that moved
// without a commit forces a rebuild instead of passing unannounced.
func (r *Reader) AccessFingerprint() string {
	h := sha256.New()
	part := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	if r.p.IsAdmin() {
		part("admin")
	}
	types := slices.Sorted(slices.Values(r.p.Types))
	part("types")
	for _, t := range types {
		part(t)
	}
	part("rules")
	if r.policy != nil {
		ruled := make([]string, 0, len(r.policy.rules))
		for t := range r.policy.rules {
			ruled = append(ruled, t)
		}
		slices.Sort(ruled)
		for _, t := range ruled {
			part(t)
			part(r.policy.rules[t].String())
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
