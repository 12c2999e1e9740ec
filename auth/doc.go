// Package auth holds eddy's API tokens and principals. A token is a random
// secret ("eddy_" + 32 bytes base32) stored only as its SHA-256 hash, bound
// to one space (or all), a role and optional limits. A Principal is what an
// authenticated request acts as, and it is the one place that decides
// whether a row or record may be read: every read path asks it.
package auth
