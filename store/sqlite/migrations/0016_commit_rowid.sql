-- Commits become a rowid table. A WITHOUT ROWID table is a b-tree of
-- whole rows keyed by (space, seq): every commit appends at the right
-- edge of its space's range, and SQLite rebalances a full page there
-- across three siblings, so a single put wrote about 2.4 pages of the
-- commits table into the WAL. A rowid table whose rowid grows with the
-- seq appends through SQLite's quick balance instead: one new page, the
-- parent touched, about 1.1 pages a commit.
--
-- rid is (space number << 40) + seq: a space's commits stay contiguous
-- and in seq order, so a read of a space's log is one range of the
-- table, as before. The number is spaces.num, given once when a space
-- is created and never reused (spaces are never deleted); 40 bits of
-- seq is 1.1e12 commits a space. space and seq stay as columns for the
-- secondary indexes and the readers.
ALTER TABLE spaces ADD COLUMN num INTEGER NOT NULL DEFAULT 0;
UPDATE spaces SET num = (SELECT count(*) FROM spaces AS s WHERE s.id <= spaces.id);
CREATE UNIQUE INDEX spaces_num ON spaces (num);

CREATE TABLE commits_rid (
    rid          INTEGER PRIMARY KEY,
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
    write_id     INTEGER,
    change_count INTEGER
);

INSERT INTO commits_rid (rid, space, seq, ts, actor, op, entity_type, entity_id, entity2_type,
    entity2_id, payload, receipt, provenance, caused_by, depth, changes, write_id, change_count)
SELECT (s.num << 40) + c.seq, c.space, c.seq, c.ts, c.actor, c.op, c.entity_type, c.entity_id,
    c.entity2_type, c.entity2_id, c.payload, c.receipt, c.provenance, c.caused_by, c.depth,
    c.changes, c.write_id, c.change_count
FROM commits AS c JOIN spaces AS s ON s.id = c.space
ORDER BY s.num, c.seq;

DROP TABLE commits;
ALTER TABLE commits_rid RENAME TO commits;

CREATE INDEX commits_entity ON commits (space, entity_type, entity_id, seq);
CREATE INDEX commits_entity2 ON commits (space, entity2_type, entity2_id, seq)
    WHERE entity2_id IS NOT NULL;
CREATE INDEX commits_caused_by ON commits (space, caused_by) WHERE caused_by IS NOT NULL;
