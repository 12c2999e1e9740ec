package changelog

// SetPassHook makes h call fn after every pass; call it before Start.
func SetPassHook(h *Housekeeper, fn func(HousekeepReport, error)) { h.onPass = fn }

// Backoff exposes backoff to the external tests.
var Backoff = backoff
