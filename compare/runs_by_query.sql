-- runs_by_query.sql: runs.tsv grouped by query, for compare/evidence.py's fast path.
--
-- Input: file {runs:String}, runs.tsv with every column (artifacts/tables.py RunRow);
-- {max_seconds:Float64}, the longest possible time (artifacts/values.py MAX_SECONDS).
-- Output, JSONCompactEachRow, one row per (test, query_index):
--   test, query_index, 0, then by run number: the reference runs, their times and their
--   server process sets, the patched runs and their times
-- and, first, one row ["", -1, anomalies]: how many runs the fast path cannot take as they
-- are (a run recorded twice, a time not above 0 or over max_seconds, nan included, an
-- unknown server, a run on different process sets on the two sides). Any anomaly: the caller
-- reads the file the careful way, which says what is wrong with which line.
SELECT
    '' AS test,
    toInt32(-1) AS query_index,
    toInt32(
        (SELECT count() - uniqExact(test, query_index, server, run) FROM runs_input)
        + (SELECT countIf(NOT (client_time > 0 AND client_time <= {max_seconds:Float64})
                          OR server NOT IN ('reference', 'patched')) FROM runs_input)
        + (SELECT count() FROM (SELECT test, query_index, run FROM runs_input
                                GROUP BY test, query_index, run HAVING uniqExact(process) > 1))
    ) AS anomalies,
    CAST([] AS Array(Int32)) AS ref_runs,
    CAST([] AS Array(Float64)) AS ref_times,
    CAST([] AS Array(Int32)) AS ref_processes,
    CAST([] AS Array(Int32)) AS pat_runs,
    CAST([] AS Array(Float64)) AS pat_times
UNION ALL
SELECT
    test,
    query_index,
    toInt32(0) AS anomalies,
    arrayMap(x -> x.1, reference) AS ref_runs,
    arrayMap(x -> x.2, reference) AS ref_times,
    arrayMap(x -> x.3, reference) AS ref_processes,
    arrayMap(x -> x.1, patched) AS pat_runs,
    arrayMap(x -> x.2, patched) AS pat_times
FROM
(
    SELECT
        test,
        toInt32(query_index) AS query_index,
        arraySort(groupArrayIf((toInt32(run), client_time, toInt32(process)), server = 'reference'))
            AS reference,
        arraySort(groupArrayIf((toInt32(run), client_time), server = 'patched')) AS patched
    FROM runs_input
    GROUP BY test, query_index
)
