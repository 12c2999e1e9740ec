// Package views is filtered view sync on the changelog: view definitions
// with their one membership rule, cursor contexts, the projector, the
// index that finds the views a change concerns, bootstrap sessions
// (frozen and keyset), delta pages, live view streams, typed resets and
// backtests.
package views
