-- processes lists the engines sharing the database, each alive until
-- expires. Engines beat every lease round and spread trigger leases over
-- the live ones.
CREATE TABLE processes (
    owner   text COLLATE "C" PRIMARY KEY,
    expires timestamptz NOT NULL
);
