package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/changelog"
	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/store"
)

// Meta keys the client keeps per space.
const (
	metaClientID    = "clientId"
	metaNextOrdinal = "nextOrdinal"
)

// MaxPushBatch is how many pending writes one push sends.
const MaxPushBatch = 100

// Pusher sends a push (POST .../push); *client.Space implements it.
type Pusher interface {
	Push(ctx context.Context, clientID string, ms []api.PushMutation) (api.PushResult, error)
}

// ClientID returns the space's push client id, making (and storing) a
// fresh random one on first use.
func (c *MultiViewClient) ClientID(ctx context.Context, space string) (string, error) {
	var id string
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var made bool
		var err error
		id, made, err = clientID(tx, space)
		return made, err
	})
	return id, err
}

// clientID reads the space's client id, making one when there is none.
func clientID(tx StateTx, space string) (string, bool, error) {
	id, ok, err := tx.Meta(space, metaClientID)
	if err != nil || ok {
		return id, false, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("client id: %w", err)
	}
	id = "c-" + hex.EncodeToString(b[:])
	if err := tx.PutMeta(space, metaClientID, id); err != nil {
		return "", false, err
	}
	return id, true, tx.PutMeta(space, metaNextOrdinal, "1")
}

// nextOrdinal reads and advances the space's ordinal counter.
func nextOrdinal(tx StateTx, space string) (int64, error) {
	v, _, err := tx.Meta(space, metaNextOrdinal)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		n = 1
	}
	return n, tx.PutMeta(space, metaNextOrdinal, strconv.FormatInt(n+1, 10))
}

// Write queues a local mutation of a space under the next ordinal, in one
// local transaction. It is visible at once in the optimistic reads and
// stays pending until Push sends it and a delta page acknowledges it (or
// its receipt says it appended nothing).
func (c *MultiViewClient) Write(ctx context.Context, space string, m changelog.Mutation) (Pending, error) {
	if err := changelog.ValidateMutation(&m); err != nil {
		return Pending{}, err
	}
	if m.MutationID != "" {
		return Pending{}, errors.New("views client: a local write has no mutation id (its push gives it <clientId>:<ordinal>)")
	}
	var p Pending
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		id, _, err := clientID(tx, space)
		if err != nil {
			return false, err
		}
		ord, err := nextOrdinal(tx, space)
		if err != nil {
			return false, err
		}
		p = Pending{Space: space, ClientID: id, Ordinal: ord, Mutation: m}
		return true, tx.PutPending(p)
	})
	return p, err
}

// Pending returns a space's pending writes in ordinal order.
func (c *MultiViewClient) Pending(ctx context.Context, space string) ([]Pending, error) {
	var out []Pending
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var err error
		out, err = tx.Pending(space)
		return false, err
	})
	return out, err
}

// PushReport says what one Push did.
type PushReport struct {
	// Sent is how many pending writes were sent.
	Sent int
	// LastOrdinal is the server's last admitted ordinal of the client.
	LastOrdinal int64
	// Rejected are the writes the server refused for good (their
	// receipts say why); they were dropped: nothing canonical follows.
	Rejected []RejectedWrite
	// Reregistered: the server had forgotten the client (it was idle
	// past the client retention), so the pending writes were renumbered
	// under a new client id and sent again.
	Reregistered bool
}

// RejectedWrite is a pending write with its rejected receipt.
type RejectedWrite struct {
	Pending Pending
	Receipt store.Receipt
}

// Push sends the space's pending writes in ordinal order, in batches of
// MaxPushBatch. Pushing again after a lost answer is safe: the server
// answers admitted ordinals from their stored receipts. Writes whose
// receipts append nothing (rejected, no-op) are dropped now; applied ones
// stay pending until a delta page acks them, so the optimistic read never
// flickers back to the old canonical state.
func (c *MultiViewClient) Push(ctx context.Context, space string, to Pusher) (PushReport, error) {
	var rep PushReport
	for {
		ps, err := c.Pending(ctx, space)
		if err != nil {
			return rep, err
		}
		ps = unsent(ps, rep.LastOrdinal)
		if len(ps) == 0 {
			return rep, nil
		}
		ps = ps[:min(len(ps), MaxPushBatch)]
		res, err := to.Push(ctx, ps[0].ClientID, pushMutations(ps))
		var gap *api.GapError
		if errors.As(err, &gap) && gap.Expected < ps[0].Ordinal && !rep.Reregistered {
			rep.Reregistered = true
			if err := c.reregister(ctx, space); err != nil {
				return rep, err
			}
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("push: %w", err)
		}
		rep.Sent += len(ps)
		rep.LastOrdinal = res.LastOrdinal
		if err := c.settle(ctx, ps, res.Receipts, &rep); err != nil {
			return rep, err
		}
	}
}

// unsent drops the writes at or below the ordinal a push of this call
// already admitted (they wait for their ack).
func unsent(ps []Pending, admitted int64) []Pending {
	for len(ps) > 0 && ps[0].Ordinal <= admitted {
		ps = ps[1:]
	}
	return ps
}

func pushMutations(ps []Pending) []api.PushMutation {
	out := make([]api.PushMutation, len(ps))
	for i, p := range ps {
		out[i] = api.PushMutation{Ordinal: p.Ordinal, Mutation: p.Mutation}
	}
	return out
}

