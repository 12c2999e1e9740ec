-- commits_caused_by finds the rows a row caused (the console's causal
-- picture walks chains downward). Only delivery-authored rows have a
-- cause, so the index holds only them.
CREATE INDEX commits_caused_by ON commits (space, caused_by) WHERE caused_by IS NOT NULL;
