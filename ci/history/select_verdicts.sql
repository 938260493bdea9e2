-- The verdicts of one test (optionally one query) in every uploaded run.
-- Input: verdicts (schema.sql). Parameters: test String, every UInt8 (1: all queries),
-- query_index Int32. Output: run_id, query_index, verdict, diff, threshold.
SELECT run_id, query_index, verdict, diff, threshold
FROM verdicts
WHERE test = %(test)s AND (%(every)s = 1 OR query_index = %(query_index)s)
