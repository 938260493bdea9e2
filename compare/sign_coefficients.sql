-- sign_coefficients.sql: the randomization distribution of the paired statistic, as
-- coefficient vectors that do not depend on the values.
--
-- Input (query parameters only, no table):
--   {n:UInt32}        number of pairs, >= 1
--   {trim:UInt32}     pairs trimmed at each end: floor(n * TRIM) (compare/paired.py)
--   {vectors:UInt32}  sign vectors when sampled; when 2^n <= vectors every vector is used
--   {seed:UInt64}     the seed of the sampled vectors: the same seed gives the same vectors
-- Output, one row per sign vector:
--   n UInt32, trim UInt32, exact UInt8 (1 when all 2^n vectors are enumerated),
--   vector UInt64, coefficients Array(Float64)  (length n),
--   signs Array(Float64)  (length n): s_i / n, so that sum_i signs_i a_i is the mean of s * a
-- The paired statistic of a series is the trimmed mean of its log ratios r_i (the mean of
-- the middle n - 2 trim values, sorted). Under the null hypothesis each pair's two runs are
-- exchangeable, so each r_i is as likely to be -r_i: a sign vector s flips some of them.
-- Sort the magnitudes a_1 <= ... <= a_n = |r|. The signed values s_i a_i sort as the
-- negatives by decreasing magnitude, then the positives by increasing magnitude, so the rank
-- of s_i a_i depends on s alone:
--   s_i = -1: 1 + #{j > i: s_j = -1}
--   s_i = +1: 1 + #{j: s_j = -1} + #{j < i: s_j = +1}
-- and the trimmed mean of s * a is sum_i c_i a_i with c_i = s_i / (n - 2 trim) when
-- trim < rank_i <= n - trim, else 0. paired.sql applies these coefficients to every series
-- with n pairs; it breaks ties of |trimmed mean| with |mean| (the `signs`), see paired.sql.
WITH
    {n:UInt32} AS n,
    {trim:UInt32} AS trim,
    toUInt64(pow(2, least(n, 62))) AS all_vectors,
    n <= 62 AND all_vectors <= {vectors:UInt32} AS is_exact,
    -- s_i = -1 (negative) or +1: bit i of the vector number, or a keyed hash bit
    arrayMap(i -> if(is_exact, bitTest(number, i - 1),
                     sipHash64({seed:UInt64}, n, number, i) % 2 = 1),
             range(1, n + 1)) AS negative,
    arrayCumSum(arrayMap(x -> toUInt32(x), negative)) AS negatives_upto,
    arrayCumSum(arrayMap(x -> toUInt32(NOT x), negative)) AS positives_upto,
    negatives_upto[n] AS negatives,
    arrayMap((neg, i) -> if(neg, 1 + negatives - negatives_upto[i],
                            1 + negatives + positives_upto[i] - 1),
             negative, range(1, n + 1)) AS ranks
SELECT
    n,
    trim,
    toUInt8(is_exact) AS exact,
    number AS vector,
    arrayMap((neg, rank) -> if(rank > trim AND rank <= n - trim,
                               if(neg, -1.0, 1.0) / (n - 2 * trim), 0.0),
             negative, ranks) AS coefficients,
    arrayMap(neg -> if(neg, -1.0, 1.0) / n, negative) AS signs
FROM numbers(if(is_exact, all_vectors, {vectors:UInt32}))
ORDER BY vector
