-- sampled_splits.sql: a fixed, seeded sample of random splits of n1 + n2 pooled runs.
--
-- Input (query parameters only, no table):
--   {n1:UInt32}      size of group 1 (the reference side's run count)
--   {n2:UInt32}      size of group 2 (the patched side's run count)
--   {seed:UInt64}    the seed: the same seed always gives the same splits
--   {splits:UInt32}  how many splits to draw
-- Output, one row per split:
--   split UInt64                  0 .. splits - 1
--   group1 Array(UInt32)          the n1 positions (1-based, ascending) of the pooled runs
--                                 that go to group 1
--   group2 Array(UInt32)          the other n2 positions, ascending
-- Each split is a uniformly random permutation (positions ordered by a keyed hash), cut after
-- n1 elements. Used when C(n1 + n2, n1) is too large for split_weights_exact.sql. Both groups
-- come from slices of the one permutation: n log n a split (taking group 2 as the positions
-- not in group 1 costs n1 x n2, 10^10 comparisons for 10,000 splits of 1,000 runs a side).
SELECT split, group1, group2
FROM
(
    SELECT
        number AS split,
        arraySort(i -> sipHash64({seed:UInt64}, {n1:UInt32}, {n2:UInt32}, number, i),
                  range(1, {n1:UInt32} + {n2:UInt32} + 1)) :: Array(UInt32) AS permutation,
        arraySort(arraySlice(permutation, 1, {n1:UInt32})) AS group1,
        arraySort(arraySlice(permutation, {n1:UInt32} + 1)) AS group2
    FROM numbers({splits:UInt32})
)
ORDER BY split
