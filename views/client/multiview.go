package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/views"
)

// MultiViewClient keeps a local replica of several views in one
// ClientState. Each Apply call is one local transaction: the page's
// records, memberships, version and tombstone barriers, replay metadata
// and cursor are published together, or nothing is. It is safe for
// concurrent use (the state serializes transactions).
type MultiViewClient struct {
	st ClientState
}

// New returns a MultiViewClient over st.
func New(st ClientState) *MultiViewClient { return &MultiViewClient{st: st} }

// State returns the client's ClientState.
func (c *MultiViewClient) State() ClientState { return c.st }

// Applied says what applying a page did.
type Applied struct {
	// Duplicate: the page had been applied before; nothing changed.
	Duplicate bool
	// Upserts, Removals and Deletes count the changes applied (an
	// upsert stopped by a barrier still counts: it proves ownership).
	Upserts, Removals, Deletes int
	// Acked counts the pending writes the page's acks dropped.
	Acked int
}

// inTx runs fn in one transaction, committing when it returns nil and
// keep is true.
func (c *MultiViewClient) inTx(ctx context.Context, fn func(tx StateTx) (keep bool, err error)) error {
	tx, err := c.st.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	keep, err := fn(tx)
	if err != nil || !keep {
		return err
	}
	return tx.Commit()
}

// pageRecord is what a bootstrap record must carry.
type pageRecord struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// checkContext refuses a page whose context is not its own.
func checkContext(vc views.Context) error {
	if !vc.Valid() {
		return fmt.Errorf("%w: its context's fingerprint is not the hash of its parts (forged or truncated)", ErrBadPage)
	}
	return nil
}

// decodeRecords splits a bootstrap page's records, checking each names
// an entity and a version.
func decodeRecords(raw json.RawMessage) ([]json.RawMessage, []pageRecord, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, nil, fmt.Errorf("%w: records are not a JSON array", ErrBadPage)
	}
	keys := make([]pageRecord, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &keys[i]); err != nil || keys[i].Type == "" || keys[i].ID == "" || keys[i].Version < 1 {
			return nil, nil, fmt.Errorf("%w: record %d has no type, id or version", ErrBadPage, i)
		}
	}
	return items, keys, nil
}

// checkBootstrap checks a bootstrap page's shape.
func checkBootstrap(p *views.BootstrapPage) error {
	if err := checkContext(p.Context); err != nil {
		return err
	}
	switch {
	case p.Token == "":
		return fmt.Errorf("%w: no token", ErrBadPage)
	case p.Complete && (p.Cursor == nil || *p.Cursor == ""):
		return fmt.Errorf("%w: a complete page without a cursor", ErrBadPage)
	case !p.Complete && (p.NextToken == nil || *p.NextToken == ""):
		return fmt.Errorf("%w: an incomplete page without a next token", ErrBadPage)
	case p.Offset < 0:
		return fmt.Errorf("%w: negative offset", ErrBadPage)
	}
	return nil
}

// ApplyBootstrap applies one bootstrap page, identified by its own
// context. The first page (offset 0) starts the view's bootstrap; each
// later page must be the one the previous page named; the complete page
// stores the cursor the delta continues from. A page applied before is a
// no-op; any other page is ErrGap, a malformed one ErrBadPage.
func (c *MultiViewClient) ApplyBootstrap(ctx context.Context, page views.BootstrapPage) (Applied, error) {
	if err := checkBootstrap(&page); err != nil {
		return Applied{}, err
	}
	raws, keys, err := decodeRecords(page.Records)
	if err != nil {
		return Applied{}, err
	}
	var out Applied
	err = c.inTx(ctx, func(tx StateTx) (bool, error) {
		p, ok, err := tx.Progress(page.Context.Fingerprint)
		if err != nil {
			return false, err
		}
		if ok && p.seen(page.Token) {
			out.Duplicate = true
			return false, nil
		}
		if err := bootstrapContinues(p, ok, &page); err != nil {
			return false, err
		}
		if err := upsertAll(tx, page.Context, keys, raws); err != nil {
			return false, err
		}
		out.Upserts = len(raws)
		if page.Complete {
			if err := dropAcked(tx, page.Context.Space, page.Acks, &out); err != nil {
				return false, err
			}
		}
		p = advanceBootstrap(p, &page, len(raws))
		return true, tx.PutProgress(p)
	})
	return out, err
}

