package predicate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// AssumedDataSize is the size CEL's static cost estimator is told every
// list, map and string read from a row or record has (it cannot know):
// an expression whose estimate exceeds CostLimit at this size is refused
// at compile time. Nested comprehensions over the data are what this
// catches (three nested .all over row lists cost 50³ steps and more);
// a single pass over a list of any size is left to the runtime limits.
const AssumedDataSize = 50

// InterruptEvery is how many comprehension steps run between two checks
// whether the evaluation's context has ended.
const InterruptEvery = 100

// ErrBudget marks a request whose evaluations used up their Budget.
var ErrBudget = errors.New("evaluation budget exhausted")

// Budget bounds the evaluation of one request's predicate across every
// row it judges: a history or forward page, or one batch of a watch
// stream. Zero fields take DefaultBudget's.
type Budget struct {
	// Cost is the total CEL cost (cel-go's runtime cost units; one row is
	// also held to CostLimit on its own).
	Cost uint64
	// Wall is the total time spent evaluating.
	Wall time.Duration
}

// DefaultBudget is the budget of a request when the server sets none: a
// page of 1,000 rows judged by an ordinary expression uses a few
// thousandths of it.
var DefaultBudget = Budget{Cost: 10_000_000, Wall: time.Second}

func (b Budget) withDefaults() Budget {
	if b.Cost == 0 {
		b.Cost = DefaultBudget.Cost
	}
	if b.Wall <= 0 {
		b.Wall = DefaultBudget.Wall
	}
	return b
}

// dataSizes is the estimator of static costs: AssumedDataSize for every
// size CEL does not know, no opinion on calls.
type dataSizes struct{}

func (dataSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: AssumedDataSize}
}

func (dataSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// staticCost returns the estimated worst-case cost of one evaluation of
// checked, or an error when it exceeds CostLimit.
func staticCost(env *cel.Env, checked *cel.Ast) (uint64, error) {
	est, err := env.EstimateCost(checked, dataSizes{})
	if err != nil {
		return 0, fmt.Errorf("estimate cost: %w", err)
	}
	if est.Max > CostLimit {
		return est.Max, fmt.Errorf("expression is too expensive: its estimated cost %d exceeds the limit %d per evaluation (counting every list and string of the data at %d elements); nest fewer comprehensions", est.Max, CostLimit, AssumedDataSize)
	}
	return est.Max, nil
}

// programOptions are the options every predicate program is built with:
// the per-evaluation cost limit and context interruption.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(InterruptEvery)}
}

// Eval judges rows by one Row predicate for one request, within a Budget
// and for as long as the request's context lives: once either ends,
// every further row is rejected at once and Err says why. An Eval is
// used by one goroutine.
type Eval struct {
	p     *Row
	ctx   context.Context
	b     Budget
	rows  int
	cost  uint64
	spent time.Duration
	err   error
}

// Evaluator returns an Eval of p bound to ctx and budget b.
func (p *Row) Evaluator(ctx context.Context, b Budget) *Eval {
	return &Eval{p: p, ctx: ctx, b: b.withDefaults()}
}

// Allow reports whether r matches. A row that errors does not match (see
// Match); it still counts against the budget. A when that evaluates to
// something other than a bool (a payload value it does not compare) ends
// the evaluation with a bad_request, as a non-bool is refused at compile
// time where the type is known.
func (e *Eval) Allow(r *store.Row) bool {
	if e.err != nil {
		return false
	}
	start := time.Now()
	out, det, err := e.p.prg.ContextEval(e.ctx, map[string]any{"row": RowValue(r)})
	e.spent += time.Since(start)
	e.rows++
	if c := det.ActualCost(); c != nil {
		e.cost += *c
	} else if err != nil {
		e.cost += CostLimit // a cancelled evaluation reports no cost
	}
	if cerr := e.ctx.Err(); cerr != nil {
		e.err = fmt.Errorf("evaluate %q: %w", e.p.src, cerr)
		return false
	}
	if e.cost > e.b.Cost || e.spent > e.b.Wall {
		e.err = e.budgetError()
		return false
	}
	if err != nil {
		return false
	}
	b, ok := out.Value().(bool)
	if !ok {
		e.err = problem.Param("when", "evaluated to %s, not a bool, on row %d: a when must be true or false (compare the value, e.g. %s == ...)",
			out.Type().TypeName(), r.Seq, e.p.src).With("reason", "not_bool").With("seq", r.Seq)
		return false
	}
	return b
}

// budgetError is the bad_request an exhausted budget answers.
func (e *Eval) budgetError() error {
	pe := problem.Param("when", "the expression used up this request's evaluation budget after %d rows (cost %d of %d, %s of %s); narrow it, or ask for fewer rows",
		e.rows, e.cost, e.b.Cost, e.spent.Round(time.Millisecond), e.b.Wall).
		With("reason", "evaluation_budget").With("rows", e.rows)
	return fmt.Errorf("%w: %w", ErrBudget, pe)
}

// Err is nil while the budget and the context hold; afterwards the error
// that ended evaluation: one wrapping ErrBudget (and a bad_request
// problem), or the context's error.
func (e *Eval) Err() error {
	if e == nil {
		return nil
	}
	return e.err
}

// Reset starts a fresh budget (the next batch of a stream) whose
// evaluations end with ctx.
func (e *Eval) Reset(ctx context.Context) {
	if e == nil {
		return
	}
	e.ctx, e.rows, e.cost, e.spent, e.err = ctx, 0, 0, 0, nil
}
