-- The measured client times of one test (optionally one query) in every uploaded run.
-- Input: run_times (schema.sql). Parameters: test String, every UInt8 (1: all queries),
-- query_index Int32. Output: run_id, query_index, server, times Array(Float64).
SELECT run_id, query_index, server, groupArray(client_time) AS times
FROM run_times
WHERE test = %(test)s AND (%(every)s = 1 OR query_index = %(query_index)s)
GROUP BY run_id, query_index, server
