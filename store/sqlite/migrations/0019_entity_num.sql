-- The entity history index (commits_entity) is keyed by a number each
-- entity gets when its row is created, instead of by its type and id
-- alone. SQLite's WAL takes a whole page for every page a transaction
-- touches, and an index keyed by id puts a new entity's first entry on
-- a leaf chosen by its id: with ids a client makes at random (UUIDv4), a
-- group of 16 new entities touched about 17-20 random leaves of this
-- index (bench/RESULTS.md, round 19). A new entity's number is the seq
-- of the commit that created its row, so its entries append at the right
-- edge of its space's range, wherever its id sorts; an existing entity's
-- entries stay together as before.
--
-- The number is entities.num, set when the row is inserted and never
-- changed; every commit stores its primary entity's number in
-- entity_num. A commit whose primary key has no entities row (the
-- engine's fire and park rows, of types "eddy.*") stores NULL. Readers
-- look the number up and match entity_num IS it, then the type and id
-- as before, so numbers shared by two entities (a split creates two
-- rows in one commit) or missing (an entity whose commits were all
-- pruned before this migration) change what is read from no key's
-- history.
ALTER TABLE entities ADD COLUMN num INTEGER;
UPDATE entities SET num = (SELECT min(c.seq) FROM commits AS c
    WHERE c.space = entities.space AND c.entity_type = entities.type AND c.entity_id = entities.id);

ALTER TABLE commits ADD COLUMN entity_num INTEGER;
UPDATE commits SET entity_num = (SELECT e.num FROM entities AS e
    WHERE e.space = commits.space AND e.type = commits.entity_type AND e.id = commits.entity_id);

DROP INDEX commits_entity;
CREATE INDEX commits_entity ON commits (space, entity_num, entity_type, entity_id, seq);
