package changelog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// DefaultClientRetention is how long an idle push client is kept.
const DefaultClientRetention = 30 * 24 * time.Hour

// ViaPush is the provenance Via of every commit a push appends: together
// with the mutation id <client>:<ordinal> it tells which client's
// ordinal a commit admitted.
const ViaPush = "push"

// MaxClientID bounds a client id's length.
const MaxClientID = 128

// Push makes a WriteRequest a client push: the client, the principal
// pushing (its owner once it first pushed) and each mutation's ordinal.
type Push struct {
	ClientID string
	Owner    string
	Ordinals []int64
}

// PushOutcome answers a push: the client's last ordinal after it, and
// why it stopped early (a gap, or a client owned by another principal).
// Receipts holds one receipt per mutation processed, in order: admitted
// ones and replays (the stored receipt) alike.
type PushOutcome struct {
	LastOrdinal int64
	// Gap is set when the push stopped at an ordinal beyond
	// LastOrdinal+1: nothing from it on was processed.
	Gap *PushGap
	// Forbidden: the client belongs to another principal; nothing was
	// processed.
	Forbidden bool
	// Processed is how many mutations (a prefix) were processed.
	Processed int
}

// PushGap is a refused ordinal: Expected is LastOrdinal+1.
type PushGap struct {
	Expected, Got int64
}

// PushMutationID returns the mutation id of a client's ordinal.
func PushMutationID(clientID string, ordinal int64) string {
	return clientID + ":" + strconv.FormatInt(ordinal, 10)
}

// ParsePushMutationID splits a pushed mutation's id into its client and
// ordinal; ok is false for an id of another form.
func ParsePushMutationID(id string) (clientID string, ordinal int64, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(id[i+1:], 10, 64)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return id[:i], n, true
}

// PushedBy returns the client and ordinal a commit admitted, if a push
// appended it.
func PushedBy(p *store.Provenance) (clientID string, ordinal int64, ok bool) {
	if p.Via != ViaPush {
		return "", 0, false
	}
	return ParsePushMutationID(p.MutationID)
}

// ValidClientID reports whether id may name a push client: 1 to
// MaxClientID printable ASCII characters, no spaces.
func ValidClientID(id string) bool {
	if id == "" || len(id) > MaxClientID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// checkPush validates a push request's shape; nothing is applied when it
// fails.
func checkPush(req *WriteRequest) error {
	p := req.Push
	switch {
	case !ValidClientID(p.ClientID):
		return problem.Param("clientId", "want 1 to %d printable characters without spaces", MaxClientID)
	case p.Owner == "":
		return errors.New("push without an owner")
	case len(p.Ordinals) != len(req.Mutations):
		return fmt.Errorf("push: %d ordinals for %d mutations", len(p.Ordinals), len(req.Mutations))
	case req.Atomic || len(req.Engine) > 0 || req.Effects != nil:
		return errors.New("push: a push is never atomic and has no engine rows or effects")
	}
	for i, o := range p.Ordinals {
		if o < 1 {
			return problem.Param("ordinal", "mutation %d: ordinal %d is below 1", i, o).With("index", i)
		}
		req.Mutations[i].MutationID = PushMutationID(p.ClientID, o)
	}
	req.Provenance.Via = ViaPush
	return nil
}

// applyPush runs a push in the group: ordinals up to the client's last
// answer their stored receipts (a replay appends nothing), the next one
// is applied (a rejection admits it too), and the first beyond it stops
// the push.
func (g *groupState) applyPush(req WriteRequest) WriteResult {
	p := req.Push
	n := len(req.Mutations)
	res := WriteResult{Receipts: make([]store.Receipt, 0, n), Entities: make([]*store.Record, 0, n), Created: make([]bool, 0, n),
		EngineSeqs: []int64{}}
	c, known := g.clients[p.ClientID]
	out := &PushOutcome{LastOrdinal: c.LastOrdinal}
	res.Push = out
	if known && c.Owner != p.Owner {
		out.Forbidden = true
		res.LastSeq = g.head
		return res
	}
	last := c.LastOrdinal
	for i := range req.Mutations {
		m := &req.Mutations[i]
		ord := p.Ordinals[i]
		var rc store.Receipt
		var ent *store.Record
		var created bool
		switch {
		case ord <= last:
			rc, ent = g.replay(m, ord)
		case ord == last+1:
			rc, ent, created = g.applyOne(req, m)
			last = ord
			if rc.Status == store.ReceiptApplied {
				c.LastSeq = rc.Seq
			}
		default:
			out.Gap = &PushGap{Expected: last + 1, Got: ord}
		}
		if out.Gap != nil {
			break
		}
		res.Receipts, res.Entities, res.Created = append(res.Receipts, rc), append(res.Entities, ent), append(res.Created, created)
	}
	out.Processed, out.LastOrdinal = len(res.Receipts), last
	if last > c.LastOrdinal {
		g.clients[p.ClientID] = store.PushClient{Space: req.Space, ID: p.ClientID, Owner: p.Owner, LastOrdinal: last, LastSeq: c.LastSeq, UpdatedAt: g.now}
		g.clientPuts[p.ClientID] = true
	}
	res.LastSeq = g.head
	return res
}

// ReceiptExpired is the reason code of a replayed ordinal whose receipt
// is past the idempotency window: it was admitted, but what it did is
// no longer known.
const ReceiptExpired = "receipt_expired"

// replay answers an ordinal the client already admitted from its stored
// receipt.
func (g *groupState) replay(m *Mutation, ord int64) (store.Receipt, *store.Record) {
	if sr, ok := g.receipts[m.MutationID]; ok {
		return sr.Receipt, sr.Entity
	}
	return store.Receipt{
		MutationID: m.MutationID, Status: store.ReceiptRejected, Accepted: []string{}, Rejected: []store.RejectedProperty{},
		Reason: &store.Reason{Code: ReceiptExpired, Message: fmt.Sprintf("ordinal %d was admitted before; its receipt is past the idempotency window", ord)},
	}, nil
}

// flushClients writes the push clients the group moved.
func (g *groupState) flushClients(ctx context.Context) error {
	for id := range g.clientPuts {
		if err := g.tx.ClientPut(ctx, g.clients[id]); err != nil {
			return fmt.Errorf("store client %s: %w", id, err)
		}
	}
	return nil
}

// Client returns a push client of a space, or not_found.
func (l *Log) Client(ctx context.Context, space, id string) (store.PushClient, error) {
	c, err := l.st.ClientGet(ctx, space, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.PushClient{}, problem.New(problem.NotFound, "client %q not found in space %q", id, space)
	}
	return c, err
}

// ClientsOf returns the push clients of space owned by owner, by id.
func (l *Log) ClientsOf(ctx context.Context, space, owner string) (map[string]store.PushClient, error) {
	return l.st.ClientsOf(ctx, space, owner)
}

// expireClients forgets the push clients idle since before cutoff.
func (l *Log) expireClients(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, err := l.st.ClientsExpire(ctx, cutoff, ExpireBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("expire clients: %w", err)
		}
		if n < ExpireBatch {
			return total, ctx.Err()
		}
	}
}
