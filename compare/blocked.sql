-- blocked.sql: the paired statistic of every series at once (compare/blocked.py is its
-- reference implementation and says why).
--
-- Input:
--   file {pairs:String}, RowBinary (compare/blocked.py PAIR_RECORD), columns
--       series UInt64, position UInt32, process UInt32, reference Float64, patched Float64
--     one row per pair (the reference and the patched run of one run number), position 0, 1,
--     ... in run order; both values > 0; pairs 2b and 2b + 1 form block b, on one process set
--   file {structures:String}, TabSeparatedWithNames, columns
--       full UInt32, half UInt32, k UInt32, cdf Array(Float64)
--     for every (blocks of two pairs, blocks of one pair) in the input: the critical rank k
--     (0: no interval reaches the level) and cdf[j] = P(W <= j - 1) under the null
-- Output, one row per series:
--   series UInt64, pairs UInt32,
--   diff_log Float64      the median of the cross differences ln(patched) - ln(reference)
--                         within each block (4 a block of two pairs, 1 a block of one)
--   ci_low_log, ci_high_log Float64   the k-th smallest and k-th largest of them (-inf, inf
--                         when k = 0)
--   p_value Float64       two-sided against the margin on D's side, m = {margin:Float64}
--                         for diff_log >= 0, else -m: W = #(cross difference > m) +
--                         #(= m) / 2, then 2 P(W >= floor w) for diff_log >= 0, else
--                         2 P(W <= ceil w), at most 1
--   processes Array(Tuple(UInt32, UInt32, Float64))   per process set: its number, its pairs
--                         and the median of its own blocks' cross differences
SELECT
    series,
    pairs,
    diff_log,
    if(k = 0, -inf, cross[k]) AS ci_low_log,
    if(k = 0, inf, cross[length(cross) + 1 - k]) AS ci_high_log,
    least(1.0, 2 * if(diff_log >= 0,
        if(floor(w) = 0, 1.0, 1 - cdf[toUInt32(floor(w))]),
        cdf[toUInt32(ceil(w)) + 1])) AS p_value,
    processes
FROM
(
    SELECT
        series,
        toUInt32(sum(set_pairs)) AS pairs,
        toUInt32(sum(set_full)) AS full,
        toUInt32(sum(set_half)) AS half,
        arraySort(arrayFlatten(groupArray(set_cross))) AS cross,
        if(length(cross) % 2 = 1,
           cross[intDiv(length(cross), 2) + 1],
           (cross[intDiv(length(cross), 2)] + cross[intDiv(length(cross), 2) + 1]) / 2) AS diff_log,
        if(diff_log >= 0, {margin:Float64}, -{margin:Float64}) AS edge,
        arrayCount(x -> x > edge, cross) + arrayCount(x -> x = edge, cross) / 2 AS w,
        arraySort(groupArray((process, set_pairs, set_median))) AS processes
    FROM
    (
        SELECT
            series,
            process,
            toUInt32(sum(n)) AS set_pairs,
            countIf(n = 2) AS set_full,
            countIf(n = 1) AS set_half,
            arraySort(arrayFlatten(groupArray(d))) AS set_cross,
            if(length(set_cross) % 2 = 1,
               set_cross[intDiv(length(set_cross), 2) + 1],
               (set_cross[intDiv(length(set_cross), 2)]
                + set_cross[intDiv(length(set_cross), 2) + 1]) / 2) AS set_median
        FROM
        (
            SELECT
                series,
                any(process) AS process,
                count() AS n,
                arrayFlatten(arrayMap(pv -> arrayMap(rv -> pv - rv, groupArray(r)), groupArray(p))) AS d
            FROM
            (
                SELECT
                    series,
                    intDiv(position, 2) AS block,
                    process,
                    log(reference) AS r,
                    log(patched) AS p
                FROM file({pairs:String}, 'RowBinary',
                          'series UInt64, position UInt32, process UInt32, reference Float64, patched Float64')
            )
            GROUP BY series, block
        )
        GROUP BY series, process
    )
    GROUP BY series
) AS s
INNER JOIN file({structures:String}, 'TabSeparatedWithNames',
                'full UInt32, half UInt32, k UInt32, cdf Array(Float64)') AS t
    USING (full, half)
ORDER BY series
