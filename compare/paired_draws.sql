-- paired_draws.sql: a fixed, seeded set of bootstrap resamples of n pairs, as coefficient
-- vectors for the trimmed mean.
--
-- Input (query parameters only, no table):
--   {n:UInt32}          number of pairs, >= 1
--   {trim:UInt32}       pairs trimmed at each end (as in sign_coefficients.sql)
--   {resamples:UInt32}  how many resamples to draw
--   {draw_seed:UInt64}  the seed: the same seed always gives the same resamples
-- Output, one row per resample:
--   n UInt32, resample UInt32, coefficients Array(Float64) (length n)
-- A resample draws n positions uniformly with replacement. Applied to the log ratios sorted
-- ascending, x_1 <= ... <= x_n, sorting the drawn positions sorts the drawn values, so the
-- resample's trimmed mean is the mean of x at the drawn positions ranked trim + 1 .. n - trim:
-- sum_j c_j x_j with c_j = (times position j is among them) / (n - 2 trim). The coefficients
-- depend on n alone; paired.sql reuses them for every series with n pairs.
WITH
    {n:UInt32} AS n,
    {trim:UInt32} AS trim,
    arraySort(arrayMap(i -> toUInt32(sipHash64({draw_seed:UInt64}, n, number, i) % n) + 1,
                       range(n))) AS drawn,
    arraySlice(drawn, trim + 1, n - 2 * trim) AS kept
SELECT
    n,
    toUInt32(number) AS resample,
    arrayMap(j -> countEqual(kept, j) / (n - 2 * trim), range(1, n + 1)) AS coefficients
FROM numbers({resamples:UInt32})
ORDER BY resample
