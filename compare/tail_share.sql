-- tail_share.sql: per series, the share of the randomization splits whose |median(group 1) -
-- median(group 2)| reaches a given cutoff: how often relabelling the series' own runs at
-- random would produce a difference at least that large (compare/calibration.py).
--
-- Input:
--   file {samples:String}: as in randomization.sql (series UInt64, side String, value Float64)
--   file {cutoffs:String}, TabSeparatedWithNames, columns series UInt64, cutoff Float64:
--     one row per series, the cutoff in the values' own unit
--   table split_weights: as in randomization.sql, for every (n1, n2) in the samples
-- Output, one row per series:
--   series UInt64, share Float64   weight of the splits with difference >= cutoff, over the
--     total weight (exact splits: a probability; sampled splits: the sampled share k / N)
SELECT series, arraySum(arrayMap(t -> if(
        abs((pooled[t.1] + pooled[t.2]) / 2 - (pooled[t.3] + pooled[t.4]) / 2) >= cutoff, t.5, 0),
        positions)) / arraySum(arrayMap(t -> t.5, positions)) AS share
FROM
(
    SELECT
        series,
        toUInt32(countIf(side = 'reference')) AS n1,
        toUInt32(countIf(side = 'patched')) AS n2,
        arraySort(groupArray(value)) AS pooled
    FROM file({samples:String}, 'TabSeparatedWithNames',
              'series UInt64, side String, value Float64')
    GROUP BY series
) AS s
INNER JOIN
(
    SELECT series, cutoff
    FROM file({cutoffs:String}, 'TabSeparatedWithNames', 'series UInt64, cutoff Float64')
) AS c USING (series)
INNER JOIN
(
    SELECT n1, n2, groupArray((p1, p2, q1, q2, weight)) AS positions
    FROM split_weights
    GROUP BY n1, n2
) AS w USING (n1, n2)
ORDER BY series
