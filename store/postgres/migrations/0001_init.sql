CREATE TABLE spaces (
    id             text COLLATE "C" PRIMARY KEY,
    head           bigint      NOT NULL DEFAULT 0,
    horizon        bigint      NOT NULL DEFAULT 0,
    epoch          text        NOT NULL,
    schema_version bigint      NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL
);

-- commits holds every appended commit: its wire row, receipt, provenance
-- and changes (the JSON array of its store.Change values in ordinal
-- order, with before/after snapshots). entity_type/entity_id is the
-- primary entity; a commit that also changes a second entity (merge,
-- split) names it in entity2_type/entity2_id, indexed only where set, so
-- an ordinary commit writes one heap row and two index entries.
CREATE TABLE commits (
    space        text COLLATE "C" NOT NULL,
    seq          bigint      NOT NULL,
    ts           timestamptz NOT NULL,
    actor        text        NOT NULL,
    op           text        NOT NULL,
    entity_type  text COLLATE "C" NOT NULL,
    entity_id    text COLLATE "C" NOT NULL,
    entity2_type text COLLATE "C",
    entity2_id   text COLLATE "C",
    payload      text        NOT NULL,
    receipt      text        NOT NULL,
    provenance   text        NOT NULL,
    caused_by    bigint,
    depth        integer     NOT NULL DEFAULT 0,
    changes      text        NOT NULL,
    PRIMARY KEY (space, seq)
);

CREATE INDEX commits_entity_idx ON commits (space, entity_type, entity_id, seq);

CREATE INDEX commits_entity2_idx ON commits (space, entity2_type, entity2_id, seq)
    WHERE entity2_id IS NOT NULL;

CREATE TABLE entities (
    space          text COLLATE "C" NOT NULL,
    type           text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    version        bigint      NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('live', 'deleted')),
    properties     text        NOT NULL,
    links          text        NOT NULL,
    group_versions text        NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (space, type, id)
);

CREATE TABLE receipts (
    space       text COLLATE "C" NOT NULL,
    mutation_id text COLLATE "C" NOT NULL,
    receipt     text        NOT NULL,
    entity      text,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (space, mutation_id)
);

CREATE TABLE type_defs (
    space      text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    def        text        NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (space, type)
);

CREATE TABLE tokens (
    id          text COLLATE "C" PRIMARY KEY,
    hash        bytea       NOT NULL UNIQUE,
    space       text        NOT NULL,
    role        text        NOT NULL,
    actor       text        NOT NULL,
    types       text        NOT NULL,
    scopes      text        NOT NULL DEFAULT '[]',
    user_name   text        NOT NULL,
    application text        NOT NULL,
    created_at  timestamptz NOT NULL
);
