-- runs_by_query.sql: runs.tsv grouped by query, for compare/evidence.py's fast path.
--
-- Input: file {runs:String}, runs.tsv with every column (artifacts/tables.py RunRow);
-- {max_seconds:Float64}, the longest possible time (artifacts/values.py MAX_SECONDS).
-- Output, JSONCompactEachRow, one row per (test, query_index):
--   test, query_index, reference runs, reference times, patched runs, patched times,
--   runs, processes (each pair's process set, by run number)
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
    CAST([] AS Array(Int32)) AS pat_runs,
    CAST([] AS Array(Float64)) AS pat_times,
    CAST([] AS Array(Int32)) AS runs,
    CAST([] AS Array(Int32)) AS processes
UNION ALL
SELECT
    test,
    toInt32(query_index) AS query_index,
    toInt32(0) AS anomalies,
    arrayMap(x -> toInt32(x.1), arraySort(groupArrayIf((run, client_time), server = 'reference'))) AS ref_runs,
    arrayMap(x -> x.2, arraySort(groupArrayIf((run, client_time), server = 'reference'))) AS ref_times,
    arrayMap(x -> toInt32(x.1), arraySort(groupArrayIf((run, client_time), server = 'patched'))) AS pat_runs,
    arrayMap(x -> x.2, arraySort(groupArrayIf((run, client_time), server = 'patched'))) AS pat_times,
    arrayMap(x -> toInt32(x.1), arraySort(groupUniqArray((run, process)))) AS runs,
    arrayMap(x -> toInt32(x.2), arraySort(groupUniqArray((run, process)))) AS processes
FROM runs_input
GROUP BY test, query_index
