-- paired_tables.sql: the session tables of the paired method, filled per pair count by
-- sign_coefficients.sql and paired_draws.sql, read by paired.sql.
CREATE TABLE IF NOT EXISTS sign_coefficients
(
    n UInt32,
    trim UInt32,
    exact UInt8,
    vector UInt64,
    coefficients Array(Float64),
    signs Array(Float64)
)
ENGINE = Memory;
CREATE TABLE IF NOT EXISTS paired_draws
(
    n UInt32,
    resample UInt32,
    coefficients Array(Float64)
)
ENGINE = Memory