// bootstrapContinues checks that page is the next the view expects.
func bootstrapContinues(p Progress, ok bool, page *views.BootstrapPage) error {
	switch {
	case !ok && page.Offset != 0:
		return fmt.Errorf("%w: view %s has no bootstrap in progress and page starts at %d, not 0", ErrGap, page.Context.View, page.Offset)
	case ok && p.Phase == Streaming:
		return fmt.Errorf("%w: view %s is bootstrapped already; reset the view to bootstrap it again", ErrGap, page.Context.View)
	case ok && (page.Token != p.NextToken || page.Offset != p.NextOffset):
		return fmt.Errorf("%w: view %s expects the bootstrap page at offset %d, got offset %d", ErrGap, page.Context.View, p.NextOffset, page.Offset)
	}
	return nil
}

// advanceBootstrap returns the progress after a bootstrap page.
func advanceBootstrap(p Progress, page *views.BootstrapPage, n int) Progress {
	p.Context = page.Context
	p.remember(page.Token)
	if page.Complete {
		p.Phase, p.Cursor, p.NextToken, p.NextOffset = Streaming, *page.Cursor, "", 0
		return p
	}
	p.Phase, p.NextToken, p.NextOffset = Bootstrapping, *page.NextToken, page.Offset+int64(n)
	return p
}

// checkDelta checks a delta page's shape.
func checkDelta(p *views.DeltaPage) error {
	if err := checkContext(p.Context); err != nil {
		return err
	}
	if p.PreviousCursor == "" || p.Cursor == "" {
		return fmt.Errorf("%w: a delta page without its cursors", ErrBadPage)
	}
	last := int64(0)
	for _, cm := range p.Commits {
		if cm.Seq <= last {
			return fmt.Errorf("%w: commits out of order at seq %d", ErrBadPage, cm.Seq)
		}
		last = cm.Seq
		for _, ch := range cm.Changes {
			if err := checkChange(&ch); err != nil {
				return fmt.Errorf("%w: commit %d: %w", ErrBadPage, cm.Seq, err)
			}
		}
	}
	return nil
}

func checkChange(ch *views.Change) error {
	if ch.Type == "" || ch.ID == "" || ch.Version < 1 {
		return fmt.Errorf("a change without type, id or version")
	}
	switch ch.Kind {
	case views.Upsert:
		if ch.Record == nil || ch.Record.Type != ch.Type || ch.Record.ID != ch.ID {
			return fmt.Errorf("an upsert of %s/%s without its record", ch.Type, ch.ID)
		}
	case views.RemovedFromScope, views.Deleted:
	default:
		return fmt.Errorf("unknown change kind %q", ch.Kind)
	}
	return nil
}

// deltaID is the replay id of a delta page.
func deltaID(p *views.DeltaPage) string { return p.PreviousCursor + " " + p.Cursor }

// ApplyDelta applies one delta page (or live stream page) of a
// bootstrapped view, identified by its own context. It must continue the
// view's stored cursor; a page applied before is a no-op; any other page
// is ErrGap, a malformed one ErrBadPage. Its acks drop the pending writes
// they acknowledge in the same transaction.
func (c *MultiViewClient) ApplyDelta(ctx context.Context, page views.DeltaPage) (Applied, error) {
	if err := checkDelta(&page); err != nil {
		return Applied{}, err
	}
	var out Applied
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		p, ok, err := tx.Progress(page.Context.Fingerprint)
		if err != nil {
			return false, err
		}
		if !ok || p.Phase != Streaming {
			return false, fmt.Errorf("%w: view %s of space %s is not bootstrapped under this context", ErrGap, page.Context.View, page.Context.Space)
		}
		if page.PreviousCursor != p.Cursor {
			if p.seen(deltaID(&page)) {
				out.Duplicate = true
				return false, nil
			}
			return false, fmt.Errorf("%w: the page does not start at view %s's stored cursor (out of order or a gap)", ErrGap, page.Context.View)
		}
		if err := applyCommits(tx, page.Context, page.Commits, &out); err != nil {
			return false, err
		}
		if err := dropAcked(tx, page.Context.Space, page.Acks, &out); err != nil {
			return false, err
		}
		p.Cursor = page.Cursor
		p.remember(deltaID(&page))
		return true, tx.PutProgress(p)
	})
	return out, err
}

