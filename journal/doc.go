// Package journal hands one user of one application what happened to the
// entities that user may read, since a position, in commit order (DESIGN
// section 9, seed 003).
//
// A session stamps a position a safe window behind the settled tail and
// an expiry (creation + retention) that reading never moves. Pages walk
// whole commits up to the settled tail (commits younger than the safe
// window are held back), describe each change for the reader with
// Describe (the one rule of what a journal says about a commit) and move
// the cursor only over what they walked, so a page asked for twice
// answers the same records. Cursors, fetch tokens and fetch positions are
// opaque and authenticated (HMAC) under a key bound to the space, the user
// and the application, so a cursor of another user, application or space,
// or a damaged one, is cursor_invalid; past its moment it is
// cursor_expired. Whether a snapshot may be read is never decided here:
// the caller passes the one rule (package auth) as a Reader.
package journal
