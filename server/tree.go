package server

import (
	"net/http"
	"strconv"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// maxTreeRows bounds the rows parameter of GET .../changes/{seq}/tree.
const maxTreeRows = 2000

// treeAnswer is a row's causal tree: its root and every row the root
// caused, with the deliveries between them.
type treeAnswer struct {
	Seq        int64          `json:"seq"`
	Root       int64          `json:"root"`
	Pruned     bool           `json:"pruned"`
	Truncated  bool           `json:"truncated"`
	Rows       []treeRow      `json:"rows"`
	Deliveries []treeDelivery `json:"deliveries"`
}

// treeRow is one row of a tree: its place in the chain and its wire row
// (left out when the token may not read it: hidden).
type treeRow struct {
	Seq      int64      `json:"seq"`
	Depth    int        `json:"depth"`
	CausedBy int64      `json:"causedBy,omitempty"`
	Trigger  string     `json:"trigger,omitempty"`
	Delivery string     `json:"delivery,omitempty"`
	Hidden   bool       `json:"hidden,omitempty"`
	Row      *store.Row `json:"row,omitempty"`
}

// treeDelivery is one delivery of a tree: seq is the row that caused it;
// the rows whose delivery is its id are what it wrote.
type treeDelivery struct {
	ID        string               `json:"id"`
	Trigger   string               `json:"trigger"`
	Seq       int64                `json:"seq"`
	Status    store.DeliveryStatus `json:"status"`
	Attempts  int                  `json:"attempts"`
	Depth     int                  `json:"depth"`
	LastError string               `json:"lastError,omitempty"`
}

// tree answers GET .../changes/{seq}/tree[?rows=N]: the causal tree the
// row belongs to, from its root (or its oldest retained ancestor, pruned)
// down to the leaves, at most rows rows (default 500, at most 2000;
// truncated says more exist). Like causes it is for trusted readers; rows
// the token may not read keep their place with hidden: true.
func (s *Server) tree(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	if !rd.Principal().Has(auth.ScopeLogRead) {
		return forbidden("the causal tree needs scope %s", auth.ScopeLogRead)
	}
	q := r.URL.Query()
	if err := checkParams(q, []string{"rows"}, nil); err != nil {
		return err
	}
	rows, err := treeRowsParam(q.Get("rows"))
	if err != nil {
		return err
	}
	seq, err := s.causeSeq(r, space)
	if err != nil {
		return err
	}
	t, err := causality.Descend(r.Context(), s.log.Store(), space, seq, rows)
	if err != nil {
		return err
	}
	if !rd.CanReadCommit(&t.Start) {
		return forbidden("token may not read row %d", seq)
	}
	sc, err := s.scopesFor(r.Context(), rd, space)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, treeView(rd, sc, &t))
	return nil
}

// treeRowsParam reads rows: default causality.DefaultTreeRows, 1..2000.
func treeRowsParam(v string) (int, error) {
	if v == "" {
		return causality.DefaultTreeRows, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxTreeRows {
		return 0, problem.Param("rows", "%q is not a row count (want 1..%d)", v, maxTreeRows)
	}
	return n, nil
}

// treeView is the API shape of a tree for rd: rows it may not read keep
// their place (seq, depth, causedBy) with hidden: true, and name the
// trigger and delivery that wrote them only when rd may see that
// trigger's deliveries (a readable row names them, as its actor and
// provenance do); deliveries are listed only of such triggers.
func treeView(rd *auth.Reader, sc *definitionScopes, t *causality.Tree) treeAnswer {
	out := treeAnswer{Seq: t.Seq, Root: t.Root, Pruned: t.Pruned, Truncated: t.Truncated,
		Rows: make([]treeRow, len(t.Commits)), Deliveries: []treeDelivery{}}
	for i := range t.Commits {
		c := &t.Commits[i]
		pv := c.Provenance
		row := treeRow{Seq: c.Seq, Depth: pv.Depth, CausedBy: pv.CausedBy, Hidden: true}
		if rd.CanReadCommit(c) {
			row.Hidden, row.Row = false, &c.Row
		}
		if pv.Trigger != "" && (!row.Hidden || rd.CanSeeDeliveries(sc.triggerNamed(pv.Trigger))) {
			row.Trigger, row.Delivery = pv.Trigger, pv.Delivery
		}
		out.Rows[i] = row
	}
	for _, d := range t.Deliveries {
		if !rd.CanSeeDeliveries(sc.triggerNamed(d.Trigger)) {
			continue
		}
		out.Deliveries = append(out.Deliveries, treeDelivery{ID: d.ID, Trigger: d.Trigger, Seq: d.Seq, Status: d.Status,
			Attempts: d.Attempts, Depth: d.Depth, LastError: d.LastError})
	}
	return out
}
