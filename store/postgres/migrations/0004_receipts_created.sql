-- Stored receipts by age, so housekeeping expires the oldest in bounded
-- batches without scanning every space's receipts.
CREATE INDEX receipts_created_idx ON receipts (created_at);
