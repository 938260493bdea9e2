"""load_blocks.tsv: one row per block of a load test (runner/load.py, docs/load.md).

Format history (the run's schema_version, artifacts/manifest.py):
  1 -- first version; a run directory without the file has no load tests; then, additively,
       `process` (the server process set of the block; 0 in files written before it).
"""

from __future__ import annotations

from dataclasses import dataclass

from artifacts.tsv import Table


@dataclass(frozen=True)
class LoadBlockRow:
    test: str
    concurrency: int  # clients running the mix at once
    server: str  # reference or patched
    pair: int  # blocks of one level in run order: pair 0 is R P, 1 is P R, 2 P R, 3 R P, ...
    start_time: float  # wall clock (Unix seconds) when the block started
    seconds: float  # from the start to the last client's last query
    queries: int  # completed without error
    errors: int  # failed queries
    p50: float | None  # latency percentiles of the completed queries, seconds
    p90: float | None
    p99: float | None
    rows: int  # insert tests: rows the block wrote (system.parts after it); else 0
    bytes: int  # insert tests: their uncompressed bytes; else 0
    harness_cpu: float  # chperf's own CPU during the block, in cores: what the clients cost
    error: str  # the first failure's message, "" when none
    process: int = 0  # the server process set that ran the block (runner/schedule.py)


LOAD_BLOCKS = Table("load_blocks.tsv", LoadBlockRow)
