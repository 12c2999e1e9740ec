package views

import (
	"encoding/hex"

	"github.com/eddy-run/eddy/internal/seal"
)

// Context binds a cursor or a bootstrap page to everything that must not
// change under it: the space, the view's identity, its declared filter
// version, the signature of its actual filter, the schema version of the
// types it reads and the space's epoch. Fingerprint hashes the six; a
// client keeps each view's state under it.
type Context struct {
	Space           string `json:"space"`
	View            string `json:"view"`
	FilterVersion   string `json:"filterVersion"`
	FilterSignature string `json:"filterSignature"`
	SchemaVersion   string `json:"schemaVersion"`
	Epoch           string `json:"epoch"`
	Fingerprint     string `json:"fingerprint"`
}

// NewContext returns the context of view d in space at a schema version
// and epoch, with its fingerprint.
func NewContext(space string, d *Definition, schemaVersion, epoch string) Context {
	c := Context{Space: space, View: d.Name(), FilterVersion: d.Version(), FilterSignature: d.Signature(),
		SchemaVersion: schemaVersion, Epoch: epoch}
	fp := c.binding().fingerprint
	c.Fingerprint = hex.EncodeToString(fp[:])
	return c
}

// binding is what a token or cursor carries of its context: the
// fingerprint, which decides whether the context still holds, and short
// hashes of its parts, which tell a reset's reason.
type binding struct {
	fingerprint [16]byte
	filter      [4]byte // filter version and signature
	schema      [4]byte
	epoch       [4]byte
}

const bindingLen = 16 + 3*4

func (c Context) binding() binding {
	var b binding
	copy(b.fingerprint[:], seal.Digest(c.Space, c.View, c.FilterVersion, c.FilterSignature, c.SchemaVersion, c.Epoch))
	copy(b.filter[:], seal.Digest(c.FilterVersion, c.FilterSignature))
	copy(b.schema[:], seal.Digest(c.SchemaVersion))
	copy(b.epoch[:], seal.Digest(c.Epoch))
	return b
}

// stale returns why a token bound to b no longer holds in the current
// context c, or "" when it does. The broadest reason wins: an epoch
// change discards everything, a view change one view's state.
func (b binding) stale(c Context) Reason {
	cur := c.binding()
	switch {
	case b.fingerprint == cur.fingerprint:
		return ""
	case b.epoch != cur.epoch:
		return EpochChanged
	case b.schema != cur.schema && b.filter == cur.filter:
		return SchemaChanged
	}
	return ViewChanged
}

// Valid reports whether the context's fingerprint is the hash of its six
// parts: a client checks it before trusting a page's identity, so a
// forged or truncated context is refused.
func (c Context) Valid() bool {
	if c.Space == "" || c.View == "" || c.Epoch == "" {
		return false
	}
	fp := c.binding().fingerprint
	return c.Fingerprint == hex.EncodeToString(fp[:])
}
