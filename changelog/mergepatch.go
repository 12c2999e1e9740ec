package changelog

import "fmt"

// MergePatch applies an RFC 7386 JSON merge patch to target and returns
// the result in canonical form. An empty target is treated as null. A
// patch that is not an object replaces the target; null members of an
// object patch delete, other members merge recursively.
func MergePatch(target, patch []byte) ([]byte, error) {
	var t any
	if len(target) > 0 {
		v, err := decodeJSON(target)
		if err != nil {
			return nil, fmt.Errorf("merge patch target: %w", err)
		}
		t = v
	}
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, fmt.Errorf("merge patch: %w", err)
	}
	return encodeCanonical(mergeValue(t, p)), nil
}

// mergeValue is RFC 7386 MergePatch on decoded values. It never mutates
// target or patch: merged objects are fresh maps (unchanged subtrees may
// be shared).
func mergeValue(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = nil
	}
	out := make(map[string]any, len(t)+len(p))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergeValue(out[k], v)
	}
	return out
}
