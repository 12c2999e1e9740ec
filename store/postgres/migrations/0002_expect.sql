-- eddy_expect raises SQLSTATE EDY01 unless ok is true. An optimistic write
-- batch calls it right after taking the space lock to verify the writer's
-- prediction of the space head, schema version, entity versions and
-- receipts; on failure the rest of the batch, COMMIT included, is skipped.
CREATE FUNCTION eddy_expect(ok boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'eddy: stale write expectation' USING ERRCODE = 'EDY01';
    END IF;
    RETURN true;
END
$$;
