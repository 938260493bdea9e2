-- runs_by_query.sql: every run of runs_input (runs.tsv) in RowBinary for
-- compare/grouped_runs.py, ordered by query, then side (patched before reference), then run:
-- each query's runs of a side are one stretch of rows. The times go out as the doubles they
-- are, never through text.
--   key UInt64 (runs_keys.sql), patched UInt8, run Int32, client_time Float64, process Int32
SELECT
    cityHash64(test, query_index) AS key,
    toUInt8(server = 'patched') AS patched,
    toInt32(run) AS run,
    client_time,
    toInt32(process) AS process
FROM runs_input
ORDER BY test, query_index, server, run
