package functions

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// action is what the builtins put, patch, delete, link and unlink return:
// an opaque, validated mutation.
type action struct{ m changelog.Mutation }

func builtinPut(args ...any) (any, error) { return objectAction(changelog.OpPut, args) }

func builtinPatch(args ...any) (any, error) { return objectAction(changelog.OpPatch, args) }

func builtinDelete(args ...any) (any, error) {
	typ, id, err := typeAndID(changelog.OpDelete, args)
	if err != nil {
		return nil, err
	}
	return newAction(changelog.Mutation{Op: changelog.OpDelete, Type: typ, EntityID: id})
}

// builtinLink returns the builtin of link or unlink:
// op(type, id, rel, targetType, targetId).
func builtinLink(op string) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		typ, id, err := typeAndID(op, args)
		if err != nil {
			return nil, err
		}
		var rest [3]string
		for i, name := range []string{"rel", "targetType", "targetId"} {
			if rest[i], err = stringArg(op, name, args[2+i]); err != nil {
				return nil, err
			}
		}
		return newAction(changelog.Mutation{
			Op: op, Type: typ, EntityID: id, Rel: rest[0],
			Target: &store.EntityKey{Type: rest[1], ID: rest[2]},
		})
	}
}

// objectAction builds put(type, id, properties) or patch(type, id, patch).
func objectAction(op string, args []any) (any, error) {
	typ, id, err := typeAndID(op, args)
	if err != nil {
		return nil, err
	}
	field := "properties"
	if op == changelog.OpPatch {
		field = "patch"
	}
	if _, ok := args[2].(map[string]any); !ok {
		return nil, fmt.Errorf("%s: %s must be a map, not %s", op, field, typeName(args[2]))
	}
	raw, err := jsonValue(args[2])
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", op, field, err)
	}
	m := changelog.Mutation{Op: op, Type: typ, EntityID: id}
	if op == changelog.OpPut {
		m.Properties = raw
	} else {
		m.Patch = raw
	}
	return newAction(m)
}

func typeAndID(op string, args []any) (typ, id string, err error) {
	if typ, err = stringArg(op, "type", args[0]); err != nil {
		return "", "", err
	}
	if id, err = stringArg(op, "id", args[1]); err != nil {
		return "", "", err
	}
	return typ, id, nil
}

func stringArg(op, name string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s must be a string, not %s", op, name, typeName(v))
	}
	return s, nil
}

// newAction validates m; the *problem.Error names the offending field.
func newAction(m changelog.Mutation) (any, error) {
	if err := changelog.ValidateMutation(&m); err != nil {
		return nil, err
	}
	return &action{m: m}, nil
}

// jsonValue encodes a value built by expr as JSON. It accepts what JSON
// can hold (nil, bools, numbers, strings, lists, maps with string keys)
// plus times (RFC 3339 UTC strings) and durations (Go duration strings);
// anything else, including actions and non-finite numbers, is an error.
func jsonValue(v any) (json.RawMessage, error) {
	p, err := plain(v, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// plain converts v to values encoding/json writes as JSON.
func plain(v any, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("values nested deeper than %d", maxNesting)
	}
	switch v := v.(type) {
	case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v, nil
	case float32:
		return finite(float64(v))
	case float64:
		return finite(v)
	case time.Time:
		return formatTime(v), nil
	case time.Duration:
		return v.String(), nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			p, err := plain(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = p
		}
		return out, nil
	}
	return plainReflect(v, depth)
}

// plainReflect converts lists and string-keyed maps of other Go types.
func plainReflect(v any, depth int) (any, error) {
	rv := reflect.ValueOf(v)
	switch {
	case rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			p, err := plain(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = p
		}
		return out, nil
	case rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String:
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			p, err := plain(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", it.Key().String(), err)
			}
			out[it.Key().String()] = p
		}
		return out, nil
	case rv.Kind() == reflect.Pointer && rv.Type() == reflect.TypeFor[*action]():
		return nil, fmt.Errorf("an action is not a value")
	}
	return nil, fmt.Errorf("unsupported value of type %T", v)
}

func finite(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	return f, nil
}

// formatTime formats t as the wire does: RFC 3339 in UTC, to the
// microsecond.
func formatTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}
