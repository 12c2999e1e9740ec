package views

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Bootstrap strategies.
const (
	// Frozen materializes the view when the bootstrap opens and stores
	// it, so a retried page answers byte for byte the same, from any
	// process sharing the database, for the session's retry window.
	Frozen = "frozen"
	// Keyset stores nothing: each token carries the context, the
	// watermark and the keyset position, so any process serves any page.
	Keyset = "keyset"
)

// Scan limits.
const (
	// scanChunk bounds the entities one store read of a scan asks for.
	scanChunk = 1000
	// keysetScanBudget bounds the entities one keyset page scans: a page
	// of a very selective view may come back short (even empty) with a
	// next token.
	keysetScanBudget = 20_000
	// framePages is how many frozen pages are stored per write.
	framePages = 64
)

// OpenParams open a bootstrap.
type OpenParams struct {
	Space, View string
	// PageSize is the records per page (default DefaultPageSize, at most
	// MaxPageSize).
	PageSize int
	// Strategy is Frozen (the default, "") or Keyset.
	Strategy string
	// At, if set, is the retained seq to snapshot as of (default: the
	// head when the bootstrap opens).
	At *int64
	// Reader decides what may be sent; it must be allowed every type of
	// the view.
	Reader Reader
}

// Opened answers an open bootstrap: its context and the token of its
// first page.
type Opened struct {
	Context Context `json:"context"`
	Token   string  `json:"token"`
}

// BootstrapPage is one page of a bootstrap. Every page repeats the
// context, its own token and the offset of its first record; only the
// last carries the cursor (positioned at the snapshot's watermark), and
// only the others a next token.
type BootstrapPage struct {
	Context   Context         `json:"context"`
	Token     string          `json:"token"`
	Offset    int64           `json:"offset"`
	Records   json.RawMessage `json:"records"`
	NextToken *string         `json:"nextToken"`
	Cursor    *string         `json:"cursor"`
	Complete  bool            `json:"complete"`
	// Acks, on the complete page only, maps each push client of the
	// requesting principal whose pushes are all in the snapshot to its
	// last ordinal (see DeltaPage.Acks); omitted when there is none.
	Acks map[string]int64 `json:"acks,omitempty"`
}

func (p *OpenParams) normalize() error {
	switch {
	case p.PageSize == 0:
		p.PageSize = DefaultPageSize
	case p.PageSize < 1 || p.PageSize > MaxPageSize:
		return fieldError("pageSize", "want 1 to %d records, got %d", MaxPageSize, p.PageSize)
	}
	switch p.Strategy {
	case "":
		p.Strategy = Frozen
	case Frozen, Keyset:
	default:
		return fieldError("strategy", "unknown strategy %q (want %q or %q)", p.Strategy, Frozen, Keyset)
	}
	return nil
}

// Open opens a bootstrap of a view: it takes the watermark (the head, or
// At) and answers the first page's token. A frozen bootstrap materializes
// the view now.
func (s *Service) Open(ctx context.Context, p OpenParams) (Opened, error) {
	if err := p.normalize(); err != nil {
		return Opened{}, err
	}
	d, sp, vc, err := s.load(ctx, p.Space, p.View, p.Reader)
	if err != nil {
		return Opened{}, err
	}
	w, err := watermark(sp, p.At)
	if err != nil {
		return Opened{}, err
	}
	cd, err := s.codec(ctx, p.Space, p.View)
	if err != nil {
		return Opened{}, err
	}
	out := Opened{Context: vc}
	if p.Strategy == Keyset {
		out.Token = cd.encodeKeyset(keysetToken{bind: vc.binding(), watermark: w, pageSize: p.PageSize})
		return out, nil
	}
	t, err := s.materialize(ctx, sp, d, vc, w, p.PageSize, p.Reader)
	if err != nil {
		return Opened{}, err
	}
	out.Token = cd.encodeFrozen(t)
	return out, nil
}

// watermark resolves At against the space's retained history.
func watermark(sp store.Space, at *int64) (int64, error) {
	if at == nil {
		return sp.Head, nil
	}
	switch {
	case *at < 0 || *at > sp.Head:
		return 0, fieldError("at", "want a seq from the horizon %d to the head %d, got %d", sp.Horizon, sp.Head, *at).With("head", sp.Head)
	case *at < sp.Horizon:
		return 0, &changelog.HistoryUnavailableError{Space: sp.ID, Requested: *at, Horizon: sp.Horizon}
	}
	return *at, nil
}

