//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/store/sqlite"
)

// BenchmarkWritePath measures the whole HTTP write path in process: one
// POST of one put of a new entity to /api/v1/spaces/default/mutations,
// with a writer token, the access log formatted at info level and
// discarded, on SQLite with synchronous=NORMAL (no fsync, so the
// figure is the CPU of the path rather than the disk). Besides ns/op it
// reports the process CPU time (user and system) per request.
func BenchmarkWritePath(b *testing.B) {
	lg, as, secret := benchSpace(b, sqlite.Options{Synchronous: "NORMAL"}, auth.CreateParams{Space: "default", Role: auth.RoleWriter})
	h := newServer(b, Config{Log: lg, Auth: as, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "bench"}).Handler()
	var n int
	start := cpuTime(b)
	for b.Loop() {
		n++
		s := strconv.Itoa(n)
		body := `{"mutations":[{"op":"put","type":"note","entityId":"h` + s + `","properties":{"n":` + s + `,"title":"row ` + s + `"}}]}`
		r := httptest.NewRequest(http.MethodPost, "/api/v1/spaces/default/mutations", bytes.NewReader([]byte(body)))
		r.Header.Set("Authorization", "Bearer "+secret)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(n), "cpu-µs/op")
}

// cpuTime returns the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
