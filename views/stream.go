package views

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// Watch serves the live view stream of GET .../delta?cursor=C&watch=1:
// ndjson, one line per delta page {"previousCursor", "cursor", "commits"}
// as commits land, {"cursor": C} when only commits with nothing for the
// view passed, the heartbeat {} when idle, and a terminal {"error": …}
// frame (a reset mid-stream is a terminal reset_required frame). Errors
// found before the stream starts (an unknown view, a bad budget, a
// cursor that is malformed or calls for a reset) are returned with
// nothing written, for the caller to render.
func (s *Service) Watch(w http.ResponseWriter, r *http.Request, p DeltaParams) error {
	hub := s.opts.Hub
	if hub == nil {
		return problem.New(problem.Unavailable, "live view streams are not enabled on this server")
	}
	budget, err := checkBudget(p.Budget)
	if err != nil {
		return err
	}
	d, sp, vc, err := s.load(r.Context(), p.Space, p.View, p.Reader)
	if err != nil {
		return err
	}
	cd, err := s.codec(r.Context(), p.Space, p.View)
	if err != nil {
		return err
	}
	cur, err := s.position(cd, sp, vc, p.Cursor)
	if err != nil {
		return err
	}
	fd, err := s.feeds.join(r.Context(), p.Space, hub, d)
	if err != nil {
		return err
	}
	vs := &viewStream{s: s, hub: hub, fd: fd, d: d, vc: vc, bind: cur.bind, cd: cd, reader: p.Reader, budget: budget,
		pos: cur.seq, told: cur.seq}
	if err := hub.ServeFunc(w, r, vs.run); err != nil {
		s.feeds.leave(fd, d)
		return err
	}
	return nil
}

// viewStream is one live view stream's state; only its own goroutine
// touches it.
type viewStream struct {
	s      *Service
	hub    *watch.Hub
	d      *Definition
	vc     Context
	bind   binding
	cd     codec
	reader Reader
	budget int
	fd     *feed
	st     *watch.Stream
	ctx    context.Context // run's
	timer  *time.Timer
	// beat is when the timer fires next.
	beat time.Time
	// pos is the last seq consumed; told the last the client was told of
	// (by a page or a progress frame).
	pos, told int64
}

// frame is a delta page on the stream.
type frame struct {
	PreviousCursor string   `json:"previousCursor"`
	Cursor         string   `json:"cursor"`
	Commits        []Commit `json:"commits"`
	// Acks: as in DeltaPage.
	Acks map[string]int64 `json:"acks,omitempty"`
}

// run feeds the stream until it fails, the client leaves, the hub stops
// or the view's context changes.
func (vs *viewStream) run(ctx context.Context, st *watch.Stream) error {
	fd := vs.fd
	defer vs.s.feeds.leave(fd, vs.d)
	vs.s.observe(Event{Kind: "stream_open", Space: vs.vc.Space, View: vs.vc.View})
	defer vs.s.observe(Event{Kind: "stream_close", Space: vs.vc.Space, View: vs.vc.View})
	vs.st, vs.ctx = st, ctx
	vs.timer = time.NewTimer(vs.hub.Heartbeat())
	vs.beat = time.Now().Add(vs.hub.Heartbeat())
	defer vs.timer.Stop()
	for {
		items, pub, defs, ok := fd.after(vs.pos)
		if !ok {
			read, err := vs.catchUp(ctx)
			if err != nil {
				return err
			}
			if read {
				if err := vs.due(); err != nil {
					return err
				}
				continue // more may follow before the tail reaches back
			}
		} else if len(items) > 0 {
			if err := vs.send(items); err != nil {
				return err
			}
		}
		if err := vs.wait(ctx, pub, defs); err != nil {
			return err
		}
	}
}

// wait blocks until something happens: a publish, a context change, the
// timer (heartbeat or progress), the client leaving or the hub stopping.
func (vs *viewStream) wait(ctx context.Context, pub, defs <-chan struct{}) error {
	select {
	case <-pub:
		return nil
	case <-defs:
		return vs.check(ctx)
	case <-vs.timer.C:
		return vs.tick()
	case <-ctx.Done():
		return ctx.Err()
	case <-vs.st.Stopping():
		return watch.ErrStopping
	}
}

// catchUp reads one batch from the store after pos and sends it. It
// reports whether it read anything, so that run reads on before waiting.
func (vs *viewStream) catchUp(ctx context.Context) (bool, error) {
	vs.s.catchUps.Add(1)
	commits, err := vs.s.st.Commits(ctx, store.CommitsParams{Space: vs.vc.Space, After: vs.pos, Limit: vs.budget, NoReceipts: true})
	if err != nil {
		return false, fmt.Errorf("read commits: %w", err)
	}
	if len(commits) > 0 && commits[0].Seq != vs.pos+1 {
		return false, vs.s.reset(vs.vc.Space, vs.vc.View, HistoryPruned, "the stream's position %d fell below the horizon", vs.pos)
	}
	items := make([]*fcommit, len(commits))
	for i := range commits {
		items[i] = &fcommit{c: commits[i]}
	}
	return len(items) > 0, vs.send(items)
}