// settle drops the sent writes whose receipts appended nothing.
func (c *MultiViewClient) settle(ctx context.Context, ps []Pending, rcs []store.Receipt, rep *PushReport) error {
	return c.inTx(ctx, func(tx StateTx) (bool, error) {
		for i, rc := range rcs {
			if i >= len(ps) || rc.Status == store.ReceiptApplied {
				continue
			}
			if rc.Status == store.ReceiptRejected {
				rep.Rejected = append(rep.Rejected, RejectedWrite{Pending: ps[i], Receipt: rc})
			}
			if err := dropOne(tx, ps[i]); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// dropOne removes one pending write (and none after it).
func dropOne(tx StateTx, p Pending) error {
	rest, err := tx.Pending(p.Space)
	if err != nil {
		return err
	}
	if err := tx.DropPending(p.Space, p.ClientID, p.Ordinal); err != nil {
		return err
	}
	for _, q := range rest {
		if q.ClientID == p.ClientID && q.Ordinal < p.Ordinal {
			if err := tx.PutPending(q); err != nil { // restore the earlier ones
				return err
			}
		}
	}
	return nil
}

// reregister gives the space a new client id and renumbers its pending
// writes from 1 under it.
func (c *MultiViewClient) reregister(ctx context.Context, space string) error {
	return c.inTx(ctx, func(tx StateTx) (bool, error) {
		ps, err := tx.Pending(space)
		if err != nil {
			return false, err
		}
		for _, p := range ps {
			if err := tx.DropPending(space, p.ClientID, p.Ordinal); err != nil {
				return false, err
			}
		}
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return false, err
		}
		id := "c-" + hex.EncodeToString(b[:])
		if err := tx.PutMeta(space, metaClientID, id); err != nil {
			return false, err
		}
		for i, p := range ps {
			p.ClientID, p.Ordinal = id, int64(i+1)
			if err := tx.PutPending(p); err != nil {
				return false, err
			}
		}
		return true, tx.PutMeta(space, metaNextOrdinal, strconv.Itoa(len(ps)+1))
	})
}

// Optimistic is a record as the application should show it: the
// canonical local record with the pending writes applied over it.
type Optimistic struct {
	Record store.Record
	// Pending: a pending write changed it (it is not canonical yet).
	Pending bool
}

// Read returns the optimistic view of one entity: canonical state plus
// pending writes; false when it does not exist there (never held, or
// deleted by a pending write).
func (c *MultiViewClient) Read(ctx context.Context, space, typ, id string) (Optimistic, bool, error) {
	all, err := c.optimistic(ctx, space)
	if err != nil {
		return Optimistic{}, false, err
	}
	o, ok := all[store.EntityKey{Type: typ, ID: id}]
	return o, ok, nil
}

// List returns the optimistic view of a space's entities of a type ("":
// every type), ordered by type and id.
func (c *MultiViewClient) List(ctx context.Context, space, typ string) ([]Optimistic, error) {
	all, err := c.optimistic(ctx, space)
	if err != nil {
		return nil, err
	}
	var out []Optimistic
	for _, o := range all {
		if typ == "" || o.Record.Type == typ {
			out = append(out, o)
		}
	}
	sortOptimistic(out)
	return out, nil
}

// optimistic builds the space's optimistic state in one read
// transaction.
func (c *MultiViewClient) optimistic(ctx context.Context, space string) (map[store.EntityKey]Optimistic, error) {
	var es []Entity
	var ps []Pending
	err := c.inTx(ctx, func(tx StateTx) (bool, error) {
		var err error
		if es, err = tx.Entities(space, ""); err != nil {
			return false, err
		}
		ps, err = tx.Pending(space)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	recs := make(map[store.EntityKey]store.Record, len(es))
	for _, e := range es {
		if e.Record == nil {
			continue
		}
		var r store.Record
		if err := json.Unmarshal(e.Record, &r); err != nil {
			return nil, fmt.Errorf("local record %s/%s: %w", e.Type, e.ID, err)
		}
		r.Kind = store.KindLive
		recs[r.Key()] = r
	}
	return applyPending(recs, ps), nil
}

// noSchema is the schema of an optimistic apply: the server judges the
// write against the real one; locally every type accepts any object.
func noSchema(string) *changelog.TypeDef { return nil }

// applyPending applies the pending writes in order over the canonical
// records.
func applyPending(recs map[store.EntityKey]store.Record, ps []Pending) map[store.EntityKey]Optimistic {
	changed := map[store.EntityKey]bool{}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, p := range ps {
		base := int64(0)
		for _, k := range p.Mutation.Keys() {
			base = max(base, recs[k].Version)
		}
		out := changelog.Apply(p.Mutation, changelog.ApplyEnv{Seq: base + 1, Now: now, Schema: noSchema, Records: recs})
		for _, r := range out.Records {
			recs[r.Key()] = r
			changed[r.Key()] = true
		}
	}
	res := make(map[store.EntityKey]Optimistic, len(recs))
	for k, r := range recs {
		if r.Kind == store.KindLive {
			res[k] = Optimistic{Record: r, Pending: changed[k]}
		}
	}
	return res
}
