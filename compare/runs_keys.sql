-- runs_keys.sql: the queries of runs_input (runs.tsv) and the key runs_by_query.sql gives
-- each; JSONCompactEachRow: key (a UInt64, quoted), test, query_index.
SELECT cityHash64(test, query_index) AS key, test, toInt32(query_index) AS query_index
FROM runs_input
GROUP BY test, query_index
