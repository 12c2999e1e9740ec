// Package triggers holds the pure core of eddy's triggers: definitions,
// their CEL `when` expressions and the match index. It does no storage,
// HTTP or concurrency; the evaluator that owns cursors, records stances
// and creates deliveries is built on top of it.
//
// A trigger is saved as JSON (DESIGN.md section 7). ParseTrigger decodes
// it strictly, compiles its CEL and cron schedule, fills in defaults and
// answers bad definitions with a bad_request naming the JSON path of the
// field (and the line and column of a CEL error); json.Marshal of the
// result is the canonical stored form.
//
// A change trigger judges a row in two steps: a prefilter on the row's
// type, op and actor, then its `when`, a CEL expression over `row` (the
// wire row), `entity` and `before` (records or null). Engine rows (ops
// fire and park) pass the prefilter only of triggers that name their op.
// A `when` that yields true matches; false, or a read of a missing key,
// does not match; any other runtime error, including exceeding CostLimit,
// is the stance error.
//
// Each row is checked against every enabled trigger, so the Index makes
// that cheap: triggers are bucketed by type, and a trigger whose `when`
// starts (or, when its cost is bounded, contains) a top-level conjunct
// such as `entity.properties.project == "p1"` is filed under that
// constant, so a row only runs the programs of the triggers that can
// match it. Skipping is exact, not approximate: index.go writes down why
// a skipped trigger would have answered not_matched, and a property test
// checks Match against evaluating every trigger.
package triggers
