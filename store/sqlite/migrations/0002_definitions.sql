CREATE TABLE definitions (
    space      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    def        TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (space, kind, name)
) WITHOUT ROWID;

CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
