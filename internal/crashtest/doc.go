// Package crashtest holds the crash test: a writer process (./writer) is
// killed with SIGKILL while it writes, and the store it wrote must hold
// every acknowledged commit, whole, with a gapless log and a head that
// the next write continues from. It runs against both drivers.
package crashtest
