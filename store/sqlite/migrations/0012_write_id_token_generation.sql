-- write_id names the write transaction that appended a commit (a random
-- number per transaction), so a writer whose COMMIT failed ambiguously
-- can find out afterwards whether its commits landed (CommitLanded).
ALTER TABLE commits ADD COLUMN write_id INTEGER;

-- token_generation counts token revocations: a process caching
-- authenticated tokens trusts its cache only while the count is the one
-- it saw when it cached them, so a revocation takes effect at once in
-- every process.
CREATE TABLE token_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO token_generation (id, generation) VALUES (1, 0);
