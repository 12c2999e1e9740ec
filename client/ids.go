package client

import "github.com/eddy-run/eddy/internal/sortid"

// NewID returns a fresh entity id of the kind the server generates for
// Space.Create: 22 characters of lowercase base32, the time in
// milliseconds first (so ids made later sort later), then 12 random ones.
// Use it to name entities a client creates itself, such as the ones an
// offline client writes before it can push: on SQLite, new entities whose
// ids sort by time are written side by side, and random ones (UUIDv4)
// cost a page each (docs/storage.md, "Entity ids").
func NewID() string { return sortid.New("", 12) }
