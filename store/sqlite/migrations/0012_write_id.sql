-- write_id names the write transaction that appended a commit (a random
-- number per transaction), so a writer whose COMMIT failed ambiguously
-- can find out afterwards whether its commits landed (CommitLanded).
ALTER TABLE commits ADD COLUMN write_id INTEGER;
