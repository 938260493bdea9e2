-- paired_tables.sql: the session table of the paired method, one row per pair count n,
-- filled by paired.py (Paired._ensure) from sign_coefficients.sql and paired_draws.sql, read
-- by paired.sql and paired_tail_share.sql. The vectors are grouped into arrays once per n:
-- grouping them at every query was most of an adaptive look (bench/bench_look.py).
CREATE TABLE IF NOT EXISTS paired_vectors
(
    n UInt32,
    trim UInt32,
    exact UInt8,
    coefficients Array(Array(Float64)),  -- sign_coefficients.sql, one per sign vector
    signs Array(Array(Float64)),         -- sign_coefficients.sql, in the same order
    draws Array(Array(Float64))          -- paired_draws.sql, one per resample
)
ENGINE = Memory
