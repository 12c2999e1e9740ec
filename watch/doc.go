// Package watch streams a space's changelog to many clients at once as
// newline-delimited JSON, without ever blocking a write.
//
// A Hub holds one space hub per watched space: an in-memory tail of the
// rows most recently committed, read once per wake-up and fanned out to
// every caught-up watcher by non-blocking sends. A watcher whose buffer
// fills is dropped from the fan-out; it catches up on its own, from the
// tail while the tail still reaches back to it and from the store
// (changelog.Log.Read in bounded batches) otherwise, then rejoins. It
// loses nothing and never slows the writers or the other watchers. A
// watcher that needs rows the horizon has passed ends with a terminal
// compacted frame.
//
// Wake-ups come from the changelog's OnCommit hook (Hub.Notify) in this
// process and, when the store is a store.Notifier (PostgreSQL
// LISTEN/NOTIFY), from commits made by other processes.
//
// The wire format (see docs/watch.md): the stream opens with
// {"bookmark":N}; rows follow with seq > N, in seq order; {"bookmark":M}
// reports rows consumed but not sent (filtered out, or not readable by the
// token); {} is the idle heartbeat; {"error":{...}} is a terminal frame.
package watch
