-- Spaces: one row per space, the head of its log and its horizon.
CREATE TABLE spaces (
    id             TEXT    NOT NULL PRIMARY KEY,
    head           INTEGER NOT NULL DEFAULT 0,
    horizon        INTEGER NOT NULL DEFAULT 0,
    epoch          TEXT    NOT NULL,
    schema_version INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- Commits: the wire row of every appended commit plus its receipt and
-- provenance. Clustered by (space, seq) so log reads are sequential.
CREATE TABLE commits (
    space       TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    ts          INTEGER NOT NULL,
    actor       TEXT    NOT NULL,
    op          TEXT    NOT NULL,
    entity_type TEXT    NOT NULL,
    entity_id   TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    receipt     TEXT    NOT NULL,
    provenance  TEXT    NOT NULL,
    caused_by   INTEGER,
    depth       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (space, seq)
) WITHOUT ROWID;

CREATE INDEX commits_entity ON commits (space, entity_type, entity_id, seq);

-- Changes: the entity changes of each commit with before/after snapshots.
CREATE TABLE changes (
    space           TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    ordinal         INTEGER NOT NULL,
    kind            TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    "before"        TEXT,
    "after"         TEXT,
    conflict_groups TEXT    NOT NULL DEFAULT '[]',
    PRIMARY KEY (space, seq, ordinal)
) WITHOUT ROWID;

CREATE INDEX changes_entity ON changes (space, type, id, seq);

-- Entities: the current record of every entity, live or tombstone.
CREATE TABLE entities (
    space          TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    kind           TEXT    NOT NULL CHECK (kind IN ('live', 'deleted')),
    properties     TEXT    NOT NULL,
    links          TEXT    NOT NULL,
    group_versions TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (space, type, id)
) WITHOUT ROWID;

-- Receipts: processed mutations kept for the idempotency window.
CREATE TABLE receipts (
    space       TEXT    NOT NULL,
    mutation_id TEXT    NOT NULL,
    receipt     TEXT    NOT NULL,
    entity      TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (space, mutation_id)
) WITHOUT ROWID;

-- Type definitions per space.
CREATE TABLE type_defs (
    space      TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    def        TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (space, type)
) WITHOUT ROWID;

-- API tokens; only the hash of a secret is stored.
CREATE TABLE tokens (
    id          TEXT    NOT NULL PRIMARY KEY,
    hash        BLOB    NOT NULL UNIQUE,
    space       TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    types       TEXT    NOT NULL,
    scopes      TEXT    NOT NULL DEFAULT '[]',
    user_name   TEXT    NOT NULL DEFAULT '',
    application TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);

CREATE INDEX tokens_created ON tokens (created_at, id);
