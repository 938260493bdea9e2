"""The runner's tables: what was measured, what failed, and why each query stopped.

Format history (the run's schema_version, artifacts/manifest.py):
  1 -- queries, runs, query_log, profile_events, errors, tests; then, compatibly: stops.tsv
       (a missing one reads as "not recorded") and runs.tsv `process` (default 0);
       load_blocks.tsv (artifacts/loadblocks.py); protocol_runs.tsv and protocol_problems.tsv
       (artifacts/protocols.py); results.tsv (artifacts/results.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from artifacts.columns import NULL, Columns, read_columns
from artifacts.loadblocks import LOAD_BLOCKS
from artifacts.protocols import PROTOCOL_PROBLEMS, PROTOCOL_RUNS
from artifacts.results import RESULTS
from artifacts.tsv import Table, unescape
from artifacts.values import SECONDS, seconds

# Stages in errors.tsv: where a problem happened.
STAGE_PARSE = "parse"
STAGE_SETUP = "setup"  # create/fill queries
STAGE_PREWARM = "prewarm"
STAGE_RUN = "run"
STAGE_TEARDOWN = "teardown"
STAGE_SERVER = "server"  # a server died, hung or was restarted
STAGE_QUERY_LOG = "query_log"
# A run or prewarm over its time limit (max_execution_time, or the client's timeout): the query
# keeps the runs it has and is "too long".
STAGE_TOO_LONG = "too long"
# Not measured: the suite or test budget ran out, or the run was interrupted or stopped.
STAGE_NOT_RUN = "not run"

# tests.tsv statuses.
TEST_RAN = "ran"
TEST_SKIPPED = "skipped"
TEST_ERROR = "error"
TEST_NOT_RUN = "not run"

REFERENCE = "reference"
PATCHED = "patched"
BOTH = "both"  # errors.tsv's side for problems that concern both servers
SIDES = (REFERENCE, PATCHED)

# query_index used in errors.tsv for a problem of the whole test (parse, setup).
WHOLE_TEST = -1


@dataclass(frozen=True)
class QueryRow:
    test: str
    query_index: int
    query: str
    max_ignored_relative_change: float | None
    name: str = ""  # the query's tag="..." in the test file: a display name


# Not frozen, with slots: read by the hundred thousand, and a frozen dataclass takes ~5x as
# long to build. Treat as read-only.
@dataclass(slots=True)
class RunRow:
    test: str
    query_index: int
    server: str
    run: int
    query_id: str
    # seconds, wall time around the run with the result fully received
    client_time: float = field(metadata=SECONDS)
    process: int = 0  # which server process of its side ran it (runner/schedule.server_set)
    # wall clock (Unix seconds) when the run started, to place it among monitor.tsv's samples;
    # 0.0 in files written before the column existed
    start_time: float = 0.0


@dataclass(slots=True)  # as RunRow: read in bulk
class QueryLogRow:
    test: str
    query_index: int
    server: str
    run: int
    query_id: str
    server_time: float = field(metadata=SECONDS)  # query_duration_ms / 1000
    read_rows: int
    read_bytes: int
    memory_usage: int


@dataclass(slots=True)  # as RunRow: read in bulk
class ProfileEventRow:
    query_id: str
    server: str
    event: str
    value: int


@dataclass(frozen=True)
class ErrorRow:
    test: str
    query_index: int  # WHOLE_TEST for problems of the whole test
    server: str  # reference, patched or both
    stage: str
    error_code: int  # ClickHouse error code, 0 when there is none
    message: str


@dataclass(frozen=True)
class TestRow:
    test: str
    file: str
    status: str  # ran, skipped, error
    reason: str
    wall_time: float  # seconds spent on the test, setup and teardown included
    # the test's max_ignored_relative_change; its load levels' min effect (compare/load.py)
    max_ignored_relative_change: float | None = None
    # where its setup draws random data (file:line and the function), "" when it does not:
    # each server then holds its own data, so the sides' results may differ (compare/results.py)
    random_fill: str = ""


@dataclass(frozen=True)
class MonitorRow:
    """One interval of the environment monitor (runner/monitor.py); CPU shares are of the
    whole machine's CPU time, `*_cpu` are cores' worth, pressures are shares of the interval
    some task stalled (None: the kernel has no pressure information)."""

    time: float  # wall clock (Unix seconds) at the end of the interval
    seconds: float
    cpus: int
    user: float
    system: float
    iowait: float
    steal: float  # taken by the hypervisor for other guests
    idle: float
    servers_cpu: float  # our servers
    chperf_cpu: float  # chperf's own process
    foreign_cpu: float  # everything else on the machine
    load1: float
    runnable: int
    cpu_pressure: float | None
    io_pressure: float | None
    memory_pressure: float | None
    disk_busy: float  # share of the interval a disk was busy
    disk_queue: float  # average requests in flight
    mem_available_mb: float


@dataclass(frozen=True)
class StopRow:
    """Why the measurement of a query ended (adaptive mode; fixed mode: "fixed N runs")."""

    test: str
    query_index: int
    runs: int  # measured runs per side when it stopped
    reason: str


QUERIES = Table("queries.tsv", QueryRow)


def _run_row(f: list[str]) -> RunRow:
    """A runs.tsv line's fields, by hand: the largest table of a run."""
    return RunRow(
        f[0], int(f[1]), f[2], int(f[3]), f[4], seconds(f[5], "client_time"), int(f[6]),
        float(f[7]),
    )  # fmt: skip


