// Package console is eddy's web console: a few static pages and a small
// hand-written script, embedded in the binary with go:embed, so a
// `go install` user gets it with no build step. `eddy serve` mounts it at
// "/" (server.Server does, next to /api/v1).
//
// The console holds no authority of its own. Its files are public (they
// carry no data); everything it shows it reads from the same HTTP API
// with the bearer token the operator signs in with, kept in the
// browser's session storage and sent in the Authorization header, never
// in a URL. So it shows exactly what that token may see, and it hides the
// actions the token may not take (the API refuses them anyway).
//
// Every response carries a strict content security policy (scripts and
// styles only from the console's own files, no inline script, no
// framing) and the usual hardening headers; see Headers.
//
// Pages are real URLs an operator can pass on: /spaces/{space}/stream
// (with the API's filters in the query), /spaces/{space}/rows/{seq},
// /spaces/{space}/rows/{seq}/chain, /spaces/{space}/triggers[/{name}],
// /spaces/{space}/deliveries, /spaces/{space}/entities[/{type}[/{id}]]
// and /spaces/{space}/views[/{name}]. The server answers each with the same page
// shell; the script renders the page the path names.
package console
