package changelog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Log is the changelog service over one store: it appends commits through
// a group committer per space and reads them back.
type Log struct {
	st   store.Store
	opts Options

	// life is read-held by every Write for its duration; Close takes it
	// exclusively, so it returns only after in-flight writes finish.
	life   sync.RWMutex
	closed bool // guarded by life

	mu         sync.Mutex
	committers map[string]*committer // by space; guarded by mu

	schemas schemaCache
	cache   writeCache
	// probe tunes how ambiguous commits are resolved (see resolve).
	probing probeTuning
	// inCommit is the hook of SetInCommit; nil: none.
	inCommit atomic.Pointer[InCommit]
	// ahead reads sequential raw pullers' next pages (readahead.go).
	ahead pullAhead
	// notes serves Subscribe.
	notes notifications
}

// DefaultLinger is Options.Linger's default: short next to a commit's
// fsync, long enough for answered writers to resubmit.
const DefaultLinger = 500 * time.Microsecond

// New returns a Log over st. The zero Options are usable.
func New(st store.Store, opts Options) *Log {
	if opts.IdempotencyWindow <= 0 {
		opts.IdempotencyWindow = 24 * time.Hour
	}
	if opts.ClientRetention <= 0 {
		opts.ClientRetention = DefaultClientRetention
	}
	if opts.MaxScan <= 0 {
		opts.MaxScan = 10000
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Log{st: st, opts: opts, committers: make(map[string]*committer), probing: defaultProbe}
}

// Close refuses new writes and returns once the writes already under way
// have finished. It is idempotent.
func (l *Log) Close() error {
	l.life.Lock()
	defer l.life.Unlock()
	l.closed = true
	l.ahead.close()
	return nil
}

// Store returns the underlying store.
func (l *Log) Store() store.Store { return l.st }

// now returns the commit clock: UTC with microsecond precision.
func (l *Log) now() time.Time { return l.opts.Now().UTC().Truncate(time.Microsecond) }

// CreateSpace creates a space (conflict if it exists).
func (l *Log) CreateSpace(ctx context.Context, id string) (store.Space, error) {
	if !ValidTypeName(id) {
		return store.Space{}, problem.Param("space", "%q is not a valid space name (want [a-z][a-z0-9-]*, dot-separated)", id)
	}
	sp, err := l.st.SpaceCreate(ctx, id, newEpoch())
	if errors.Is(err, store.ErrExists) {
		return store.Space{}, problem.New(problem.Conflict, "space %q already exists", id)
	}
	if err != nil {
		return store.Space{}, fmt.Errorf("create space: %w", err)
	}
	return sp, nil
}

// EnsureSpace creates a space unless it exists and returns it.
func (l *Log) EnsureSpace(ctx context.Context, id string) (store.Space, error) {
	sp, err := l.CreateSpace(ctx, id)
	if problem.CodeOf(err) == problem.Conflict {
		return l.Space(ctx, id)
	}
	return sp, err
}

// Space returns one space (not_found if absent).
func (l *Log) Space(ctx context.Context, id string) (store.Space, error) {
	sp, err := l.st.SpaceGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Space{}, spaceNotFound(id)
	}
	if err != nil {
		return store.Space{}, fmt.Errorf("get space: %w", err)
	}
	return sp, nil
}

// SpaceOf returns known, the space as the caller read it for this
// request (auth.Reader.Space), or reads it when known is nil (or names
// another space).
func (l *Log) SpaceOf(ctx context.Context, id string, known *store.Space) (store.Space, error) {
	if known != nil && known.ID == id {
		return *known, nil
	}
	return l.Space(ctx, id)
}

// Spaces returns every space.
func (l *Log) Spaces(ctx context.Context) ([]store.Space, error) {
	sps, err := l.st.SpaceList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list spaces: %w", err)
	}
	return sps, nil
}

func spaceNotFound(id string) error {
	return problem.New(problem.NotFound, "space %q not found", id)
}

// Get returns a live record (not_found for a missing or deleted entity).
func (l *Log) Get(ctx context.Context, space string, key store.EntityKey) (store.Record, error) {
	return l.GetWith(ctx, space, key, GetOptions{})
}

// GetOptions are the options of GetWith.
type GetOptions struct {
	// Space, when not nil, is the space as the caller read it for this
	// request (auth.Reader.Space): it answers whether the space exists
	// instead of reading it again.
	Space *store.Space
}

// GetWith is Get with options.
func (l *Log) GetWith(ctx context.Context, space string, key store.EntityKey, opts GetOptions) (store.Record, error) {
	if _, err := l.SpaceOf(ctx, space, opts.Space); err != nil {
		return store.Record{}, err
	}
	rec, err := l.st.EntityGet(ctx, space, key)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Kind == store.KindDeleted) {
		return store.Record{}, problem.New(problem.NotFound, "%s/%s not found", key.Type, key.ID)
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("get entity: %w", err)
	}
	return rec, nil
}