RUNS = Table("runs.tsv", RunRow, _run_row)
QUERY_LOG = Table("query_log.tsv", QueryLogRow)
PROFILE_EVENTS = Table("profile_events.tsv", ProfileEventRow)
ERRORS = Table("errors.tsv", ErrorRow)
TESTS = Table("tests.tsv", TestRow)
STOPS = Table("stops.tsv", StopRow)
MONITOR = Table("monitor.tsv", MonitorRow)
ALL_TABLES: tuple[Table[Any], ...] = (
    QUERIES,
    RUNS,
    QUERY_LOG,
    PROFILE_EVENTS,
    ERRORS,
    TESTS,
    STOPS,
    MONITOR,
    LOAD_BLOCKS,
    PROTOCOL_RUNS,
    PROTOCOL_PROBLEMS,
    RESULTS,
)


class RunTime(NamedTuple):
    """The client time of one run (a NamedTuple: a run directory holds ~100k of them)."""

    test: str
    query_index: int
    server: str
    run: int
    client_time: float
    start_time: float = 0.0  # 0.0: written before runs had a start time


class ServerTime(NamedTuple):
    test: str
    query_index: int
    server: str
    server_time: float


_RUN_TIME = ("test", "query_index", "server", "run", "client_time")
_RUN_TIME_COLUMNS = (*_RUN_TIME, "start_time")
_SERVER_TIME = ("test", "query_index", "server", "server_time")


def read_run_times(directory: Path) -> Columns[RunTime]:
    """runs.tsv reduced to what the report plots, read by column name: fast on 100k rows."""
    return read_columns(directory, RUNS.file, _RUN_TIME, _RUN_TIME_COLUMNS, _run_time)


def read_server_times(directory: Path) -> Columns[ServerTime]:
    return read_columns(directory, QUERY_LOG.file, _SERVER_TIME, _SERVER_TIME, _server_time)


class MonitorSample(NamedTuple):
    """What the report draws of a monitor.tsv sample and compare/interference.py places runs
    among (a NamedTuple: a run of a few hours holds ~50k samples)."""

    time: float
    seconds: float
    cpus: int
    servers_cpu: float
    foreign_cpu: float
    steal: float


_MONITOR_SAMPLE = ("time", "seconds", "cpus", "servers_cpu", "foreign_cpu", "steal")


def read_monitor_samples(directory: Path) -> Columns[MonitorSample]:
    """monitor.tsv reduced to MonitorSample, read by column name: ~4x faster than its rows."""
    return read_columns(directory, MONITOR.file, _MONITOR_SAMPLE, _MONITOR_SAMPLE, _monitor_sample)


def _monitor_sample(v: Sequence[str]) -> MonitorSample:
    values = [float(v[n]) for n in (0, 1, 3, 4, 5)]
    if not all(math.isfinite(x) for x in values):  # as read_table refuses them
        raise ValueError(f"not a finite number in {list(v)}")
    time, length, servers, foreign, steal = values
    return MonitorSample(time, length, int(v[2]), servers, foreign, steal)


def _run_time(v: Sequence[str]) -> RunTime:
    start = 0.0 if v[5] in (NULL, "") else float(v[5])
    return RunTime(unescape(v[0]), int(v[1]), v[2], int(v[3]), seconds(v[4], "client_time"), start)


def _server_time(v: Sequence[str]) -> ServerTime:
    return ServerTime(unescape(v[0]), int(v[1]), v[2], seconds(v[3], "server_time"))
