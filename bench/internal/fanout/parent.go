package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/kprof"
)

// figures is one system's result at one watcher count.
type figures struct {
	result
	// GoKiB and RSSKiB are the server's memory per idle watcher.
	GoKiB, RSSKiB float64
	// ServerUser and ServerSys are the server process's processor time,
	// in ms, from the first commit to the last row reaching every
	// watcher (commits included).
	ServerUser, ServerSys float64
	// Kernel is the profile of the same span when the load asked for
	// one (load.profile).
	Kernel kernelProfile
}

// kernelProfile is where the server's and the clients' samples went
// over the commits, or why there is no profile.
type kernelProfile struct {
	Server, Clients kprof.Split
	Err             error
}

// perCommit returns the server's and the clients' processor time per
// commit, in ms, and the server's share spent in the kernel.
func (f figures) perCommit(commits int) (server, clients, kernel float64) {
	s := f.ServerUser + f.ServerSys
	if s > 0 {
		kernel = f.ServerSys / s
	}
	return s / float64(commits), (f.ClientUser + f.ClientSys) / float64(commits), kernel
}

// kernelPerCommit returns the processor time per commit, in ms, that
// the server and the clients spent in the kernel: what would remain of
// the work behind a commit with no user-space time at all.
func (f figures) kernelPerCommit(commits int) float64 {
	return (f.ServerSys + f.ClientSys) / float64(commits)
}

// commit appends one change the watchers see and returns its seq (eddy)
// or revision (etcd).
type commit func(ctx context.Context, i int) (int64, error)

// load is how hard the parent writes while the watchers listen, and
// whether the commits are profiled (kprof).
type load struct {
	rate, commits int
	profile       bool
}

// drive starts the child with env, waits for its watchers, measures the
// memory they cost this process, commits at the load's rate, tells the
// child when each commit started and returns what it measured.
func drive(ctx context.Context, c harness.Config, env []string, n int, l load, write commit) (figures, error) {
	before := harness.MemNow()
	child, err := harness.StartChild(ctx, c, "watch clients", env)
	if err != nil {
		return figures{}, err
	}
	defer child.Close() //nolint:errcheck // the result is read before; its exit adds nothing
	if _, err := child.Expect("ready"); err != nil {
		return figures{}, err
	}
	var f figures
	f.GoKiB, f.RSSKiB = before.PerItem(harness.MemNow(), n)
	f.GoKiB, f.RSSKiB = f.GoKiB/1024, f.RSSKiB/1024
	var lines strings.Builder
	var last int64
	prof := startProfile(ctx, l.profile, os.Getpid(), child.Pid())
	defer prof.stop(ctx) // on failure; a no-op once stopped below
	cpu0 := harness.CPUNow()
	err = harness.Paced(ctx, l.rate, l.commits, func(i int) error {
		t0 := time.Now().UnixNano()
		seq, err := write(ctx, i)
		fmt.Fprintf(&lines, "t %d %d\n", seq, t0)
		last = seq
		return err
	})
	if err != nil {
		return f, err
	}
	fmt.Fprintf(&lines, "end %d\n", last)
	if err := child.Send(lines.String()); err != nil {
		return f, err
	}
	j, err := child.Expect("result ")
	if err != nil {
		return f, err
	}
	cpu := harness.CPUNow().Since(cpu0)
	f.Kernel = prof.stop(ctx)
	f.ServerUser, f.ServerSys = ms(cpu.User), ms(cpu.Sys)
	return f, json.Unmarshal([]byte(j), &f.result)
}

// profiling is a kernel profile of the server (this process) and the
// clients under way, or why none is.
type profiling struct {
	s               *kprof.Session
	server, clients int
	err             error
}

// startProfile starts sampling server and clients when on; a profile
// that cannot be taken is reported by stop, never failing the scenario.
func startProfile(ctx context.Context, on bool, server, clients int) *profiling {
	p := &profiling{server: server, clients: clients}
	if !on {
		return p
	}
	if p.s, p.err = kprof.Start(ctx, server, clients); p.err != nil {
		return p
	}
	if p.err = p.s.Enable(); p.err != nil {
		_, _ = p.s.Stop(ctx)
		p.s = nil
	}
	return p
}

// stop ends the profile and returns what it found; later calls end
// nothing.
func (p *profiling) stop(ctx context.Context) kernelProfile {
	if p.s == nil {
		return kernelProfile{Err: p.err}
	}
	s := p.s
	p.s = nil
	if err := s.Disable(); err != nil {
		_, _ = s.Stop(ctx)
		return kernelProfile{Err: err}
	}
	splits, err := s.Stop(ctx)
	if err != nil {
		return kernelProfile{Err: err}
	}
	return kernelProfile{Server: splits[p.server], Clients: splits[p.clients]}
}

// eddyFigures serves eddy on SQLite and watches Space with n streams.
func eddyFigures(ctx context.Context, c harness.Config, n int, l load) (_ figures, err error) {
	e, err := harness.OpenEddy(ctx, c, harness.SQLite)
	if err != nil {
		return figures{}, err
	}
	defer e.Close()
	srv, err := e.Serve(ctx)
	if err != nil {
		return figures{}, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
	env := []string{envClient + "=eddy", envAddr + "=" + strings.TrimPrefix(srv.URL, "http://"), envToken + "=" + srv.Token,
		envWatchers + "=" + strconv.Itoa(n)}
	return drive(ctx, c, env, n, l, func(ctx context.Context, i int) (int64, error) {
		return e.Put(ctx, "task", "t"+strconv.Itoa(i), []byte(`{"v":1}`))
	})
}

// etcdConns is how many client connections the etcd watchers share.
const etcdConns = 16

// etcdFigures starts etcd and watches prefix with n watchers; commits
// are puts through the embedded server's API, in process like eddy's.
func etcdFigures(ctx context.Context, c harness.Config, n int, l load) (figures, error) {
	x, err := harness.StartEtcd(c)
	if err != nil {
		return figures{}, err
	}
	defer x.Close()
	env := []string{envClient + "=etcd", envAddr + "=" + strings.TrimPrefix(x.Endpoint, "http://"),
		envWatchers + "=" + strconv.Itoa(n), envConns + "=" + strconv.Itoa(etcdConns)}
	return drive(ctx, c, env, n, l, func(ctx context.Context, i int) (int64, error) {
		res, err := x.Server.Server.Put(ctx, &pb.PutRequest{Key: []byte(prefix + strconv.Itoa(i)), Value: []byte(`{"v":1}`)})
		if err != nil {
			return 0, errors.Join(errors.New("etcd put"), err)
		}
		return res.Header.Revision, nil
	})
}
