// Package eddy is the library entry of eddy, a trigger and functions
// runtime built on one changelog.
//
// Open wires a store driver (embedded SQLite by default, PostgreSQL when
// Config.DatabaseURL says so), runs its migrations and builds the services
// on top of it: the changelog (every committed write appends one row to a
// gapless per-space log in the same transaction) and the token service.
// The eddy binary (cmd/eddy) serves them over HTTP; a Go program can embed
// them directly:
//
//	e, err := eddy.Open(ctx, eddy.Config{DataDir: "./eddy-data"})
//	if err != nil {
//		return err
//	}
//	defer e.Close()
//	res, err := e.Log().Write(ctx, changelog.WriteRequest{...})
package eddy