// Page answers one page of a bootstrap by its token. A token that was
// never issued for this view answers bootstrap_token_unknown, a frozen
// session past its retry window bootstrap_session_expired, and a context
// that changed since the bootstrap opened the reset it calls for.
func (s *Service) Page(ctx context.Context, space, view, token string, r Reader) (BootstrapPage, error) {
	d, sp, vc, err := s.load(ctx, space, view, r)
	if err != nil {
		return BootstrapPage{}, err
	}
	cd, err := s.codec(ctx, space, view)
	if err != nil {
		return BootstrapPage{}, err
	}
	if t, err := cd.decodeFrozen(token); err == nil {
		return s.frozenPage(ctx, cd, sp, vc, t, token, r)
	}
	if t, err := cd.decodeKeyset(token); err == nil {
		return s.keysetPage(ctx, cd, sp, d, vc, t, token, r)
	}
	return BootstrapPage{}, s.reset(space, view, TokenUnknown, "the token was not issued for view %q of space %q (malformed, tampered, or another view's or space's)", view, space)
}

// checkBinding answers the reset a token's stale context calls for.
func (s *Service) checkBinding(b binding, vc Context) error {
	if reason := b.stale(vc); reason != "" {
		return s.reset(vc.Space, vc.View, reason, "the bootstrap was opened under another %s; bootstrap view %q again", staleWhat(reason), vc.View)
	}
	return nil
}

func (s *Service) keysetPage(ctx context.Context, cd codec, sp store.Space, d *Definition, vc Context, t keysetToken, token string, r Reader) (BootstrapPage, error) {
	if err := s.checkBinding(t.bind, vc); err != nil {
		return BootstrapPage{}, err
	}
	if err := s.inHistory(sp, vc.View, t.watermark, "bootstrap snapshot"); err != nil {
		return BootstrapPage{}, err
	}
	if t.pageSize < 1 || t.pageSize > MaxPageSize || t.typeIndex > len(d.Types()) {
		return BootstrapPage{}, s.reset(sp.ID, vc.View, TokenUnknown, "the token does not fit view %q", vc.View)
	}
	pos := scanPos{typeIndex: t.typeIndex, lastID: t.lastID}
	recs, next, done, err := s.scan(ctx, sp.ID, d, t.watermark, pos, t.pageSize, keysetScanBudget, r.CanReadRecord)
	if err != nil {
		return BootstrapPage{}, err
	}
	body, err := encodeRecords(recs)
	if err != nil {
		return BootstrapPage{}, err
	}
	page := BootstrapPage{Context: vc, Token: token, Offset: t.offset, Records: body}
	if done {
		c := cd.encodeCursor(cursor{bind: t.bind, seq: t.watermark})
		page.Cursor, page.Complete = &c, true
		if page.Acks, err = s.bootstrapAcks(ctx, sp.ID, r, t.watermark); err != nil {
			return BootstrapPage{}, err
		}
	} else {
		n := keysetToken{bind: t.bind, watermark: t.watermark, pageSize: t.pageSize,
			offset: t.offset + int64(len(recs)), typeIndex: next.typeIndex, lastID: next.lastID}
		nt := cd.encodeKeyset(n)
		page.NextToken = &nt
	}
	s.observe(Event{Kind: "projected", Space: sp.ID, View: vc.View, Changes: len(recs)})
	return page, nil
}

