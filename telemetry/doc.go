// Package telemetry owns eddy's metrics and trace export: an
// OpenTelemetry MeterProvider exported in the Prometheus text format on a
// registry of its own, the instruments eddy records into, and the OTLP
// trace pipeline.
//
// Instruments are named as they are scraped (no suffixes are added) and
// carry no high-cardinality labels: no space, entity id or seq, and HTTP
// routes are ServeMux patterns, never raw paths.
//
//	eddy_commit_duration_seconds           histogram  committed group transactions, first WriteBegin to Commit
//	eddy_commit_groups_total{outcome}      counter    group transactions; outcome is committed or failed
//	eddy_commits_total                     counter    commits appended
//	eddy_write_rejections_total            counter    rejected receipts
//	eddy_watchers                          gauge      open watch streams
//	eddy_http_requests_total{method,route,status}  counter
//	eddy_http_request_duration_seconds{method,route}  histogram
//
// The registry also carries the Go runtime and process collectors
// (go_*, process_*).
//
// StartTracing installs the process's TracerProvider when the standard
// OpenTelemetry environment asks for trace export (OTLP over HTTP), and
// the W3C trace context propagator either way.
package telemetry
