package views

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// Tunables of the live view streams; tests shrink them.
var (
	// feedTail is how many recent commits a space's feed keeps in memory
	// (it trims in steps of this size); a stream further behind reads
	// the store itself.
	feedTail = 512
	// feedBatch is how many commits one read of a feed asks for.
	feedBatch = 500
	// progressEvery is how long a stream that consumed only irrelevant
	// commits may wait before it says so with a {"cursor": C} frame.
	progressEvery = time.Second
)

// feeds holds the live view stream feeds of a Service, one per space
// with open streams in this process.
type feeds struct {
	s  *Service
	mu sync.Mutex
	by map[string]*feed // guarded by mu
}

func (f *feeds) init(s *Service) { f.s, f.by = s, map[string]*feed{} }

// join returns the running feed of space, starting it, and counts one
// more stream on it.
func (f *feeds) join(ctx context.Context, space string, hub *watch.Hub, d *Definition) (*feed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.by[space]
	if fd == nil {
		sp, err := f.s.log.Space(ctx, space)
		if err != nil {
			return nil, err
		}
		fd = newFeed(f, space, hub, sp.Head)
		f.by[space] = fd
		// The view joins before the feed runs: its first read judges
		// with an index (a feed never reads with none).
		fd.add(d)
		go fd.run()
		return fd, nil
	}
	fd.add(d)
	return fd, nil
}

// leave counts one stream less on fd; the last one stops it.
func (f *feeds) leave(fd *feed, d *Definition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd.remove(d) == 0 {
		delete(f.by, fd.space)
		fd.stop()
	}
}

// changed tells the feed of space, if any, that its views, types or
// epoch may have changed: its streams check their contexts again.
func (f *feeds) changed(space string) {
	f.mu.Lock()
	fd := f.by[space]
	f.mu.Unlock()
	if fd != nil {
		fd.bump()
	}
}

// feed is the commit tail of one space shared by the live view streams
// of this process: one goroutine reads each new commit once, judges it
// for every view with an open stream through the view index, and
// publishes it; streams read the tail at their own pace and never block
// it. A stream behind the tail reads the store itself.
type feed struct {
	fs     *feeds
	space  string
	wake   <-chan struct{}
	unsub  func()
	done   chan struct{} // closed by stop
	every  time.Duration // how often contexts are checked again
	logger *slog.Logger

	mu     sync.Mutex
	last   int64                  // last seq read; guarded by mu
	tailLo int64                  // the tail holds tailLo+1 … last; guarded by mu
	tail   []*fcommit             // guarded by mu
	pub    chan struct{}          // closed at each publish; guarded by mu
	defs   chan struct{}          // closed when contexts may have changed; guarded by mu
	views  map[*Definition]int    // open streams per view; guarded by mu
	index  *Index                 // over views; guarded by mu
	broken bool                   // a read failed: streams read the store themselves; guarded by mu
	ctxs   map[string]viewContext // contexts as of the last bump, by view; guarded by mu
	bumps  uint64                 // bumps so far: a context loaded across one is not cached; guarded by mu
	// loaded, when set by tests, runs after context loaded a view's
	// context, before it caches it.
	loaded func()
}

// viewContext is a view's current definition and context, or the error
// that loading them met (not_found for a deleted view).
type viewContext struct {
	d   *Definition
	c   Context
	err error
}

// fcommit is one commit of the tail with the judgments of the views of
// the index x it was judged with: a view of x absent from judged has
// nothing to say about the commit.
type fcommit struct {
	c      store.Commit
	x      *Index
	judged map[*Definition][]changeJudgment
}

// changeJudgment is a view's judgment of one change of a commit.
type changeJudgment struct {
	change int
	Judgment
}

func newFeed(fs *feeds, space string, hub *watch.Hub, head int64) *feed {
	wake, unsub := hub.Subscribe(space)
	return &feed{fs: fs, space: space, wake: wake, unsub: unsub, done: make(chan struct{}), every: hub.Heartbeat(),
		logger: fs.s.opts.Logger, last: head, tailLo: head, pub: make(chan struct{}), defs: make(chan struct{}),
		views: map[*Definition]int{}, ctxs: map[string]viewContext{}}
}

func (fd *feed) add(d *Definition) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.views[d]++; fd.views[d] == 1 {
		fd.reindex()
	}
}

// remove returns the streams left.
func (fd *feed) remove(d *Definition) int {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.views[d]--; fd.views[d] <= 0 {
		delete(fd.views, d)
		fd.reindex()
	}
	n := 0
	for _, c := range fd.views {
		n += c
	}
	return n
}

// reindex rebuilds the index over the open views; mu is held.
func (fd *feed) reindex() {
	defs := make([]*Definition, 0, len(fd.views))
	for d := range fd.views {
		defs = append(defs, d)
	}
	fd.index = NewIndex(defs)
}

func (fd *feed) stop() {
	fd.unsub()
	close(fd.done)
}

// bump wakes every stream to check its context.
func (fd *feed) bump() {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	close(fd.defs)
	fd.defs = make(chan struct{})
	fd.ctxs = map[string]viewContext{}
	fd.bumps++
}