// send projects commits in pages of at most budget commits and writes
// them; commits with nothing for the view only move the position.
func (vs *viewStream) send(items []*fcommit) error {
	for len(items) > 0 {
		n := min(len(items), vs.budget)
		if err := vs.page(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

func (vs *viewStream) page(items []*fcommit) error {
	var commits []Commit
	var consumed []*store.Commit
	changes := 0
	for _, it := range items {
		if it.c.Seq <= vs.pos {
			continue
		}
		consumed = append(consumed, &it.c)
		c := vs.project(it)
		if len(c.Changes) > 0 {
			commits = append(commits, c)
			changes += len(c.Changes)
		}
		vs.pos = it.c.Seq
	}
	acks, err := vs.s.acks(vs.ctx, vs.vc.Space, vs.reader, consumed)
	if err != nil {
		return err
	}
	if len(commits) == 0 && acks == nil {
		vs.progressSoon()
		return nil
	}
	if commits == nil {
		commits = []Commit{} // a page that carries only acks
	}
	f := frame{PreviousCursor: vs.cursor(vs.told), Cursor: vs.cursor(vs.pos), Commits: commits, Acks: acks}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode page: %w", err)
	}
	vs.told = vs.pos
	vs.s.observe(Event{Kind: "projected", Space: vs.vc.Space, View: vs.vc.View, Changes: changes})
	return vs.write(append(b, '\n'))
}

// project projects one commit with the feed's judgments when it has
// them for this view, judging it here otherwise.
func (vs *viewStream) project(it *fcommit) Commit {
	if it.x == nil || !it.x.Has(vs.d) {
		return projectCommit(vs.d, &it.c, vs.reader)
	}
	out := Commit{Seq: it.c.Seq}
	for _, j := range it.judged[vs.d] {
		if ch, ok := vs.d.Project(&it.c.Changes[j.change], j.Judgment, vs.reader); ok {
			out.Changes = append(out.Changes, ch)
		}
	}
	return out
}

func (vs *viewStream) cursor(seq int64) string {
	return vs.cd.encodeCursor(cursor{bind: vs.bind, seq: seq})
}

// write writes lines and restarts the heartbeat.
func (vs *viewStream) write(lines []byte) error {
	if err := vs.st.Write(lines); err != nil {
		return err
	}
	vs.arm(vs.hub.Heartbeat())
	return nil
}

// arm sets the timer to fire after d.
func (vs *viewStream) arm(d time.Duration) {
	vs.timer.Stop()
	select {
	case <-vs.timer.C:
	default:
	}
	vs.timer.Reset(d)
	vs.beat = time.Now().Add(d)
}

// progressSoon makes the timer fire within progressEvery, so that a
// stream that consumed only irrelevant commits says where it is.
func (vs *viewStream) progressSoon() {
	if time.Until(vs.beat) > progressEvery {
		vs.arm(progressEvery)
	}
}

// due runs the timer's work if it fired while the stream was busy
// catching up, so a long catch-up still says where it is.
func (vs *viewStream) due() error {
	select {
	case <-vs.timer.C:
		return vs.tick()
	default:
		return nil
	}
}

// tick sends the progress frame when the position moved unreported, the
// heartbeat otherwise.
func (vs *viewStream) tick() error {
	vs.beat = time.Now()
	if vs.pos > vs.told {
		vs.told = vs.pos
		b, err := json.Marshal(map[string]string{"cursor": vs.cursor(vs.pos)})
		if err != nil {
			return fmt.Errorf("encode progress: %w", err)
		}
		return vs.write(append(b, '\n'))
	}
	return vs.write([]byte("{}\n"))
}

// check ends the stream when the view's context changed: deleted views
// end with not_found, changed contexts with the reset they call for.
func (vs *viewStream) check(ctx context.Context) error {
	cur := vs.fd.context(ctx, vs.vc.View)
	if cur.err != nil {
		var pe *problem.Error
		if errors.As(cur.err, &pe) {
			return pe
		}
		return cur.err
	}
	if reason := vs.bind.stale(cur.c); reason != "" {
		return vs.s.reset(vs.vc.Space, vs.vc.View, reason, "the stream was opened under another %s; bootstrap view %q again", staleWhat(reason), vs.vc.View)
	}
	return nil
}
