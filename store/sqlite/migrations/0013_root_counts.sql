-- root_counts holds each root write's causal budget counter: the
-- delivery-authored rows its chain caused, whether a budget park row was
-- written for it, and the greatest seq counted (pruning keeps a counter
-- while its chain still writes above the horizon). Written in the same
-- transaction as the rows it counts.
CREATE TABLE root_counts (
    space    TEXT    NOT NULL,
    root     INTEGER NOT NULL,
    rows     INTEGER NOT NULL,
    parked   INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (space, root)
) WITHOUT ROWID;
