-- view_sessions holds the header of each frozen view bootstrap session;
-- its pages are servable only once the header exists. Times are UTC unix
-- microseconds.
CREATE TABLE view_sessions (
    space      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    view       TEXT    NOT NULL,
    reader     TEXT    NOT NULL DEFAULT '',
    watermark  INTEGER NOT NULL,
    page_size  INTEGER NOT NULL,
    pages      INTEGER NOT NULL,
    records    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (space, id)
) WITHOUT ROWID;

CREATE INDEX view_sessions_expires ON view_sessions (expires_at);

-- view_session_pages holds the pages of frozen sessions, each a JSON
-- array of records served verbatim. expires_at repeats the session's, so
-- pages of a materialization that never finished expire too.
CREATE TABLE view_session_pages (
    space      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    page       INTEGER NOT NULL,
    offset     INTEGER NOT NULL,
    records    TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (space, id, page)
) WITHOUT ROWID;

CREATE INDEX view_session_pages_expires ON view_session_pages (expires_at);
