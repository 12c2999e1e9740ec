package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// listAnswer is one page of a collection.
type listAnswer struct {
	Items []*store.Record `json:"items"`
	Head  int64           `json:"head"`
	Next  string          `json:"next,omitempty"`
}

// listCursor is what the opaque next token carries: the snapshot head of
// the first page and the last id returned.
type listCursor struct {
	Head  int64  `json:"h"`
	After string `json:"a"`
}

// listEntities answers GET .../entities/{type}?limit=&after=&head=: pages
// of a collection, every page as of the first page's head (or of head=,
// an older head down to the horizon); with watch=1 the
// ndjson watch of that type's rows (resume it from a page's head).
func (s *Server) listEntities(w http.ResponseWriter, r *http.Request) error {
	space, typ := r.PathValue("space"), r.PathValue("type")
	rd, err := s.readerType(r, space, typ)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	watching, err := watchParam(q)
	if err != nil {
		return err
	}
	if watching {
		return s.watchEntities(w, r, rd, space, typ, q)
	}
	if err := checkParams(q, []string{"limit", "after", "head", "watch"}, nil); err != nil {
		return err
	}
	if err := validType(typ); err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	cur, err := decodeListCursor(q)
	if err != nil {
		return err
	}
	known := knownSpace(rd)
	if cur, err = s.asOfParam(r, space, known, q, cur); err != nil {
		return err
	}
	page, err := s.log.List(r.Context(), changelog.ListParams{
		Space: space, Type: typ, After: cur.After, Head: cur.Head, Limit: limit, Allow: rd.CanReadRecord, Known: known,
	})
	if err != nil {
		return err
	}
	out := listAnswer{Items: make([]*store.Record, len(page.Items)), Head: page.Head}
	for i := range page.Items {
		out.Items[i] = recordView(&page.Items[i])
	}
	if page.Next != "" {
		out.Next = encodeListCursor(listCursor{Head: page.Head, After: page.Next})
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func encodeListCursor(c listCursor) string {
	b, _ := json.Marshal(c) // a struct of an int and a string always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeListCursor reads the after parameter (the zero cursor if absent).
func decodeListCursor(q url.Values) (listCursor, error) {
	var c listCursor
	if !q.Has("after") {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(q.Get("after"))
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Head < 0 || c.After == "" || !changelog.ValidID(c.After) {
		return listCursor{}, problem.Param("after", "not a cursor from a previous page's next")
	}
	return c, nil
}
