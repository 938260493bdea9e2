-- runs_by_query.sql: every run of runs_input (runs.tsv) in RowBinary for
-- compare/grouped_runs.py, ordered by query, then side (patched before reference), then run:
-- each query's runs of a side are one stretch of rows. The times go out as the doubles they
-- are, never through text. A server other than the two is side 2, which the caller refuses.
--   key UInt64 (runs_keys.sql), side UInt8 (0 reference, 1 patched, 2 other), run Int32,
--   client_time Float64, process Int32
SELECT
    cityHash64(test, query_index) AS key,
    toUInt8(multiIf(server = 'reference', 0, server = 'patched', 1, 2)) AS side,
    toInt32(run) AS run,
    client_time,
    toInt32(process) AS process
FROM runs_input
ORDER BY test, query_index, server, run
