package fanout

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
)

// The child process's settings, passed in its environment.
const (
	envClient   = "EDDYBENCH_WATCH_CLIENT" // "eddy" or "etcd"
	envAddr     = "EDDYBENCH_WATCH_ADDR"   // host:port of eddy or etcd
	envToken    = "EDDYBENCH_WATCH_TOKEN"  // eddy's bearer token
	envWatchers = "EDDYBENCH_WATCHERS"
	envConns    = "EDDYBENCH_WATCH_CONNS" // etcd client connections
)

// IsClient reports whether this process is a watch client child.
func IsClient() bool { return os.Getenv(envClient) != "" }

// delivery is one row (eddy seq, etcd revision) reaching one watcher.
type delivery struct{ seq, at int64 }

// watchers is what the child records: per watcher, its deliveries and
// the last seq it got.
type watchers struct {
	got  [][]delivery
	last []atomic.Int64
}

func newWatchers(n int) *watchers {
	return &watchers{got: make([][]delivery, n), last: make([]atomic.Int64, n)}
}

// add records that watcher i got seq now; only i's goroutine calls it.
func (w *watchers) add(i int, seq int64) {
	w.got[i] = append(w.got[i], delivery{seq, time.Now().UnixNano()})
	w.last[i].Store(seq)
}

// result is what the child reports, latencies in milliseconds.
type result struct {
	Deliveries int     `json:"deliveries"`
	Missing    int     `json:"missing"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	AllP50     float64 `json:"allP50"`
	AllP99     float64 `json:"allP99"`
	// ClientUser and ClientSys are the child's processor time, in ms,
	// from its watchers being ready to the last row reaching them.
	ClientUser float64 `json:"clientUser"`
	ClientSys  float64 `json:"clientSys"`
}

// RunClients is the child process: it opens the watchers its environment
// asks for, prints "ready", reads "t SEQ UNIXNANO" lines (when each
// commit was started) until "end SEQ", waits for every watcher to reach
// SEQ, and prints "result {json}". It returns the exit code.
func RunClients() int {
	n, _ := strconv.Atoi(os.Getenv(envWatchers))
	w := newWatchers(n)
	var stop func()
	var err error
	switch os.Getenv(envClient) {
	case "eddy":
		stop, err = openEddy(os.Getenv(envAddr), os.Getenv(envToken), w)
	default:
		conns, _ := strconv.Atoi(os.Getenv(envConns))
		stop, err = openEtcd(os.Getenv(envAddr), max(conns, 1), w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "watch clients:", err)
		return 1
	}
	fmt.Println("ready")
	cpu0 := harness.CPUNow()
	started, end := readCommits()
	missing := w.wait(end, time.Minute)
	cpu := harness.CPUNow().Since(cpu0)
	stop()
	res := w.result(started)
	res.Missing = missing
	res.ClientUser, res.ClientSys = ms(cpu.User), ms(cpu.Sys)
	j, _ := json.Marshal(res)
	fmt.Printf("result %s\n", j)
	return 0
}

// readCommits reads the parent's commit times until "end N".
func readCommits() (map[int64]int64, int64) {
	started := map[int64]int64{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "t":
			seq, _ := strconv.ParseInt(f[1], 10, 64)
			t0, _ := strconv.ParseInt(f[2], 10, 64)
			started[seq] = t0
		case len(f) == 2 && f[0] == "end":
			end, _ := strconv.ParseInt(f[1], 10, 64)
			return started, end
		}
	}
	return started, -1
}

// wait waits until every watcher got end, up to timeout, and returns how
// many did not.
func (w *watchers) wait(end int64, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	missing := 0
	for i := range w.last {
		for w.last[i].Load() < end && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if w.last[i].Load() < end {
			missing++
		}
	}
	return missing
}

// result computes the latencies of every delivery of a timed commit, and
// per commit the latency of its last watcher.
func (w *watchers) result(started map[int64]int64) result {
	var all []time.Duration
	last := map[int64]int64{}
	for _, ds := range w.got {
		for _, d := range ds {
			if t0, ok := started[d.seq]; ok {
				all = append(all, time.Duration(d.at-t0))
				last[d.seq] = max(last[d.seq], d.at)
			}
		}
	}
	var perCommit []time.Duration
	for seq, at := range last {
		perCommit = append(perCommit, time.Duration(at-started[seq]))
	}
	return result{
		Deliveries: len(all),
		P50:        harness.Quantile(all, 0.5), P99: harness.Quantile(all, 0.99),
		AllP50: harness.Quantile(perCommit, 0.5), AllP99: harness.Quantile(perCommit, 0.99),
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
