-- trigger_state is each trigger's evaluation state: its cursor, start,
-- skipped ranges (a JSON array of {"lo", "hi"}), last cron firing and
-- lease. A zero time (no firing, no live lease) is NULL.
CREATE TABLE trigger_state (
    space         text COLLATE "C" NOT NULL,
    trigger       text COLLATE "C" NOT NULL,
    cursor        bigint      NOT NULL,
    start         bigint      NOT NULL,
    skipped       jsonb       NOT NULL DEFAULT '[]',
    fired         timestamptz,
    owner         text        NOT NULL DEFAULT '',
    epoch         bigint      NOT NULL DEFAULT 0,
    lease_expires timestamptz,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (space, trigger)
);

-- deliveries holds every run of a trigger's function for one row. A zero
-- next_attempt_at is NULL.
CREATE TABLE deliveries (
    space           text COLLATE "C" NOT NULL,
    id              text COLLATE "C" NOT NULL,
    trigger         text COLLATE "C" NOT NULL,
    seq             bigint      NOT NULL,
    entity_type     text COLLATE "C" NOT NULL,
    entity_id       text COLLATE "C" NOT NULL,
    status          text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    depth           integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (space, id)
);

-- Listing a trigger's deliveries in (seq, id) order.
CREATE INDEX deliveries_trigger_idx ON deliveries (space, trigger, seq, id);

-- Listing a space's deliveries in (seq, id) order, the deliveries of one
-- row, and pruning.
CREATE INDEX deliveries_seq_idx ON deliveries (space, seq, id);

-- A trigger's open deliveries in (seq, id) order: the dispatcher's
-- listing, fences (open through a seq) and the oldest open one, without
-- reading the far more numerous finished deliveries. Queries name the
-- open statuses literally so the planner can use it.
CREATE INDEX deliveries_open_idx ON deliveries (space, trigger, seq, id)
    WHERE status IN ('pending', 'running', 'retrying');

-- stance_errors records the rows a trigger's filter raised on.
CREATE TABLE stance_errors (
    space   text COLLATE "C" NOT NULL,
    trigger text COLLATE "C" NOT NULL,
    seq     bigint NOT NULL,
    error   text   NOT NULL,
    PRIMARY KEY (space, trigger, seq)
);

CREATE INDEX stance_errors_seq_idx ON stance_errors (space, seq);

-- eddy_fence raises SQLSTATE EDY03 unless present and EDY02 unless
-- applied (a plpgsql parameter may not be named found). A fenced trigger write (an UPDATE whose condition checks the cursor,
-- the lease epoch or a delivery's status) calls it with whether its
-- target exists and whether it changed a row; the raise aborts the
-- transaction, so a batch sent with it (COMMIT included) writes nothing.
CREATE FUNCTION eddy_fence(present boolean, applied boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF present IS NOT TRUE THEN
        RAISE EXCEPTION 'eddy: trigger write target not found' USING ERRCODE = 'EDY03';
    END IF;
    IF applied IS NOT TRUE THEN
        RAISE EXCEPTION 'eddy: trigger state fenced' USING ERRCODE = 'EDY02';
    END IF;
    RETURN true;
END
$$;
