-- Spaces: one row per space, the head of its log and its horizon.
CREATE TABLE spaces (
    id             TEXT    NOT NULL PRIMARY KEY,
    head           INTEGER NOT NULL DEFAULT 0,
    horizon        INTEGER NOT NULL DEFAULT 0,
    epoch          TEXT    NOT NULL,
    schema_version INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- Commits: the wire row of every appended commit plus its receipt,
-- provenance and changes. Clustered by (space, seq) so log reads are
-- sequential. changes is the JSON array of the commit's store.Change
-- values in ordinal order, with their before/after snapshots.
--
-- entity_type/entity_id is the commit's primary entity, indexed for
-- entity-scoped history and first-change lookups. A commit that also
-- changes a second entity (merge, split) names it in entity2_type and
-- entity2_id, indexed only where set, so ordinary commits pay one
-- secondary index entry.
CREATE TABLE commits (
    space        TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    ts           INTEGER NOT NULL,
    actor        TEXT    NOT NULL,
    op           TEXT    NOT NULL,
    entity_type  TEXT    NOT NULL,
    entity_id    TEXT    NOT NULL,
    entity2_type TEXT,
    entity2_id   TEXT,
    payload      TEXT    NOT NULL,
    receipt      TEXT    NOT NULL,
    provenance   TEXT    NOT NULL,
    caused_by    INTEGER,
    depth        INTEGER NOT NULL DEFAULT 0,
    changes      TEXT    NOT NULL,
    PRIMARY KEY (space, seq)
) WITHOUT ROWID;

CREATE INDEX commits_entity ON commits (space, entity_type, entity_id, seq);

CREATE INDEX commits_entity2 ON commits (space, entity2_type, entity2_id, seq)
    WHERE entity2_id IS NOT NULL;

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
