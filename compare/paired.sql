-- paired.sql: the paired statistic, its randomization threshold and p-value, and a
-- bootstrap confidence interval, per series (compare/paired.py).
--
-- Input:
--   file {pairs:String}, TabSeparatedWithNames, columns
--       series UInt64, reference Float64, patched Float64
--     one row per pair (the reference and the patched run with the same run number); both
--     values > 0; every series has >= 1 pair
--   table paired_vectors (paired_tables.sql) with a row for every pair count n in the input
--   {quantile:Float64}: the level of the threshold, 0.99
--   {low_rank:UInt32}, {high_rank:UInt32}: 1-based ranks of the interval's ends among the
--     sorted resampled ratios (compare/bootstrap.py interval_ranks)
-- Output, one row per series:
--   series UInt64, pairs UInt32, exact UInt8,
--   observed Float64        the trimmed mean of the log ratios r_i = ln(patched_i / reference_i)
--   threshold_log Float64   the `quantile` quantile (inverted CDF: the smallest value whose
--                           cumulative share reaches it) of |trimmed mean of s_i r_i| over the
--                           sign vectors s
--   p_value Float64         share of sign vectors at least as extreme as the observed
--                           statistic, ordered by |trimmed mean| and, among equal |trimmed
--                           mean|s, by |mean| of all n values (a lexicographic statistic, valid
--                           as any function of the sign-flipped values is); for sampled
--                           vectors (k + 1) / (N + 1), so that it is never 0, except under
--                           complete separation (every r_i of one sign), where it is exactly
--                           2 / 2^n (see `separated`). Without the second key, swapping the
--                           signs of the trimmed smallest pairs leaves the trimmed mean as it
--                           is, so 2^(k+1) of 2^n vectors (k trimmed pairs a side) would tie
--                           with complete separation: the floor would be 4/128 at 7 pairs
--                           instead of 2/128
--   significant UInt8       |observed| >= threshold_log and p_value <= 1 - quantile: with few
--                           pairs the most extreme sign vectors alone hold more than 1%
--                           (2 of 128 at 7 pairs: the observed signs and their mirror), and
--                           the quantile cannot make the test any stricter
--   ci_low Float64, ci_high Float64   exp of the resampled trimmed means at the two ranks
-- Comparisons of a relabelled statistic with the observed one allow a relative 1e-9: the two
-- are the same sum computed in a different order (two values within it are equal).
SELECT
    series,
    n AS pairs,
    exact,
    observed,
    threshold_log,
    if(separated, 2 / pow(2, n),
       (as_extreme + 1 - exact) / (length(distribution) + 1 - exact)) AS p_value,
    toUInt8(abs(observed) >= threshold_log * (1 - 1e-9)
            AND p_value <= 1 - {quantile:Float64} + 1e-12) AS significant,
    ratios[{low_rank:UInt32}] AS ci_low,
    ratios[{high_rank:UInt32}] AS ci_high
FROM
(
    SELECT
        series,
        n,
        exact,
        arraySort(r) AS x,
        arraySort(arrayMap(v -> abs(v), r)) AS a,
        arraySum(arraySlice(x, trim + 1, n - 2 * trim)) / (n - 2 * trim) AS observed,
        abs(arraySum(x)) / n AS observed_mean,
        arrayMap(c -> abs(arrayDotProduct(c, a)), coefficients) AS distribution,
        -- |mean| of a vector (signs / n) decides only where |trimmed mean| ties: computed for
        -- the tied vectors alone (a few), not all 10,000
        arrayCount(d -> d > abs(observed) * (1 + 1e-9), distribution)
            + arrayCount(m -> abs(arrayDotProduct(m, a)) >= observed_mean * (1 - 1e-9),
                         arrayFilter((m, d) -> d >= abs(observed) * (1 - 1e-9)
                                               AND d <= abs(observed) * (1 + 1e-9),
                                     signs, distribution)) AS as_extreme,
        -- Complete separation, known exactly without sampling: s * a <= a elementwise, so no
        -- |trimmed mean| exceeds the observed one, and |mean| equals it only for all signs
        -- alike (each flip lowers the sum by 2 a_i, beyond the 1e-9 tolerance). So exactly 2
        -- of the 2^n vectors are as extreme. Enumerated sizes count them anyway.
        NOT exact AND (arrayAll(v -> v > 0, r) OR arrayAll(v -> v < 0, r))
            AND 2 * a[1] > 1e-9 * arraySum(a) AS separated,
        arraySort(distribution)[greatest(1, toUInt32(ceil({quantile:Float64} * length(distribution)
                                                         - 1e-9)))] AS threshold_log,
        arraySort(arrayMap(c -> exp(arrayDotProduct(c, x)), draws))
            AS ratios
    FROM
    (
        SELECT series, groupArray(log(patched / reference)) AS r, toUInt32(length(r)) AS n
        FROM file({pairs:String}, 'TabSeparatedWithNames',
                  'series UInt64, reference Float64, patched Float64')
        GROUP BY series
    ) AS s
    INNER JOIN paired_vectors USING (n)
)
ORDER BY series
