-- chperf history schema, version 1: one statement per `;`, run in order, all idempotent.
-- Runs on ClickHouse 18.16 and on modern servers: plain MergeTree, no Map, no DateTime64,
-- no LowCardinality, no JSON type. Every table carries run_id; chperf inserts a run's rows
-- into a table only when that table has no row with the run_id yet (check-before-insert),
-- so uploading the same run twice does not duplicate rows.
-- To scale out, create these tables yourself as <name>_local (Replicated)MergeTree on every
-- node plus `<name>` = Distributed(cluster, db, <name>_local, cityHash64(run_id)): chperf
-- then reads and writes through the Distributed tables and these statements do nothing.
--
-- Format history: 1 -- first version; then, additively: the table load_levels.

-- One row per uploaded run: run.json (manifest is the whole file) and summary.json's status.
CREATE TABLE IF NOT EXISTS runs
(
    run_id String,
    upload_time DateTime,
    start_time DateTime,
    end_time DateTime,
    status String,
    check_status String,
    check_message String,
    chperf_version String,
    reference_version String,
    reference_sha256 String,
    patched_version String,
    patched_sha256 String,
    runs_per_side UInt32,
    shards UInt32,
    label_keys Array(String),
    label_values Array(String),
    manifest String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start_time)
ORDER BY (start_time, run_id);

-- One row per query and run: compare's verdicts.tsv.
CREATE TABLE IF NOT EXISTS verdicts
(
    run_id String,
    start_time DateTime,
    test String,
    query_index Int32,
    query String,
    verdict String,
    reason String,
    reference_median Nullable(Float64),
    patched_median Nullable(Float64),
    diff Nullable(Float64),
    threshold Nullable(Float64)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start_time)
ORDER BY (test, query_index, run_id);

-- One row per measured run of a query on one server: runs.tsv with query_log.tsv's time.
CREATE TABLE IF NOT EXISTS run_times
(
    run_id String,
    start_time DateTime,
    test String,
    query_index Int32,
    server String,
    run UInt32,
    query_id String,
    client_time Float64,
    server_time Nullable(Float64)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start_time)
ORDER BY (test, query_index, run_id, server, run);

-- One row per query, run and metric (server_time, ProfileEvents): compare's metrics.tsv.
CREATE TABLE IF NOT EXISTS metrics
(
    run_id String,
    start_time DateTime,
    test String,
    query_index Int32,
    metric String,
    reference_median Nullable(Float64),
    patched_median Nullable(Float64),
    diff Nullable(Float64),
    threshold Nullable(Float64)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start_time)
ORDER BY (test, query_index, metric, run_id);

-- One row per load-test level and run: summary.json `load` (docs/load.md). diff and threshold
-- are of the cost per query (per row for inserts); throughput_change is patched / reference
-- throughput - 1.
CREATE TABLE IF NOT EXISTS load_levels
(
    run_id String,
    start_time DateTime,
    test String,
    concurrency UInt32,
    verdict String,
    reason String,
    reference_qps Nullable(Float64),
    patched_qps Nullable(Float64),
    reference_p99 Nullable(Float64),
    patched_p99 Nullable(Float64),
    diff Nullable(Float64),
    threshold Nullable(Float64),
    throughput_change Nullable(Float64)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start_time)
ORDER BY (test, concurrency, run_id);
