-- Trigger state: one row per trigger of a space. cursor: every row <= it
-- has a stance; start: rows <= it are not_started; skipped: JSON array of
-- {"lo","hi"} ranges skipped while disabled; fired: scheduled time of the
-- last cron firing. owner/epoch/lease_expires are the lease: epoch grows
-- by one whenever the holder changes, and fences every write. Times are
-- UTC unix microseconds (the zero time.Time is stored as its own value).
CREATE TABLE trigger_state (
    space         TEXT    NOT NULL,
    trigger       TEXT    NOT NULL,
    cursor        INTEGER NOT NULL,
    start         INTEGER NOT NULL,
    skipped       TEXT    NOT NULL DEFAULT '[]',
    fired         INTEGER NOT NULL,
    owner         TEXT    NOT NULL DEFAULT '',
    epoch         INTEGER NOT NULL DEFAULT 0,
    lease_expires INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (space, trigger)
) WITHOUT ROWID;

-- Deliveries: one run of a trigger's function for the row seq.
CREATE TABLE deliveries (
    space           TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    trigger         TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    entity_type     TEXT    NOT NULL,
    entity_id       TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    depth           INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    next_attempt_at INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (space, id)
) WITHOUT ROWID;

-- A trigger's deliveries in listing order (seq, id).
CREATE INDEX deliveries_trigger ON deliveries (space, trigger, seq, id);

-- A space's deliveries by row: listings of every trigger, stances of one
-- row, pruning below the horizon. (The primary key's id follows seq.)
CREATE INDEX deliveries_seq ON deliveries (space, seq);

-- Open deliveries only, for stats, fences and the dispatcher. Queries
-- must spell the same IN list for SQLite to use it.
CREATE INDEX deliveries_open ON deliveries (space, trigger, status, seq)
    WHERE status IN ('pending', 'running', 'retrying');

-- Stance errors: a trigger's filter raised on the row seq.
CREATE TABLE stance_errors (
    space   TEXT    NOT NULL,
    trigger TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    error   TEXT    NOT NULL,
    PRIMARY KEY (space, trigger, seq)
) WITHOUT ROWID;

-- The errors of one row, and pruning below the horizon.
CREATE INDEX stance_errors_seq ON stance_errors (space, seq);
