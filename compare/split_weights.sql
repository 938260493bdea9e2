-- split_weights.sql: the session table holding the split distributions of every group-size
-- pair in use; filled by split_weights_exact.sql or split_weights_sampled.sql, read by
-- randomization.sql. Columns: see split_weights_exact.sql.
CREATE TABLE IF NOT EXISTS split_weights
(
    n1 UInt32,
    n2 UInt32,
    exact UInt8,
    p1 UInt32,
    p2 UInt32,
    q1 UInt32,
    q2 UInt32,
    weight UInt64
)
ENGINE = Memory
