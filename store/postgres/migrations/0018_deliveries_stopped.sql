-- The stopped deliveries' index: those that ended short of success
-- (failed, parked, discarded), keyed by status then in listing order, so
-- that a trigger's counts by status need not read each of its
-- deliveries (the open ones are counted through deliveries_open_idx,
-- the stopped ones here, and the succeeded ones are what the count of
-- all leaves), the engine's gauges (every owned trigger, every scrape)
-- read the open and parked ones alone, and a trigger's deliveries of one
-- stopped status (its failed or parked ones) are listed in (seq, id)
-- order without walking the others. Succeeded deliveries, the common
-- end, get no entry. Queries spell the same NOT IN list.
CREATE INDEX deliveries_stopped_idx ON deliveries (space, trigger, status, seq, id)
    WHERE status NOT IN ('pending', 'running', 'retrying', 'succeeded');

-- A space's stopped deliveries in listing order, for listings of stopped
-- statuses across triggers (the console's parked chains, bulk retries
-- of failed ones).
CREATE INDEX deliveries_stopped_seq_idx ON deliveries (space, seq, id)
    WHERE status NOT IN ('pending', 'running', 'retrying', 'succeeded');
