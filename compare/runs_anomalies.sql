-- runs_anomalies.sql: how many runs of runs_input (runs.tsv, compare/grouped_runs.py) the fast
-- path cannot take as they are: a run recorded twice, a time not above 0 or over
-- {max_seconds:Float64} (nan included), an unknown server, a run on different process sets on
-- the two sides. Any: the caller reads the file the careful way, which says what is wrong
-- with which line.
SELECT
    (SELECT count() - uniqExact(test, query_index, server, run) FROM runs_input)
    + (SELECT countIf(NOT (client_time > 0 AND client_time <= {max_seconds:Float64})
                      OR server NOT IN ('reference', 'patched')) FROM runs_input)
    + (SELECT count() FROM (SELECT test, query_index, run FROM runs_input
                            GROUP BY test, query_index, run HAVING uniqExact(process) > 1))