func (s *Service) frozenPage(ctx context.Context, cd codec, sp store.Space, vc Context, t frozenToken, token string, r Reader) (BootstrapPage, error) {
	if s.now().After(t.expires) {
		return BootstrapPage{}, s.reset(sp.ID, vc.View, SessionExpired, "the bootstrap session expired at %s; bootstrap view %q again", t.expires.Format(time.RFC3339), vc.View)
	}
	if err := s.checkBinding(t.bind, vc); err != nil {
		return BootstrapPage{}, err
	}
	hdr, pg, err := s.st.ViewSessionPage(ctx, sp.ID, hex.EncodeToString(t.session[:]), t.page)
	if errors.Is(err, store.ErrNotFound) {
		return BootstrapPage{}, s.reset(sp.ID, vc.View, SessionExpired, "the bootstrap session is gone (evicted); bootstrap view %q again", vc.View)
	}
	if err != nil {
		return BootstrapPage{}, fmt.Errorf("read bootstrap page: %w", err)
	}
	recs, n := pg.Records, int(-1)
	switch hdr.Reader {
	case "": // judged when served
		if recs, n, err = readable(pg.Records, r); err != nil {
			return BootstrapPage{}, err
		}
	case readerID(r): // judged for this reader when materialized
	default:
		return BootstrapPage{}, s.reset(sp.ID, vc.View, TokenUnknown, "the bootstrap was opened with another token; open one with this token")
	}
	page := BootstrapPage{Context: vc, Token: token, Offset: pg.Offset, Records: recs}
	if t.page+1 < hdr.Pages {
		nt := cd.encodeFrozen(frozenToken{bind: t.bind, session: t.session, page: t.page + 1, expires: t.expires})
		page.NextToken = &nt
	} else {
		c := cd.encodeCursor(cursor{bind: t.bind, seq: hdr.Watermark})
		page.Cursor, page.Complete = &c, true
		if page.Acks, err = s.bootstrapAcks(ctx, sp.ID, r, hdr.Watermark); err != nil {
			return BootstrapPage{}, err
		}
	}
	if n < 0 {
		n = int(min(hdr.Records-pg.Offset, int64(hdr.PageSize)))
	}
	s.observe(Event{Kind: "projected", Space: sp.ID, View: vc.View, Changes: n})
	return page, nil
}

// storedRecord is a record of a stored page as the reader's rule judges
// it: the snapshot a rule sees ({type, id, version, properties, links}),
// and the stored bytes.
type storedRecord struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Version    int64           `json:"version"`
	Properties json.RawMessage `json:"properties"`
	Links      []store.Link    `json:"links"`
}

// readable returns a stored page's records the reader may read: the
// stored bytes themselves when it may read them all.
func readable(stored json.RawMessage, r Reader) (json.RawMessage, int, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(stored, &raws); err != nil {
		return nil, 0, fmt.Errorf("decode stored bootstrap page: %w", err)
	}
	kept := raws[:0]
	for _, raw := range raws {
		var sr storedRecord
		if err := json.Unmarshal(raw, &sr); err != nil {
			return nil, 0, fmt.Errorf("decode stored bootstrap record: %w", err)
		}
		rec := store.Record{Type: sr.Type, ID: sr.ID, Version: sr.Version, Kind: store.KindLive, Properties: sr.Properties, Links: sr.Links}
		if r.CanReadRecord(&rec) {
			kept = append(kept, raw)
		}
	}
	if len(kept) == len(raws) {
		return stored, len(raws), nil
	}
	return joinJSON(kept), len(kept), nil
}

// encodeRecords encodes records as a JSON array, each as its own
// MarshalJSON writes it.
func encodeRecords(recs []store.Record) (json.RawMessage, error) {
	raws := make([]json.RawMessage, len(recs))
	for i := range recs {
		b, err := recs[i].MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encode record %s/%s: %w", recs[i].Type, recs[i].ID, err)
		}
		raws[i] = b
	}
	return joinJSON(raws), nil
}

