// Package functions holds the pure parts of eddy's function runtime: function
// definitions, the expr language functions run in, Standard Webhooks
// signing, and the codec and retry rules of webhook deliveries.
//
// Nothing here stores, schedules or runs deliveries: the executor that
// leases triggers and runs deliveries is built on top of this package and
// decides what to do with the values it returns. Everything here is safe
// for concurrent use and, apart from GenerateSecret and the variants that
// read the clock (each has an ...At twin taking the time), deterministic
// given its inputs.
//
// # Functions
//
// ParseFunction decodes and validates a definition as stored under
// PUT .../functions/{name}: an expr function (code compiled once, when it is
// saved), a webhook (URL, signing secret, timeout) or a Go handler. Each
// kind declares the types it writes; CheckWrites refuses actions on any
// other type, which keeps the trigger graph built from those declarations
// honest.
//
// # expr
//
// CompileExpr compiles expr-lang/expr code against a fixed environment:
// row (the wire row), entity and before (records or nil), now (RFC 3339
// UTC) and trigger (its name), plus the builtins put, patch, delete, link
// and unlink, which build actions. A program yields nil, one action or a
// list of actions; Run turns them into validated changelog mutations.
//
// expr has no preemption, so a run is bounded three ways: MaxNodes bounds
// the program at compile time; MemoryBudget bounds what one run allocates
// in expr's own accounting (every array and map element, every range and
// every closure iteration counts); and the deadline of the run's context
// (RunTimeout if it has none) is checked before every closure iteration
// (map, filter, reduce and the like) and before the run starts. A single
// builtin call is never interrupted, but each one's work is bounded by the
// memory budget or by the size of its inputs. Run starts no goroutine.
//
// One hole remains, documented rather than hidden: expr does not meter
// string (or list) concatenation outside closures, so code that doubles a
// string with a chain of let bindings can allocate far beyond the budget
// without looping. Function authors hold the space's admin rights and are
// trusted not to write such code; MaxNodes keeps the chain short but not
// harmless.
//
// # Webhooks
//
// A webhook delivery POSTs the JSON of a Request (BuildRequest) signed with
// the Standard Webhooks scheme (SetHeaders: webhook-id, webhook-timestamp,
// webhook-signature). A 2xx answer may carry {"actions": [...]}, decoded by
// DecodeResponse. Classify maps an answer or a transport error to success,
// retry or failure, and Backoff spaces the retries.
package functions
