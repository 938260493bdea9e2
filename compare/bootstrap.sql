-- bootstrap.sql: a percentile bootstrap confidence interval for the ratio of medians
-- patched / reference, per series.
--
-- Input:
--   file {samples:String}, TabSeparatedWithNames, columns
--       series UInt64, side String ('reference' or 'patched'), value Float64
--     one row per measured run; every series has >= 1 run on each side
--   table bootstrap_draws (stream, n, resample, m1, m2): the rows of bootstrap_draws.sql for
--     stream 1 and every reference run count, stream 2 and every patched run count in the
--     samples, all with the same number of resamples B
--   {low_rank:UInt32}, {high_rank:UInt32}: 1-based ranks, among the B resampled ratios sorted
--     ascending, of the interval's ends (compare/bootstrap.py: 50 and 1951 for B = 2000)
-- Output, one row per series:
--   series UInt64,
--   ci_low Nullable(Float64), ci_high Nullable(Float64)   the ratios at those ranks; NULL when
--     some resampled reference median is 0 (no ratio is defined)
-- Resample b of a series takes the reference median of the stream-1 draw b and the patched
-- median of the stream-2 draw b: the two sides are resampled independently, each side from
-- its own runs (a two-sample bootstrap).
SELECT
    series,
    if(arrayExists(m -> m = 0, reference_medians), NULL, ratios[{low_rank:UInt32}]) AS ci_low,
    if(arrayExists(m -> m = 0, reference_medians), NULL, ratios[{high_rank:UInt32}]) AS ci_high
FROM
(
    SELECT
        series,
        arrayMap(d -> (reference[d.1] + reference[d.2]) / 2, reference_draws) AS reference_medians,
        arrayMap(d -> (patched[d.1] + patched[d.2]) / 2, patched_draws) AS patched_medians,
        arraySort(arrayMap((r, p) -> p / r, reference_medians, patched_medians)) AS ratios
    FROM
    (
        SELECT
            series,
            arraySort(groupArrayIf(value, side = 'reference')) AS reference,
            arraySort(groupArrayIf(value, side = 'patched')) AS patched,
            toUInt32(length(reference)) AS n1,
            toUInt32(length(patched)) AS n2
        FROM file({samples:String}, 'TabSeparatedWithNames',
                  'series UInt64, side String, value Float64')
        GROUP BY series
    ) AS s
    INNER JOIN
    (
        SELECT n AS n1, arrayMap(t -> (t.2, t.3), arraySort(groupArray((resample, m1, m2))))
            AS reference_draws
        FROM bootstrap_draws
        WHERE stream = 1
        GROUP BY n
    ) AS r USING (n1)
    INNER JOIN
    (
        SELECT n AS n2, arrayMap(t -> (t.2, t.3), arraySort(groupArray((resample, m1, m2))))
            AS patched_draws
        FROM bootstrap_draws
        WHERE stream = 2
        GROUP BY n
    ) AS p USING (n2)
)
ORDER BY series
