-- bootstrap_draws_table.sql: the session table holding the bootstrap resamples of every
-- (stream, run count) in use; filled from bootstrap_draws.sql, read by bootstrap.sql.
-- Columns: see bootstrap_draws.sql (without `drawn`).
CREATE TABLE IF NOT EXISTS bootstrap_draws
(
    stream UInt8,
    n UInt32,
    resample UInt32,
    m1 UInt32,
    m2 UInt32
)
ENGINE = Memory
