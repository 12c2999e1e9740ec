package changelog

import (
	"slices"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// fillInitial gives a new entity the initial value of every state field
// it does not set.
func fillInitial(def *TypeDef, props map[string]any) {
	if def == nil {
		return
	}
	for f, s := range def.States {
		if _, ok := props[f]; !ok && s.Initial != "" {
			props[f] = s.Initial
		}
	}
}

// checkSchema judges an entity's new properties against its type
// definition (nil accepts any object): strict mode, kinds, required
// properties and state transitions from cur. It returns the state fields
// whose value moved, with their new values.
func checkSchema(def *TypeDef, cur *entity, props map[string]any) (map[string]string, *rejection) {
	if def == nil {
		return nil, nil
	}
	if rej := checkDeclared(def, cur.key, props); rej != nil {
		return nil, rej
	}
	return checkStates(def, cur, props)
}

func propertyRejection(code string, key store.EntityKey, prop, format string, args ...any) *rejection {
	r := reject(code, format, args...)
	r.msg = keyString(key) + ": property " + quote(prop) + ": " + r.msg
	r.props = []store.RejectedProperty{{Property: prop, Reason: code}}
	return r
}

func quote(s string) string { return string(appendString(nil, s)) }

func checkDeclared(def *TypeDef, key store.EntityKey, props map[string]any) *rejection {
	for _, k := range sortedKeys(props) {
		if def.Strict && !def.declared(k) {
			return propertyRejection(problem.Unprocessable, key, k, "not declared by the strict type %s", key.Type)
		}
		if p, ok := def.Properties[k]; ok && !checkKind(p.Kind, props[k]) {
			return propertyRejection(problem.Unprocessable, key, k, "want kind %s, got %s", p.Kind, kindOfValue(props[k]))
		}
	}
	for _, k := range sortedKeys(def.Properties) {
		if v, ok := props[k]; def.Properties[k].Required && (!ok || v == nil) {
			return propertyRejection(problem.Unprocessable, key, k, "required")
		}
	}
	return nil
}

func checkStates(def *TypeDef, cur *entity, props map[string]any) (map[string]string, *rejection) {
	moved := map[string]string{}
	for _, f := range sortedKeys(def.States) {
		to, ok, rej := checkState(f, def.States[f], cur, props)
		if rej != nil {
			return nil, rej
		}
		if ok {
			moved[f] = to
		}
	}
	return moved, nil
}

// checkState judges one state field; ok reports that its value moved.
func checkState(f string, s StateDef, cur *entity, props map[string]any) (to string, ok bool, rej *rejection) {
	key := cur.key
	nv, hasNew := props[f]
	ov, hasOld := cur.props[f]
	if !hasNew {
		if hasOld && s.Initial != "" {
			return "", false, propertyRejection(problem.Conflict, key, f, "a state field cannot be removed")
		}
		return "", false, nil
	}
	to, isString := nv.(string)
	if _, known := s.Transitions[to]; !isString || !known {
		return "", false, propertyRejection(problem.Unprocessable, key, f, "%s is not a declared state", encodeCanonical(nv))
	}
	if hasOld && canonicalEqual(ov, nv) {
		return "", false, nil
	}
	if from, isString := ov.(string); hasOld && isString {
		if targets, known := s.Transitions[from]; known && !slices.Contains(targets, to) {
			return "", false, propertyRejection(problem.Conflict, key, f, "transition from %q to %q is not allowed", from, to)
		}
	}
	return to, true, nil
}
