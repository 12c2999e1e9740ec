// Package server is eddy's HTTP layer: net/http ServeMux routes under
// /api/v1, middleware (request ids, access logs, panic recovery, bearer
// token authentication), one problem renderer for every error, and the
// handlers that translate requests into calls on the changelog and auth
// services. Handlers stay thin: decoding, authorization and rendering live
// here, semantics live in the domain packages.
package server
