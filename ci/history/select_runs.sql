-- Start time and check status of the given runs.
-- Input: runs (schema.sql). Parameters: ids Tuple(String, ...).
-- Output: run_id, start_time, check_status.
SELECT run_id, start_time, check_status
FROM runs
WHERE run_id IN %(ids)s
