-- paired_tail_share.sql: per series, the share of the sign vectors whose |trimmed mean of
-- s_i r_i| the paired per-query rule would flag: at least a given cutoff (on the log scale)
-- and with a p-value of at most `level`. How often swapping the two runs of each pair at
-- random would be called a change (compare/calibration.py flag_rate under --method paired).
--
-- Input:
--   file {pairs:String}: as in paired.sql (series UInt64, reference Float64, patched Float64)
--   file {cutoffs:String}, TabSeparatedWithNames, columns series UInt64, cutoff Float64:
--     one row per series, the cutoff as a log ratio
--   table paired_vectors (paired_tables.sql) with a row for every pair count in the input
--   {level:Float64}: the p-value a flag needs, 0.01 (paired.sql's 1 - quantile)
-- Output, one row per series:
--   series UInt64, share Float64   the share of the sign vectors (all of them when exact,
--     the sampled ones otherwise) whose |statistic| reaches the cutoff AND is rare enough to
--     be significant itself: at most `rare` = floor(level x total) vectors are at least as
--     extreme, in paired.sql's order (|trimmed mean|, ties broken by |mean|); with fewer
--     than 1/level vectors (6 pairs or fewer) none is. Only vectors whose |trimmed mean|
--     reaches the (total - rare)-th smallest can qualify (above it are rare + 1 others), so
--     only those are counted against all. Comparisons allow a relative 1e-9 as in paired.sql.
SELECT series, share
FROM
(
    SELECT
        series,
        arrayMap((c, m) -> (abs(arrayDotProduct(c, a)), abs(arrayDotProduct(m, a))),
                 coefficients, signs) AS stats,
        length(stats) AS total,
        toUInt32(floor({level:Float64} * total + 1e-9)) AS rare,
        if(rare = 0, 0, arraySort(arrayMap(v -> v.1, stats))[total - rare]) AS bar,
        if(rare = 0, 0,
           arrayCount(
               v -> v.1 >= cutoff * (1 - 1e-9)
                    AND arrayCount(w -> w.1 > v.1 * (1 + 1e-9)
                                        OR (w.1 >= v.1 * (1 - 1e-9) AND w.2 >= v.2 * (1 - 1e-9)),
                                   stats) <= rare,
               arrayFilter(v -> v.1 >= bar * (1 - 1e-9), stats)) / total)
            AS share
    FROM
    (
        SELECT series, arraySort(groupArray(abs(log(patched / reference)))) AS a,
               toUInt32(length(a)) AS n
        FROM file({pairs:String}, 'TabSeparatedWithNames',
                  'series UInt64, reference Float64, patched Float64')
        GROUP BY series
    ) AS s
    INNER JOIN
    (
        SELECT series, cutoff
        FROM file({cutoffs:String}, 'TabSeparatedWithNames', 'series UInt64, cutoff Float64')
    ) AS c USING (series)
    INNER JOIN paired_vectors USING (n)
)
ORDER BY series
