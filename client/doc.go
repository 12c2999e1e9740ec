// Package client is the Go client of eddy's HTTP API (DESIGN.md section
// 5): typed calls for spaces, type definitions, entities, mutations, the
// changelog (forward pages, history, the raw log), watch streams,
// functions, triggers, deliveries, stances, causes, fences, prune and
// tokens. It exists so that applications, integrations and eddy's own
// tools speak the API one way, with its guarantees kept on the client
// side too:
//
//   - Every answer decodes into a struct of the wire shape; where eddy's
//     own packages define that shape (store.Row, store.Record,
//     store.Receipt, changelog.Mutation, ...), the client uses them
//     through aliases rather than copies.
//   - Every error answer is an *Error with the problem's Code, Reason
//     (details.reason) and Details; a position below the horizon is a
//     *CompactedError wrapping it. IsCode(err, "conflict") branches
//     through any wrapping.
//   - A call that is safe to repeat (a GET, a PUT of a definition, a
//     write carrying an idempotency key) is retried when the server
//     answers 429 or 503 with Retry-After; nothing else is ever retried.
//   - A Watcher resumes by itself from its last row or bookmark after a
//     dropped connection, a resumable terminal frame or an idle timeout,
//     with exponential backoff, and never yields a row twice or skips
//     one: the log is gapless and seq order is visibility order, so the
//     position alone is enough. Falling below the horizon ends it with a
//     *CompactedError, whose answer is to re-list and watch from the
//     list's head.
//
// The client keeps no global state: every call takes a context, the
// http.Client is injectable (Options.HTTPClient), and each call but a
// watch stream is bounded by Options.Timeout.
//
// Space-scoped calls hang off a *Space handle (Client.Space); calls of
// one API area live in one file (entities.go, changes.go, watch.go,
// triggers.go, ...), so later areas (views, push, journal) are added as
// files of their own on the same plumbing: call/do for JSON requests,
// openStream and stream.line for ndjson streams.
package client