// joinJSON makes a JSON array of encoded values.
func joinJSON(vals []json.RawMessage) json.RawMessage {
	n := 2
	for _, v := range vals {
		n += len(v) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, v := range vals {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']')
}

// materialize stores a frozen session of the view as of w, cut in pages,
// and returns the token of its first page. For an identified reader the
// records are judged readable now, for it; for an anonymous one every
// page is judged when it is served.
func (s *Service) materialize(ctx context.Context, sp store.Space, d *Definition, vc Context, w int64, pageSize int, r Reader) (frozenToken, error) {
	t := frozenToken{bind: vc.binding(), expires: s.now().Add(s.opts.SessionTTL)}
	if _, err := rand.Read(t.session[:]); err != nil {
		return frozenToken{}, fmt.Errorf("session id: %w", err)
	}
	id := hex.EncodeToString(t.session[:])
	s.expireSessions(ctx)
	allow, reader := func(*store.Record) bool { return true }, readerID(r)
	if reader != "" {
		allow = r.CanReadRecord
	}
	var (
		pos     scanPos
		batch   []store.ViewSessionPage
		offset  int64
		nPages  int
		holding = true
	)
	for holding {
		recs, next, done, err := s.scan(ctx, sp.ID, d, w, pos, pageSize, 0, allow)
		if err != nil {
			return frozenToken{}, err
		}
		if offset += int64(len(recs)); offset > MaxFrozenRecords {
			return frozenToken{}, problem.New(problem.Unprocessable, "view %q holds more than %d records: bootstrap it with strategy %q", vc.View, MaxFrozenRecords, Keyset)
		}
		body, err := encodeRecords(recs)
		if err != nil {
			return frozenToken{}, err
		}
		batch = append(batch, store.ViewSessionPage{Page: nPages, Offset: offset - int64(len(recs)), Records: body})
		nPages++
		pos, holding = next, !done
		if len(batch) == framePages || !holding {
			if err := s.st.ViewSessionPagesPut(ctx, sp.ID, id, t.expires, batch); err != nil {
				return frozenToken{}, fmt.Errorf("store bootstrap pages: %w", err)
			}
			batch = batch[:0]
		}
	}
	hdr := store.ViewSession{Space: sp.ID, ID: id, View: d.Name(), Reader: reader, Watermark: w, PageSize: pageSize, Pages: nPages, Records: offset,
		CreatedAt: s.now(), ExpiresAt: t.expires}
	if err := s.st.ViewSessionPut(ctx, hdr); err != nil {
		return frozenToken{}, fmt.Errorf("store bootstrap session: %w", err)
	}
	return t, nil
}

// expireSessions deletes a bounded number of expired sessions, of every
// space; a failure only delays the cleanup.
func (s *Service) expireSessions(ctx context.Context) {
	if _, err := s.st.ViewSessionsExpire(ctx, s.now(), 16); err != nil && ctx.Err() == nil {
		s.opts.Logger.Warn("views: expire bootstrap sessions", "err", err)
	}
}

// OpenSessions counts the frozen bootstrap sessions not yet expired, of
// every space.
func (s *Service) OpenSessions(ctx context.Context) (int64, error) {
	return s.st.ViewSessionsOpen(ctx, s.now())
}

// scanPos is where a snapshot scan stands: the index of a type among the
// view's types and the last id of that type consumed.
type scanPos struct {
	typeIndex int
	lastID    string
}

// scan returns, in (type, id) order after pos, up to limit records the
// view holds as of seq w and allow admits, projected as the view sends
// them; it scans at most budget entities (0: no bound). It returns the
// position to continue after and whether every type is exhausted. Each
// type's ids are ordered bytewise, the types in name order.
func (s *Service) scan(ctx context.Context, space string, d *Definition, w int64, pos scanPos, limit, budget int, allow func(*store.Record) bool) ([]store.Record, scanPos, bool, error) {
	out := make([]store.Record, 0, limit)
	types := d.Types()
	scanned := 0
	for pos.typeIndex < len(types) && len(out) < limit && (budget == 0 || scanned < budget) {
		if w == 0 { // nothing existed before the first commit
			return out, scanPos{typeIndex: len(types)}, true, nil
		}
		chunk := min(max(limit-len(out), 100), scanChunk)
		page, err := s.log.List(ctx, changelog.ListParams{Space: space, Type: types[pos.typeIndex], After: pos.lastID, Head: w, Limit: chunk,
			Allow: func(rec *store.Record) bool { return d.Holds(rec) && allow(rec) }})
		if err != nil {
			return nil, pos, false, s.scanError(space, d.Name(), err)
		}
		scanned += chunk
		pos, out = advance(pos, page, out, limit)
	}
	for i := range out {
		out[i] = *d.projectRecord(&out[i])
	}
	return out, pos, pos.typeIndex >= len(types), nil
}

// advance takes a list page's records into out, up to limit, and moves
// the position past what it took: to the last record taken when the page
// held more than fit, else past the page (to the next type when the type
// is exhausted).
func advance(pos scanPos, page changelog.ListPage, out []store.Record, limit int) (scanPos, []store.Record) {
	room := limit - len(out)
	if len(page.Items) > room {
		out = append(out, page.Items[:room]...)
		return scanPos{typeIndex: pos.typeIndex, lastID: out[len(out)-1].ID}, out
	}
	out = append(out, page.Items...)
	if page.Next == "" {
		return scanPos{typeIndex: pos.typeIndex + 1}, out
	}
	return scanPos{typeIndex: pos.typeIndex, lastID: page.Next}, out
}

// scanError turns a snapshot that fell below the horizon into the
// history_pruned reset.
func (s *Service) scanError(space, view string, err error) error {
	var hu *changelog.HistoryUnavailableError
	if errors.As(err, &hu) {
		return s.reset(space, view, HistoryPruned, "the bootstrap snapshot %d fell below the horizon %d; bootstrap again", hu.Requested, hu.Horizon)
	}
	return err
}
