package changelog

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// FilterParams are the query parameters ParseFilter reads.
var FilterParams = []string{"types", "ops", "actors", "excludeTypes", "excludeOps", "excludeActors", "q", "entityType", "entityId"}

// MaxQueryLen bounds the q filter parameter, in characters.
const MaxQueryLen = 256

// rowOps are every op a wire row can carry.
var rowOps = []string{OpPut, OpPatch, OpDelete, OpLink, OpUnlink, OpMerge, OpSplit, OpFire, OpPark}

// Filter selects wire rows. Watch and history share it. Rows a filter
// rejects are consumed and dropped: cursors still move past them.
type Filter struct {
	Types         []string
	Ops           []string
	Actors        []string
	ExcludeTypes  []string
	ExcludeOps    []string
	ExcludeActors []string
	// Q matches free text (case-insensitive) in type, entityId, actor and
	// payload.
	Q          string
	EntityType string
	EntityID   string
	// Allow, if set, is a further predicate: what a principal may read,
	// a CEL `when`. It runs after everything else.
	Allow func(*store.Row) bool
	// NeedsCommit, if set, picks the rows (among those Match selects)
	// that can be judged only on their whole commit; CommitAllow then
	// judges those commits. Set both or neither. Readers use
	// (*Log).Keep and (*Log).Admit, which read the commits.
	NeedsCommit func(*store.Row) bool
	CommitAllow func(*store.Commit) bool
}

// ParseFilter reads the filter parameters of q (plural, repeated or comma
// separated). Bad values are bad_request naming the parameter.
func ParseFilter(q url.Values) (Filter, error) {
	var f Filter
	lists := []struct {
		name  string
		dst   *[]string
		check func(name, v string) error
	}{
		{"types", &f.Types, checkTypeParam},
		{"ops", &f.Ops, checkOpParam},
		{"actors", &f.Actors, nil},
		{"excludeTypes", &f.ExcludeTypes, checkTypeParam},
		{"excludeOps", &f.ExcludeOps, checkOpParam},
		{"excludeActors", &f.ExcludeActors, nil},
	}
	for _, l := range lists {
		vals, err := listParam(q, l.name, l.check)
		if err != nil {
			return Filter{}, err
		}
		*l.dst = vals
	}
	if err := parseEntityParams(q, &f); err != nil {
		return Filter{}, err
	}
	qs, err := singleParam(q, "q")
	if err != nil {
		return Filter{}, err
	}
	if utf8.RuneCountInString(qs) > MaxQueryLen {
		return Filter{}, problem.Param("q", "at most %d characters", MaxQueryLen)
	}
	f.Q = qs
	return f, nil
}

// listParam splits a plural parameter's repeated, comma-separated values,
// ignoring empty items and repeats.
func listParam(q url.Values, name string, check func(name, v string) error) ([]string, error) {
	var out []string
	for _, raw := range q[name] {
		for item := range strings.SplitSeq(raw, ",") {
			item = strings.TrimSpace(item)
			if item == "" || slices.Contains(out, item) {
				continue
			}
			if check != nil {
				if err := check(name, item); err != nil {
					return nil, err
				}
			}
			out = append(out, item)
		}
	}
	return out, nil
}

func checkTypeParam(name, v string) error {
	if !ValidTypeName(v) {
		return problem.Param(name, "invalid type name %q", v)
	}
	return nil
}

func checkOpParam(name, v string) error {
	if !slices.Contains(rowOps, v) {
		return problem.Param(name, "unknown op %q (want one of %s)", v, strings.Join(rowOps, ", "))
	}
	return nil
}

// singleParam returns a parameter given at most once ("" if absent).
func singleParam(q url.Values, name string) (string, error) {
	vals := q[name]
	if len(vals) > 1 {
		return "", problem.Param(name, "given more than once")
	}
	if len(vals) == 0 {
		return "", nil
	}
	return vals[0], nil
}

