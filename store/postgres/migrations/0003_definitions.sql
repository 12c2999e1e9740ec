CREATE TABLE definitions (
    space      text COLLATE "C" NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    def        text        NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (space, kind, name)
);

CREATE TABLE secrets (
    name  text COLLATE "C" PRIMARY KEY,
    value bytea NOT NULL
);
