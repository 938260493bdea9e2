-- split_weights_exact.sql: the exact randomization distribution of median positions.
--
-- Input (query parameters only, no table):
--   {n1:UInt32}  size of group 1 (the reference side's run count), >= 1
--   {n2:UInt32}  size of group 2 (the patched side's run count), >= 1
-- Output, one row per combination of median positions that some split produces:
--   n1 UInt32, n2 UInt32, exact UInt8 (always 1),
--   p1 UInt32, p2 UInt32   positions (1-based, in the pooled runs sorted ascending) of the two
--                          middle values of group 1: its median is (pooled[p1] + pooled[p2]) / 2
--                          (p1 = p2 when n1 is odd),
--   q1 UInt32, q2 UInt32   the same for group 2,
--   weight UInt64          how many of the C(n1 + n2, n1) splits give these positions.
-- The weights sum to C(n1 + n2, n1); exact for n1 + n2 <= 60 (UInt64 range, see
-- compare/randomization.py MAX_EXACT_POOLED_RUNS).
--
-- Why this is exact and cheap: a split is a lattice path from (0, 0) to (n1, n2) whose step i
-- goes right when pooled position i goes to group 1 and up when it goes to group 2. "The k-th
-- smallest member of group 1 is at position p" is the step (k-1, p-k) -> (k, p-k); "the k-th
-- smallest member of group 2 is at q" is the step (q-k, k-1) -> (q-k, k). The number of paths
-- through given steps (ordered by position) is the product of the binomials C(dx + dy, dx)
-- over the gaps between them. Only O(n^2) (odd sizes) to O(n^4) (even sizes) candidate
-- positions exist, instead of C(n1 + n2, n1) splits.
WITH
    {n1:UInt32} AS n1,
    {n2:UInt32} AS n2,
    intDiv(n1 + 1, 2) AS a1,      -- ranks of the middle values of group 1 (equal when n1 is odd)
    intDiv(n1, 2) + 1 AS b1,
    intDiv(n2 + 1, 2) AS a2,      -- the same for group 2
    intDiv(n2, 2) + 1 AS b2,
    -- r_p1 .. r_q2: candidate positions. The steps as (position, from_x, from_y, to_x, to_y),
    -- in Int64 so that gaps may go negative.
    (toInt64(r_p1), toInt64(a1) - 1, toInt64(r_p1) - a1, toInt64(a1), toInt64(r_p1) - a1) AS step_p1,
    (toInt64(r_p2), toInt64(b1) - 1, toInt64(r_p2) - b1, toInt64(b1), toInt64(r_p2) - b1) AS step_p2,
    (toInt64(r_q1), toInt64(r_q1) - a2, toInt64(a2) - 1, toInt64(r_q1) - a2, toInt64(a2)) AS step_q1,
    (toInt64(r_q2), toInt64(r_q2) - b2, toInt64(b2) - 1, toInt64(r_q2) - b2, toInt64(b2)) AS step_q2,
    arraySort(arrayDistinct([step_p1, step_p2, step_q1, step_q2])) AS steps,
    arrayConcat([(toInt64(0), toInt64(0))], arrayMap(s -> (s.4, s.5), steps)) AS gap_from,
    arrayConcat(arrayMap(s -> (s.2, s.3), steps), [(toInt64(n1), toInt64(n2))]) AS gap_to,
    arrayMap((f, t) -> (t.1 - f.1, t.2 - f.2), gap_from, gap_to) AS gaps,
    -- C(dx + dy, dx) as the running product C(dy + i, i), i = 1..dx: every step is an integer
    arrayMap(
        g -> arrayFold((acc, i) -> intDiv(acc * toUInt128(g.2 + i), toUInt128(i)),
                       range(1, toUInt64(g.1) + 1), toUInt128(1)),
        gaps) AS binomials,
    length(arrayDistinct(arrayMap(s -> s.1, steps))) = length(steps) AS positions_distinct,
    arrayAll(g -> g.1 >= 0 AND g.2 >= 0, gaps) AS gaps_possible
SELECT
    n1,
    n2,
    toUInt8(1) AS exact,
    toUInt32(r_p1) AS p1,
    toUInt32(r_p2) AS p2,
    toUInt32(r_q1) AS q1,
    toUInt32(r_q2) AS q2,
    toUInt64(arrayFold((acc, b) -> acc * b, binomials, toUInt128(1))) AS weight
FROM system.one
-- ARRAY JOIN clauses, not arrayJoin(): the analyzer merges arrayJoin() calls that fold to the
-- same expression (as group 1's and group 2's do when n1 = n2), which would pair p1 with q1 only.
ARRAY JOIN range(a1, a1 + n2 + 1) AS r_p1
ARRAY JOIN if(a1 = b1, [r_p1], range(r_p1 + 1, b1 + n2 + 1)) AS r_p2
ARRAY JOIN range(a2, a2 + n1 + 1) AS r_q1
ARRAY JOIN if(a2 = b2, [r_q1], range(r_q1 + 1, b2 + n1 + 1)) AS r_q2
WHERE positions_distinct AND gaps_possible
ORDER BY p1, p2, q1, q2
