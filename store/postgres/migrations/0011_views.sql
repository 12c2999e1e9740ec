-- view_sessions holds the header of each frozen view bootstrap session;
-- its pages are servable only once the header exists.
CREATE TABLE view_sessions (
    space      text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    view       text        NOT NULL,
    reader     text        NOT NULL DEFAULT '',
    watermark  bigint      NOT NULL,
    page_size  integer     NOT NULL,
    pages      integer     NOT NULL,
    records    bigint      NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (space, id)
);

CREATE INDEX view_sessions_expires_idx ON view_sessions (expires_at);

-- view_session_pages holds the pages of frozen sessions, each a JSON
-- array of records served verbatim. expires_at repeats the session's, so
-- pages of a materialization that never finished expire too.
CREATE TABLE view_session_pages (
    space      text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    page       integer     NOT NULL,
    "offset"   bigint      NOT NULL,
    records    text        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (space, id, page)
);

-- Pages are read whole and often: store them out of line uncompressed,
-- so serving one costs no decompression.
ALTER TABLE view_session_pages ALTER COLUMN records SET STORAGE EXTERNAL;

CREATE INDEX view_session_pages_expires_idx ON view_session_pages (expires_at);
