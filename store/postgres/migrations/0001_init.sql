CREATE TABLE spaces (
    id             text COLLATE "C" PRIMARY KEY,
    head           bigint      NOT NULL DEFAULT 0,
    horizon        bigint      NOT NULL DEFAULT 0,
    epoch          text        NOT NULL,
    schema_version bigint      NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL
);

CREATE TABLE commits (
    space       text COLLATE "C" NOT NULL,
    seq         bigint      NOT NULL,
    ts          timestamptz NOT NULL,
    actor       text        NOT NULL,
    op          text        NOT NULL,
    entity_type text COLLATE "C" NOT NULL,
    entity_id   text COLLATE "C" NOT NULL,
    payload     text        NOT NULL,
    receipt     text        NOT NULL,
    provenance  text        NOT NULL,
    caused_by   bigint,
    depth       integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (space, seq)
);

CREATE INDEX commits_entity_idx ON commits (space, entity_type, entity_id, seq);

CREATE TABLE changes (
    space           text COLLATE "C" NOT NULL,
    seq             bigint  NOT NULL,
    ordinal         integer NOT NULL,
    kind            text    NOT NULL,
    type            text COLLATE "C" NOT NULL,
    id              text COLLATE "C" NOT NULL,
    version         bigint  NOT NULL,
    before          text,
    after           text,
    conflict_groups text    NOT NULL,
    PRIMARY KEY (space, seq, ordinal)
);

CREATE INDEX changes_entity_idx ON changes (space, type, id, seq);

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
