-- split_weights_sampled.sql: the sampled randomization distribution of median positions.
--
-- Input:
--   table sampled_splits (split UInt64, group1 Array(UInt32), group2 Array(UInt32)): the rows
--   of sampled_splits.sql
--   {n1:UInt32}, {n2:UInt32}: the group sizes the splits were drawn for
-- Output: the same columns as split_weights_exact.sql (n1, n2, exact = 0, p1, p2, q1, q2,
--   weight), where weight counts the sampled splits giving these median positions; the
--   weights sum to the number of sampled splits.
WITH
    {n1:UInt32} AS n1,
    {n2:UInt32} AS n2
SELECT
    n1,
    n2,
    toUInt8(0) AS exact,
    group1[intDiv(n1 + 1, 2)] AS p1,
    group1[intDiv(n1, 2) + 1] AS p2,
    group2[intDiv(n2 + 1, 2)] AS q1,
    group2[intDiv(n2, 2) + 1] AS q2,
    count() AS weight
FROM sampled_splits
GROUP BY p1, p2, q1, q2
ORDER BY p1, p2, q1, q2