// context returns a view's current definition and context, loaded once
// per bump for all the view's streams. A load that a bump overtook is
// returned but not cached: it may predate the change the bump announced.
func (fd *feed) context(ctx context.Context, view string) viewContext {
	fd.mu.Lock()
	vc, ok := fd.ctxs[view]
	gen := fd.bumps
	fd.mu.Unlock()
	if ok {
		return vc
	}
	vc.d, _, vc.err = fd.fs.s.definition(ctx, fd.space, view)
	if vc.err == nil {
		var sp store.Space
		if sp, vc.err = fd.fs.s.log.Space(ctx, fd.space); vc.err == nil {
			vc.c, vc.err = fd.fs.s.context(ctx, sp, vc.d)
		}
	}
	if fd.loaded != nil {
		fd.loaded()
	}
	if ctx.Err() == nil {
		fd.mu.Lock()
		if fd.bumps == gen {
			fd.ctxs[view] = vc
		}
		fd.mu.Unlock()
	}
	return vc
}

// run reads new commits after every wake-up until the feed stops.
func (fd *feed) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-fd.done
		cancel()
	}()
	// Changes made by other processes (views, types, epochs) append no
	// commit: the contexts are checked again every heartbeat interval.
	tick := time.NewTicker(fd.every)
	defer tick.Stop()
	// Commits between the head the feed started at and its subscription
	// woke nobody: read once at the start.
	if err := fd.pull(ctx); err != nil && ctx.Err() == nil {
		fd.logger.Warn("views: live feed read failed; streams read the store themselves", "space", fd.space, "err", err)
	}
	for {
		select {
		case <-fd.done:
			return
		case <-tick.C:
			fd.bump()
			continue
		case <-fd.wake:
		}
		if err := fd.pull(ctx); err != nil && ctx.Err() == nil {
			fd.logger.Warn("views: live feed read failed; streams read the store themselves", "space", fd.space, "err", err)
		}
	}
}

// pull reads and publishes every commit after last.
func (fd *feed) pull(ctx context.Context) error {
	if err := fd.resync(ctx); err != nil {
		return err
	}
	for {
		fd.mu.Lock()
		from, x := fd.last, fd.index
		fd.mu.Unlock()
		commits, err := fd.fs.s.st.Commits(ctx, store.CommitsParams{Space: fd.space, After: from, Limit: feedBatch, NoReceipts: true})
		if err == nil && len(commits) > 0 && commits[0].Seq != from+1 {
			err = fmt.Errorf("read after %d: got seq %d (pruned?)", from, commits[0].Seq)
		}
		if err != nil {
			fd.breakTail()
			return err
		}
		if len(commits) == 0 {
			return nil
		}
		items := make([]*fcommit, len(commits))
		for i := range commits {
			items[i] = judgeCommit(x, commits[i])
		}
		fd.publish(from, items)
		if len(commits) < feedBatch {
			return nil
		}
	}
}

// judgeCommit judges a commit with every indexed view.
func judgeCommit(x *Index, c store.Commit) *fcommit {
	fc := &fcommit{c: c, x: x}
	for ci := range c.Changes {
		for _, j := range x.Judge(&c.Changes[ci]) {
			if fc.judged == nil {
				fc.judged = map[*Definition][]changeJudgment{}
			}
			d := x.View(j.View)
			fc.judged[d] = append(fc.judged[d], changeJudgment{change: ci, Judgment: j.Judgment})
		}
	}
	return fc
}

// publish appends commits from+1 … to the tail and wakes the streams.
func (fd *feed) publish(from int64, items []*fcommit) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.last != from {
		return
	}
	fd.tail = append(fd.tail, items...)
	fd.last = items[len(items)-1].c.Seq
	if len(fd.tail) > 2*feedTail {
		drop := len(fd.tail) - feedTail
		fd.tail = append([]*fcommit(nil), fd.tail[drop:]...)
		fd.tailLo += int64(drop)
	}
	close(fd.pub)
	fd.pub = make(chan struct{})
}

// resync restarts a broken tail at the head.
func (fd *feed) resync(ctx context.Context) error {
	fd.mu.Lock()
	broken := fd.broken
	fd.mu.Unlock()
	if !broken {
		return nil
	}
	sp, err := fd.fs.s.log.Space(ctx, fd.space)
	if err != nil {
		return err
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.broken, fd.tail, fd.last, fd.tailLo = false, nil, sp.Head, sp.Head
	return nil
}

// breakTail drops the tail after a failed read: streams read the store
// themselves until the next read succeeds from the head.
func (fd *feed) breakTail() {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.broken = true
	close(fd.pub)
	fd.pub = make(chan struct{})
}

// after returns the tail commits after pos, the channels that signal
// the next publish and the next context change, and whether the tail
// reaches back to pos (false: read the store).
func (fd *feed) after(pos int64) (items []*fcommit, pub, defs <-chan struct{}, ok bool) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.broken || pos < fd.tailLo {
		return nil, fd.pub, fd.defs, false
	}
	if pos < fd.last {
		items = fd.tail[pos-fd.tailLo:]
	}
	return items, fd.pub, fd.defs, true
}
