// Package auth holds eddy's API tokens and principals, and it is the one
// place that decides what a principal may read.
//
// A token is a random secret ("eddy_" + 32 bytes base32) stored only as
// its SHA-256 hash, bound to one space (or all), a role and optional
// limits: a types allow-list and, for journal clients, a user and an
// application. A Principal is what an authenticated request acts as.
//
// Readability is decided by a Reader: a Principal under the Policy of one
// space (the compiled access rules of its type definitions, kept by
// Policies per schema version). Every read path asks a Reader whether a
// row, commit, change or record may be read, and whether definitions and
// deliveries touching a set of types may be shown; nothing else decides.
package auth
