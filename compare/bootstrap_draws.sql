-- bootstrap_draws.sql: a fixed, seeded set of bootstrap resamples of one side's runs.
--
-- Input (query parameters only, no table):
--   {n:UInt32}          runs on this side, >= 1
--   {stream:UInt8}      1 for the reference side, 2 for the patched side: the two sides are
--                       resampled independently even when they have the same run count
--   {seed:UInt64}       the seed: the same seed always gives the same resamples
--   {resamples:UInt32}  how many resamples to draw
-- Output, one row per resample:
--   stream UInt8, n UInt32, resample UInt32 (0 .. resamples - 1),
--   m1 UInt32, m2 UInt32   positions (1-based, in the side's runs sorted ascending) of the two
--                          middle values of the resample: its median is (x[m1] + x[m2]) / 2
--                          (m1 = m2 when n is odd)
-- A resample draws n positions uniformly with replacement (a keyed hash modulo n). Sorting the
-- drawn positions sorts the drawn values too, because the runs are sorted: so only the two
-- middle positions matter, and they depend on n alone, not on the values. bootstrap.sql
-- reuses them for every series with n runs on this side.
SELECT
    {stream:UInt8} AS stream,
    {n:UInt32} AS n,
    toUInt32(number) AS resample,
    arraySort(arrayMap(i -> toUInt32(sipHash64({seed:UInt64}, {stream:UInt8}, {n:UInt32}, number, i)
                                     % {n:UInt32}) + 1,
                       range({n:UInt32}))) AS drawn,
    drawn[intDiv({n:UInt32} + 1, 2)] AS m1,
    drawn[intDiv({n:UInt32}, 2) + 1] AS m2
FROM numbers({resamples:UInt32})
ORDER BY resample
