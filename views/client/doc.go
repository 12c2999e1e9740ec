// Package client keeps a local replica of several views of eddy spaces:
// MultiViewClient applies bootstrap and delta pages to a ClientState
// (in memory, or a SQLite file) by the rules of DESIGN.md section 8 and
// seed 001 — identity from each page's context, one local transaction
// per page, duplicate pages as no-ops, gaps and out-of-order pages
// refused, retention by the union of view memberships, version and
// tombstone barriers, cursors under each context's full fingerprint —
// and queues local writes that it pushes with ordinals (section 8b),
// showing canonical state plus pending writes as an optimistic read.
//
// Its package name is client; import it beside eddy's HTTP client under
// another name, such as viewclient.
package client