func parseEntityParams(q url.Values, f *Filter) error {
	_, hasType := q["entityType"]
	_, hasID := q["entityId"]
	switch {
	case !hasType && !hasID:
		return nil
	case !hasType:
		return problem.Param("entityType", "required with entityId (an id alone names no entity)")
	case !hasID:
		return problem.Param("entityId", "required with entityType")
	}
	typ, err := singleParam(q, "entityType")
	if err != nil {
		return err
	}
	id, err := singleParam(q, "entityId")
	if err != nil {
		return err
	}
	if !ValidTypeName(typ) {
		return problem.Param("entityType", "invalid type name %q", typ)
	}
	if !ValidID(id) {
		return problem.Param("entityId", "invalid entity id %q", id)
	}
	f.EntityType, f.EntityID = typ, id
	return nil
}

// Match reports whether f selects r.
func (f *Filter) Match(r *store.Row) bool {
	if !f.matchFields(r) {
		return false
	}
	if f.Q != "" && !matchText(r, strings.ToLower(f.Q)) {
		return false
	}
	return f.Allow == nil || f.Allow(r)
}

// Verdict is what Filter.Judge makes of one row.
type Verdict uint8

const (
	// Rejected means the filter does not select the row.
	Rejected Verdict = iota
	// Selected means the filter selects the row.
	Selected
	// AskCommit means the row alone does not decide: CommitAllow judges
	// its commit ((*Log).Admit and (*Log).Keep read it).
	AskCommit
)

// Judge judges r by everything but its commit: Match, then NeedsCommit.
func (f *Filter) Judge(r *store.Row) Verdict {
	switch {
	case !f.Match(r):
		return Rejected
	case f.NeedsCommit != nil && f.NeedsCommit(r):
		return AskCommit
	}
	return Selected
}

func (f *Filter) matchFields(r *store.Row) bool {
	switch {
	case !inList(f.Types, r.Type) || !inList(f.Ops, r.Op) || !inList(f.Actors, r.Actor):
		return false
	case slices.Contains(f.ExcludeTypes, r.Type), slices.Contains(f.ExcludeOps, r.Op), slices.Contains(f.ExcludeActors, r.Actor):
		return false
	case f.EntityType != "" && (r.Type != f.EntityType || r.EntityID != f.EntityID):
		return false
	}
	return true
}

// inList reports whether v is in an allow-list; an empty list allows all.
func inList(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }

// matchText reports whether lowered occurs, case-insensitively, in the
// row's type, entity id, actor or payload text.
func matchText(r *store.Row, lowered string) bool {
	for _, s := range []string{r.Type, r.EntityID, r.Actor, string(r.Payload)} {
		if strings.Contains(strings.ToLower(s), lowered) {
			return true
		}
	}
	return false
}

// RowFilter returns the part of f a driver can evaluate in SQL.
func (f *Filter) RowFilter() store.RowFilter {
	return store.RowFilter{
		Types:         slices.Clone(f.Types),
		Ops:           slices.Clone(f.Ops),
		Actors:        slices.Clone(f.Actors),
		ExcludeTypes:  slices.Clone(f.ExcludeTypes),
		ExcludeOps:    slices.Clone(f.ExcludeOps),
		ExcludeActors: slices.Clone(f.ExcludeActors),
		EntityType:    f.EntityType,
		EntityID:      f.EntityID,
	}
}

// Values returns the query parameters that ParseFilter reads back into f
// (Allow aside): each list item as a repeated parameter.
func (f *Filter) Values() url.Values {
	v := url.Values{}
	lists := map[string][]string{
		"types": f.Types, "ops": f.Ops, "actors": f.Actors,
		"excludeTypes": f.ExcludeTypes, "excludeOps": f.ExcludeOps, "excludeActors": f.ExcludeActors,
	}
	for name, l := range lists {
		for _, item := range l {
			v.Add(name, item)
		}
	}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	if f.EntityType != "" || f.EntityID != "" {
		v.Set("entityType", f.EntityType)
		v.Set("entityId", f.EntityID)
	}
	return v
}
