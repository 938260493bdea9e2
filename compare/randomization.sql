-- randomization.sql: medians, relative difference, randomization threshold and p-value per
-- series (a series is one metric of one query: the runs of both sides).
--
-- Input:
--   file {samples:String}, TabSeparatedWithNames, columns
--       series UInt64, side String ('reference' or 'patched'), value Float64
--     one row per measured run; every series has >= 1 run on each side
--   table split_weights (n1, n2, exact, p1, p2, q1, q2, weight): the rows of
--     split_weights_exact.sql or split_weights_sampled.sql for every (n1, n2) in the samples
--   {quantile:Float64}: the level of the threshold, 0.99
-- Output, one row per series:
--   series UInt64, runs_reference UInt64, runs_patched UInt64,
--   reference_median Float64, patched_median Float64   (the middle value, or the mean of the
--     two middle values for an even count: numpy.median's definition)
--   threshold_abs Float64   the `quantile` quantile of |median(group 1) - median(group 2)| over
--     the splits, inverted-CDF definition: the smallest d whose cumulative weight reaches
--     quantile * total weight
--   p_value Float64   weight of splits with |difference| >= the observed one, over the total;
--     for sampled splits (k + 1) / (N + 1), so that it is never 0
--   diff Nullable(Float64)        (patched_median - reference_median) / reference_median
--   threshold Nullable(Float64)   threshold_abs / reference_median
--     (both NULL when the reference median is 0: no relative change is defined)
--   exact UInt8   1 when every split was enumerated
-- The observed difference is computed with the same arithmetic as the splits' differences, so
-- the observed split compares equal to itself.
SELECT
    series,
    runs_reference,
    runs_patched,
    reference_median,
    patched_median,
    if(reference_median = 0, NULL, (patched_median - reference_median) / reference_median) AS diff,
    if(reference_median = 0, NULL, threshold_abs / reference_median) AS threshold,
    threshold_abs,
    p_value,
    exact
FROM
(
    SELECT
        series,
        n1 AS runs_reference,
        n2 AS runs_patched,
        reference_median,
        patched_median,
        -- per split (t = (p1, p2, q1, q2, weight)): |median(group 1) - median(group 2)|
        arrayMap(t -> abs((pooled[t.1] + pooled[t.2]) / 2 - (pooled[t.3] + pooled[t.4]) / 2),
                 positions) AS differences,
        arrayMap(t -> t.5, positions) AS weights,
        arraySum(weights) AS total,
        arraySort(differences) AS sorted_differences,
        arraySort((weight, difference) -> difference, weights, differences) AS sorted_weights,
        sorted_differences[arrayFirstIndex(c -> c >= {quantile:Float64} * total,
                                           arrayCumSum(sorted_weights))] AS threshold_abs,
        abs(reference_median - patched_median) AS observed,
        (arraySum(arrayMap((d, w) -> if(d >= observed, w, 0), differences, weights)) + 1 - exact)
            / (total + 1 - exact) AS p_value,
        exact
    FROM
    (
        SELECT
            series,
            arraySort(groupArrayIf(value, side = 'reference')) AS reference,
            arraySort(groupArrayIf(value, side = 'patched')) AS patched,
            length(reference) AS n1,
            length(patched) AS n2,
            arraySort(arrayConcat(reference, patched)) AS pooled,
            (reference[intDiv(n1 + 1, 2)] + reference[intDiv(n1, 2) + 1]) / 2 AS reference_median,
            (patched[intDiv(n2 + 1, 2)] + patched[intDiv(n2, 2) + 1]) / 2 AS patched_median
        FROM file({samples:String}, 'TabSeparatedWithNames',
                  'series UInt64, side String, value Float64')
        GROUP BY series
    ) AS s
    INNER JOIN
    (
        SELECT n1, n2, any(exact) AS exact, groupArray((p1, p2, q1, q2, weight)) AS positions
        FROM split_weights
        GROUP BY n1, n2
    ) AS w USING (n1, n2)
)
ORDER BY series
