-- The stopped deliveries' index: those that ended short of success
-- (failed, parked, discarded), keyed by status then in listing order, so
-- that
--   - a trigger's counts by status read index entries only. Before it,
--     DeliveryStats read every delivery the trigger ever had from the
--     table (about 1.7 µs each: 167 ms at 100,000) and the engine's
--     gauges called it for every owned trigger at every scrape. Now the
--     open ones are counted through deliveries_open, the stopped ones
--     here, all of them from deliveries_trigger's entries, and the
--     succeeded ones are what that leaves; the gauges read the open and
--     parked entries alone;
--   - a trigger's deliveries of one stopped status (its failed or parked
--     ones) are listed in (seq, id) order without walking the others.
-- Succeeded deliveries, the common end, get no entry: creating, running
-- and completing a delivery write nothing more than before. Queries
-- spell the same NOT IN list for SQLite to use the index.
CREATE INDEX deliveries_stopped ON deliveries (space, trigger, status, seq, id)
    WHERE status NOT IN ('pending', 'running', 'retrying', 'succeeded');

-- A space's stopped deliveries in listing order, for listings of stopped
-- statuses across triggers (the console's parked chains, bulk retries
-- of failed ones): they read the stopped entries alone instead of
-- walking every delivery of the space.
CREATE INDEX deliveries_stopped_seq ON deliveries (space, seq, id)
    WHERE status NOT IN ('pending', 'running', 'retrying', 'succeeded');
