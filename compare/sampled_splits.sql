-- sampled_splits.sql: a fixed, seeded sample of random splits of n1 + n2 pooled runs.
--
-- Input (query parameters only, no table):
--   {n1:UInt32}      size of group 1 (the reference side's run count)
--   {n2:UInt32}      size of group 2 (the patched side's run count)
--   {seed:UInt64}    the seed: the same seed always gives the same splits
--   {splits:UInt32}  how many splits to draw
-- Output, one row per split:
--   split UInt64                  0 .. splits - 1
--   group1 Array(UInt32)          the n1 positions (1-based, ascending) of the pooled runs,
--                                 sorted ascending, that go to group 1; the others form group 2
-- Each split is a uniformly random permutation (positions ordered by a keyed hash), cut after
-- n1 elements. Used when C(n1 + n2, n1) is too large for split_weights_exact.sql.
SELECT
    number AS split,
    arraySort(arraySlice(
        arraySort(i -> sipHash64({seed:UInt64}, {n1:UInt32}, {n2:UInt32}, number, i),
                  range(1, {n1:UInt32} + {n2:UInt32} + 1)),
        1, {n1:UInt32})) :: Array(UInt32) AS group1
FROM numbers({splits:UInt32})
ORDER BY split
