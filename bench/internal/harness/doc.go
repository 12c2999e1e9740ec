// Package harness holds what every scenario of eddybench shares: the run
// configuration, fresh PostgreSQL databases, eddy instances on either
// store, the embedded peers (NATS JetStream and etcd), time-bounded
// writer loops, latency quantiles and memory readings.
//
// Everything listens on loopback only and lives under one scratch
// directory that the run removes at the end.
package harness
