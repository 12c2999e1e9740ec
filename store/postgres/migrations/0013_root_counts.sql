-- root_counts holds each root write's causal budget counter: the
-- delivery-authored rows its chain caused, whether a budget park row was
-- written for it, and the greatest seq counted (pruning keeps a counter
-- while its chain still writes above the horizon). Written in the same
-- transaction as the rows it counts.
CREATE TABLE root_counts (
    space    TEXT    NOT NULL,
    root     BIGINT  NOT NULL,
    rows     BIGINT  NOT NULL,
    parked   BOOLEAN NOT NULL,
    last_seq BIGINT  NOT NULL,
    PRIMARY KEY (space, root)
);
