-- processes: the engines sharing the database, each alive until expires
-- (UTC unix microseconds). Engines beat every lease round and spread
-- trigger leases over the live ones.
CREATE TABLE processes (
    owner   TEXT    NOT NULL PRIMARY KEY,
    expires INTEGER NOT NULL
) WITHOUT ROWID;