// applyCommits applies a page's commits in order.
func applyCommits(tx StateTx, vc views.Context, commits []views.Commit, out *Applied) error {
	for _, cm := range commits {
		for i := range cm.Changes {
			ch := &cm.Changes[i]
			var err error
			switch ch.Kind {
			case views.Upsert:
				var raw json.RawMessage
				if raw, err = json.Marshal(ch.Record); err == nil {
					err = upsert(tx, vc, pageRecord{Type: ch.Type, ID: ch.ID, Version: ch.Version}, raw)
				}
				out.Upserts++
			case views.RemovedFromScope:
				err = removed(tx, vc, ch)
				out.Removals++
			case views.Deleted:
				err = deleted(tx, vc, ch)
				out.Deletes++
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// entity returns what is known of an entity (a fresh Entity if
// nothing).
func entity(tx StateTx, space, typ, id string) (Entity, error) {
	e, ok, err := tx.Entity(space, typ, id)
	if err != nil {
		return Entity{}, err
	}
	if !ok {
		e = Entity{Space: space, Type: typ, ID: id}
	}
	return e, nil
}

// upsert applies a record of view vc at version r.Version.
func upsert(tx StateTx, vc views.Context, r pageRecord, raw json.RawMessage) error {
	e, err := entity(tx, vc.Space, r.Type, r.ID)
	if err != nil {
		return err
	}
	if e, ok := upserted(e, vc, r, raw); ok {
		return tx.PutEntity(e)
	}
	return nil
}

// upsertAll applies the records of a bootstrap page, reading what is
// known of them in one read.
func upsertAll(tx StateTx, vc views.Context, rs []pageRecord, raws []json.RawMessage) error {
	keys := make([]store.EntityKey, len(rs))
	for i, r := range rs {
		keys[i] = store.EntityKey{Type: r.Type, ID: r.ID}
	}
	known, err := tx.EntitiesOf(vc.Space, keys)
	if err != nil {
		return err
	}
	for i, r := range rs {
		e, ok := known[keys[i]]
		if !ok {
			e = Entity{Space: vc.Space, Type: r.Type, ID: r.ID}
		}
		if e, ok := upserted(e, vc, r, raws[i]); ok {
			known[keys[i]] = e // a page naming an entity twice sees its first record
			if err := tx.PutEntity(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// upserted is e after a record of view vc at version r.Version: the view
// owns the entity from now on, unless the entity's tombstone is as new (a
// delete takes precedence over old membership and data); the record
// replaces the local one only when newer. It reports false when nothing
// changes.
func upserted(e Entity, vc views.Context, r pageRecord, raw json.RawMessage) (Entity, bool) {
	if e.Tombstone >= r.Version {
		return e, false
	}
	if !e.owned(vc.Fingerprint) {
		e.Owners = append(e.Owners, vc.Fingerprint)
	}
	if e.Record == nil || r.Version > e.RecordVersion {
		e.Record, e.RecordVersion = raw, r.Version
	}
	e.Version = max(e.Version, r.Version)
	return e, true
}

// disown removes view fp's ownership of e, dropping the record when no
// view owns it any more.
func disown(e *Entity, fp string) {
	e.Owners = slices.DeleteFunc(e.Owners, func(o string) bool { return o == fp })
	if len(e.Owners) == 0 {
		e.Record, e.RecordVersion, e.Owners = nil, 0, nil
	}
}

// removed applies removed_from_scope: only that view's ownership goes.
func removed(tx StateTx, vc views.Context, ch *views.Change) error {
	e, err := entity(tx, vc.Space, ch.Type, ch.ID)
	if err != nil {
		return err
	}
	disown(&e, vc.Fingerprint)
	e.Version = max(e.Version, ch.Version)
	return tx.PutEntity(e)
}

// deleted applies a canonical tombstone: the record and every membership
// go, and the tombstone bars every change at or below its version. Only a
// record newer than the tombstone (the entity was created again, and a
// faster view told so) survives it, losing just this view's ownership.
func deleted(tx StateTx, vc views.Context, ch *views.Change) error {
	e, err := entity(tx, vc.Space, ch.Type, ch.ID)
	if err != nil {
		return err
	}
	e.Tombstone = max(e.Tombstone, ch.Version)
	e.Version = max(e.Version, ch.Version)
	if e.Record != nil && e.RecordVersion > ch.Version {
		disown(&e, vc.Fingerprint)
	} else {
		e.Record, e.RecordVersion, e.Owners = nil, 0, nil
	}
	return tx.PutEntity(e)
}

// Progress returns the stored progress of a view context.
func (c *MultiViewClient) Progress(ctx context.Context, vc views.Context) (Progress, bool, error) {
	var p Progress
	var ok bool
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var err error
		p, ok, err = tx.Progress(vc.Fingerprint)
		return false, err
	})
	return p, ok, err
}

// Cursor returns the delta cursor stored under the context's full
// fingerprint, and false when the view has not completed a bootstrap
// under exactly that context.
func (c *MultiViewClient) Cursor(ctx context.Context, vc views.Context) (string, bool, error) {
	p, ok, err := c.Progress(ctx, vc)
	if err != nil || !ok || p.Phase != Streaming {
		return "", false, err
	}
	return p.Cursor, true, nil
}

// Views returns the progress of every view the client holds.
func (c *MultiViewClient) Views(ctx context.Context) ([]Progress, error) {
	var out []Progress
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var err error
		out, err = tx.Views()
		return false, err
	})
	return out, err
}

// ResetView forgets one view: its progress and its memberships, for a
// compatible filter migration (view_changed, schema_changed,
// bootstrap_session_expired, bootstrap_token_unknown). Records no other
// view owns go; the shared knowledge of versions and tombstones stays,
// so an old page can still not resurrect a delete. Bootstrap the view
// again under its new context afterwards.
func (c *MultiViewClient) ResetView(ctx context.Context, old views.Context) error {
	return c.inTx(ctx, func(tx StateTx) (bool, error) {
		es, err := tx.Entities(old.Space, "")
		if err != nil {
			return false, err
		}
		for i := range es {
			if es[i].owned(old.Fingerprint) {
				disown(&es[i], old.Fingerprint)
				if err := tx.PutEntity(es[i]); err != nil {
					return false, err
				}
			}
		}
		return true, tx.DeleteProgress(old.Fingerprint)
	})
}

// DiscardSpace forgets everything of a space's history: entities,
// versions, tombstones and every view's progress (the pending writes
// stay, to be pushed). It is the answer
// to an epoch change or pruned history (epoch_changed, history_pruned,
// cursor_ahead): the old history no longer addresses the same past.
func (c *MultiViewClient) DiscardSpace(ctx context.Context, space string) error {
	return c.inTx(ctx, func(tx StateTx) (bool, error) { return true, tx.DropSpace(space) })
}

// Get returns the canonical local record of an entity (as a view sent
// it), and false when no view holds it.
func (c *MultiViewClient) Get(ctx context.Context, space, typ, id string) (json.RawMessage, bool, error) {
	var rec json.RawMessage
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		e, ok, err := tx.Entity(space, typ, id)
		if ok {
			rec = e.Record
		}
		return false, err
	})
	return rec, rec != nil, err
}

// Entities returns what the client knows of a space's entities (typ:
// one type, "" every type), records and barriers alike.
func (c *MultiViewClient) Entities(ctx context.Context, space, typ string) ([]Entity, error) {
	var out []Entity
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var err error
		out, err = tx.Entities(space, typ)
		return false, err
	})
	return out, err
}

// Records returns the canonical local records of a space (typ: one type,
// "" every type), ordered by type and id.
func (c *MultiViewClient) Records(ctx context.Context, space, typ string) ([]json.RawMessage, error) {
	es, err := c.Entities(ctx, space, typ)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, e := range es {
		if e.Record != nil {
			out = append(out, e.Record)
		}
	}
	return out, nil
}

// dropAcked drops the pending writes a page acknowledges.
func dropAcked(tx StateTx, space string, acks map[string]int64, out *Applied) error {
	for id, through := range acks {
		ps, err := tx.Pending(space)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.ClientID == id && p.Ordinal <= through {
				out.Acked++
			}
		}
		if err := tx.DropPending(space, id, through); err != nil {
			return err
		}
	}
	return nil
}
