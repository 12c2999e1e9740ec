-- The open deliveries' index is keyed like a trigger's listing, (space,
-- trigger, seq, id), instead of by status first. The dispatcher loads a
-- trigger's open deliveries in (seq, id) order every poll; keyed by
-- status, the index could not give that order, so the listing walked
-- deliveries_trigger, every delivery the trigger ever had, done ones too:
-- 5,000 discarded ones cost an idle engine 40 ms a poll under the race
-- detector. Keyed by seq it reads the open ones only, in order.
-- A change between open statuses (pending, running, retrying) no longer
-- moves the entry either; only opening and closing a delivery touch it.
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (space, trigger, seq, id)
    WHERE status IN ('pending', 'running', 'retrying');
