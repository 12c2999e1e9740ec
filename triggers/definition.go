package triggers

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
)

// Defaults filled in by ParseTrigger.
const (
	// DefaultConcurrency is the in-flight delivery limit of a trigger. It
	// is 1 so that the default (entity ordering, one at a time) is also
	// totally ordered across entities; raise it to run deliveries for
	// different entities in parallel.
	DefaultConcurrency = 1
	// DefaultMaxAttempts bounds the attempts of one delivery.
	DefaultMaxAttempts = 5
	// DefaultBackoffInitial is the first retry delay.
	DefaultBackoffInitial = time.Second
	// DefaultBackoffMax caps the exponential retry delay.
	DefaultBackoffMax = 5 * time.Minute
	// DefaultTimezone is a cron schedule's time zone.
	DefaultTimezone = "UTC"
)

// Limits checked by ParseTrigger.
const (
	// MaxCausalityCap is the space default depth cap; a trigger may only
	// lower it (1..MaxCausalityCap; 0 means the space default).
	MaxCausalityCap = 16
	// MaxCausalBudget is the space default causal budget; a trigger may
	// only lower it (1..MaxCausalBudget; 0 means the space default).
	MaxCausalBudget = causality.DefaultBudget
	// MaxConcurrency bounds delivery.concurrency.
	MaxConcurrency = 1024
	// MaxAttemptsLimit bounds delivery.maxAttempts.
	MaxAttemptsLimit = 1000
	// MaxDuration bounds every duration of a definition.
	MaxDuration = 24 * time.Hour
)

// Ops a change trigger may name: the client ops and the engine ops.
var knownOps = map[string]bool{
	changelog.OpPut: true, changelog.OpPatch: true, changelog.OpDelete: true,
	changelog.OpLink: true, changelog.OpUnlink: true, changelog.OpMerge: true,
	changelog.OpSplit: true, changelog.OpFire: true, changelog.OpPark: true,
}

// engineOps are matched only by a trigger that names them in ops.
var engineOps = map[string]bool{changelog.OpFire: true, changelog.OpPark: true}

// cronParser accepts 5 fields, optional seconds and descriptors.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Trigger is a saved trigger definition. Build one with ParseTrigger;
// json.Marshal of a parsed Trigger is its canonical stored form, with
// every default filled in, and parses back to an equal Trigger.
type Trigger struct {
	// Name comes from the URL; a body may repeat it but not differ.
	Name     string `json:"name"`
	Source   Source `json:"source"`
	Function string `json:"function"`
	// Enabled defaults to true.
	Enabled bool  `json:"enabled"`
	Start   Start `json:"start"`
	// Echo lets the trigger see rows authored by its own deliveries.
	Echo bool `json:"echo"`
	// Coalesce delivers only the last matching row per entity of a batch.
	Coalesce bool `json:"coalesce"`
	// CausalityCap lowers the space's depth cap for this trigger's
	// deliveries; 0 means the space default.
	CausalityCap int `json:"causalityCap,omitempty"`
	// CausalBudget lowers the space's causal budget (the rows one root
	// write may cause in all) for this trigger's deliveries; 0 means the
	// space default.
	CausalBudget int            `json:"causalBudget,omitempty"`
	Delivery     DeliveryPolicy `json:"delivery"`
}

// Source is what makes a trigger run: exactly one of Changes and Cron.
type Source struct {
	Changes *ChangeSource `json:"changes,omitempty"`
	Cron    *CronSource   `json:"cron,omitempty"`
}

// ChangeSource runs a trigger on changelog rows. Empty lists do not
// constrain, except that engine rows (ops fire and park) are matched only
// when Ops names their op. The lists are sorted and free of duplicates.
type ChangeSource struct {
	Types         []string `json:"types,omitempty"`
	Ops           []string `json:"ops,omitempty"`
	Actors        []string `json:"actors,omitempty"`
	ExcludeActors []string `json:"excludeActors,omitempty"`
	// When is a CEL expression over row, entity and before; empty
	// matches every row the lists admit.
	When string `json:"when,omitempty"`

	prg *Program
}

// Program returns the compiled When, or nil when When is empty.
func (c *ChangeSource) Program() *Program { return c.prg }

// CronSource runs a trigger on a schedule (robfig/cron/v3 syntax: five
// fields, optional seconds, descriptors such as "@every 1m").
type CronSource struct {
	Schedule string  `json:"schedule"`
	Timezone string  `json:"timezone"`
	CatchUp  CatchUp `json:"catchUp"`

	sched cron.Schedule
	loc   *time.Location
}

// Next returns the first scheduled time after t, in the source's time
// zone. A CronSource satisfies interface{ Next(time.Time) time.Time }.
func (c *CronSource) Next(t time.Time) time.Time { return c.sched.Next(t.In(c.loc)) }

// Location returns the schedule's time zone.
func (c *CronSource) Location() *time.Location { return c.loc }

// DeliveryPolicy configures how a trigger's deliveries run.
type DeliveryPolicy struct {
	Ordering Ordering `json:"ordering"`
	// Concurrency bounds the trigger's deliveries in flight (with entity
	// ordering, at most one of them per entity).
	Concurrency int     `json:"concurrency"`
	MaxAttempts int     `json:"maxAttempts"`
	Backoff     Backoff `json:"backoff"`
	// Timeout, when set, bounds one attempt and overrides the function's
	// timeout; unset (0, omitted), the function's timeout applies.
	Timeout Duration `json:"timeout,omitempty"`
}

// Backoff is an exponential retry delay with jitter, from Initial,
// doubling up to Max.
type Backoff struct {
	Initial Duration `json:"initial"`
	Max     Duration `json:"max"`
}

// IsEngineOp reports whether op is an engine housekeeping op (fire,
// park), which only change triggers naming it in ops match.
func IsEngineOp(op string) bool { return engineOps[op] }

// UnmarshalJSON decodes the canonical stored form that json.Marshal
// writes, through ParseTrigger, taking the name from the body.
func (t *Trigger) UnmarshalJSON(raw []byte) error {
	var named struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return fmt.Errorf("decode trigger: %w", err)
	}
	p, err := ParseTrigger(named.Name, raw)
	if err != nil {
		return err
	}
	*t = *p
	return nil
}

// newCronSource parses and checks a schedule; errors name fields under
// "source.cron".
func newCronSource(schedule, timezone string, catchUp CatchUp) (*CronSource, error) {
	c := &CronSource{Schedule: schedule, Timezone: timezone, CatchUp: catchUp}
	if c.Timezone == "" {
		c.Timezone = DefaultTimezone
	}
	if c.CatchUp == 0 {
		c.CatchUp = CatchUpLast
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return nil, fieldError("source.cron.timezone", "unknown time zone %q", c.Timezone)
	}
	c.loc = loc
	sched, err := parseSchedule(schedule)
	if err != nil {
		return nil, fieldError("source.cron.schedule", "%v", err)
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	c.sched = sched
	return c, nil
}

// parseSchedule parses a cron schedule; a time zone prefix is refused
// (the timezone field says it) and a parser panic becomes an error.
func parseSchedule(s string) (sched cron.Schedule, err error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("required")
	case len(s) > 256:
		return nil, fmt.Errorf("longer than 256 bytes")
	case strings.HasPrefix(strings.ToUpper(s), "TZ=") || strings.HasPrefix(strings.ToUpper(s), "CRON_TZ="):
		return nil, fmt.Errorf("set the time zone with source.cron.timezone, not in the schedule")
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule %q", s)
		}
	}()
	sched, err = cronParser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", s, err)
	}
	return sched, nil
}
