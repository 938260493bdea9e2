"""Synthetic artifact directories for the report's tests and benchmark — not measurements.

They hold exactly the files a real run and `chperf compare` write; the verdict columns are
invented (no statistics run) and only have to look plausible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts import manifest, tables, tsv
from artifacts.summary import write_summary
from artifacts.tables import (
    ErrorRow,
    MonitorRow,
    ProfileEventRow,
    QueryLogRow,
    QueryRow,
    RunRow,
    TestRow,
)
from artifacts.verdicts import MetricRow, VerdictRow, write_metrics, write_verdicts
from compare.metrics import SERVER_TIME

# Run-time multipliers around the median: 7 runs whose median is exactly the median.
_SPREAD = (0.97, 1.03, 0.99, 1.0, 1.04, 0.98, 1.01)
START_TIME = 1_777_000_000.0  # the first run's start, Unix seconds
RUN_GAP_SECONDS = 0.01  # between the end of one run and the start of the next
MONITOR_INTERVAL = 0.25  # as runner/monitor.py samples
BUSY_CORES = 0.6  # a neighbour's CPU during a busy span


@dataclass(frozen=True)
class QuerySpec:
    test: str
    index: int
    sql: str
    verdict: str
    reason: str
    reference: float | None  # median client time, seconds; None = failed on that side
    patched: float | None
    threshold: float | None
    server_share: float = 0.9  # server time / client time


def _verdict_row(q: QuerySpec, runs: int) -> VerdictRow:
    diff = None
    if q.reference is not None and q.patched is not None:
        diff = (q.patched - q.reference) / q.reference
    p_value = None if diff is None else (0.001 if q.verdict in ("slower", "faster") else 0.5)
    return VerdictRow(
        q.test,
        q.index,
        q.verdict,
        q.reason,
        q.reference,
        q.patched,
        diff,
        q.threshold,
        p_value,
        runs if q.reference is not None else 0,
        runs if q.patched is not None else 0,
    )


def _manifest(specs: Sequence[QuerySpec], profiles: list[dict[str, Any]]) -> dict[str, Any]:
    def server(side: str, overlays: list[str], pid: int) -> dict[str, Any]:
        return {
            "side": side,
            "binary": "/usr/sbin/clickhouse-server",
            "sha256": "5f1e" + "0" * 60,
            "version": "18.16.1",
            "overlays": overlays,
            "capabilities": {"trace_log": False, "profile_events": "arrays"},
            "tcp_port": 9001 if side == tables.REFERENCE else 9002,
            "http_port": 8124 if side == tables.REFERENCE else 8125,
            "pid": pid,
        }

    return {
        "chperf_version": "0.1.0",
        "run_id": "synthetic",
        "status": "complete",
        "start_time": "2026-05-01T10:00:00+00:00",
        "end_time": "2026-05-01T10:12:34+00:00",
        "duration_seconds": 754.0,
        "servers": {
            tables.REFERENCE: server(tables.REFERENCE, [], 4120),
            tables.PATCHED: server(tables.PATCHED, ["overlays/max_block_size_8192"], 4121),
        },
        "machine": {"cpu_model": "Synthetic CPU", "cores": 2, "kernel": "6.1", "hostname": "ci"},
        "options": {"runs": 7, "tests": sorted({s.test for s in specs})},
        "profiles": profiles,
        "profiling_unavailable": None,
    }


def write_run(
    out: Path,
    specs: Sequence[QuerySpec],
    *,
    runs: int = len(_SPREAD),
    tests: Sequence[TestRow] = (),
    errors: Sequence[ErrorRow] = (),
    profiles: list[dict[str, Any]] | None = None,
    metrics: Sequence[MetricRow] = (),
    busy: Sequence[tuple[float, float]] | None = None,
) -> None:
    """With `busy` (spans in seconds from the first run's start), monitor.tsv holds a sample
    every MONITOR_INTERVAL seconds in which a neighbour takes BUSY_CORES during those spans."""
    out.mkdir(parents=True, exist_ok=True)
    run_rows: list[RunRow] = []
    log_rows: list[QueryLogRow] = []
    events: list[ProfileEventRow] = []
    clock = START_TIME
    for q in specs:
        for run in range(runs):  # the two sides in alternation, as a run makes them
            for side, median in ((tables.REFERENCE, q.reference), (tables.PATCHED, q.patched)):
                if median is None:
                    continue
                t = median * _SPREAD[run % len(_SPREAD)]
                query_id = f"{q.test}-{q.index}-{run}"
                run_rows.append(RunRow(q.test, q.index, side, run, query_id, t, 0, clock))
                clock += t + RUN_GAP_SECONDS
                log_rows.append(
                    QueryLogRow(q.test, q.index, side, run, query_id, t * q.server_share, 1, 8, 1)
                )
                events.append(ProfileEventRow(query_id, side, "SelectedRows", 1))
    tsv.write_table(out, tables.QUERIES, [QueryRow(q.test, q.index, q.sql, None) for q in specs])
    tsv.write_table(out, tables.RUNS, run_rows)
    tsv.write_table(out, tables.QUERY_LOG, log_rows)
    tsv.write_table(out, tables.PROFILE_EVENTS, events)
    tsv.write_table(out, tables.ERRORS, errors)
    tsv.write_table(out, tables.TESTS, tests)
    if busy is not None:
        tsv.write_table(out, tables.MONITOR, _monitor(clock, busy))
    manifest.write_manifest(out, _manifest(specs, profiles or []))
    write_verdicts(out, [_verdict_row(q, runs) for q in specs])
    write_metrics(out, [*metrics, *_server_times(specs, metrics)])
    _write_summary(out, specs, runs, errors)


def _server_times(specs: Sequence[QuerySpec], metrics: Sequence[MetricRow]) -> list[MetricRow]:
    """compare's server_time row of each query measured on both sides, unless given."""
    given = {(m.test, m.query_index) for m in metrics if m.metric == SERVER_TIME}
    rows = []
    for q in specs:
        if (q.test, q.index) in given or q.reference is None or q.patched is None:
            continue
        reference, patched = q.reference * q.server_share, q.patched * q.server_share
        rows.append(
            MetricRow(
                q.test, q.index, SERVER_TIME, reference, patched, patched / reference - 1, 0.05
            )
        )
    return rows


def _sample(time: float, foreign: float) -> MonitorRow:
    return MonitorRow(
        time=time, seconds=MONITOR_INTERVAL, cpus=2, user=0.5, system=0.05, iowait=0.0,
        steal=0.0, idle=0.45, servers_cpu=1.0, chperf_cpu=0.03, foreign_cpu=foreign, load1=1.0,
        runnable=1, cpu_pressure=None, io_pressure=None, memory_pressure=None, disk_busy=0.0,
        disk_queue=0.0, mem_available_mb=2000.0,
    )  # fmt: skip


def _monitor(end: float, busy: Sequence[tuple[float, float]]) -> list[MonitorRow]:
    samples = []
    count = math.ceil((end - START_TIME) / MONITOR_INTERVAL) + 1
    for n in range(1, count + 1):
        time = START_TIME + n * MONITOR_INTERVAL
        since = time - START_TIME
        hit = any(since > low and since - MONITOR_INTERVAL < high for low, high in busy)
        foreign = BUSY_CORES if hit else 0.02
        samples.append(_sample(time, foreign))
    return samples


def _write_summary(
    out: Path, specs: Sequence[QuerySpec], runs: int, errors: Sequence[ErrorRow]
) -> None:
    names = ("slower", "faster", "unstable", "unchanged", "partial", "error", "skipped")
    counts = {v: sum(1 for q in specs if q.verdict == v) for v in names}
    shown = [f"{counts[v]} {v}" for v in names[:3] + names[4:6] if counts[v]]
    failed = counts["slower"] or counts["partial"] or bool(errors)
    rows = [_verdict_row(q, runs) for q in specs]
    summary = {
        "schema_version": 1,
        "status": "failure" if failed else "success",
        "message": ", ".join(shown) or "no changes",
        "counts": counts,
        "queries": [
            {
                "test": q.test,
                "query_index": q.index,
                "query": q.sql,
                "verdict": q.verdict,
                "reference_median": q.reference,
                "patched_median": q.patched,
                "diff": row.diff,
                "threshold": q.threshold,
                "runs": runs,
            }
            for q, row in zip(specs, rows, strict=True)
        ],
    }
    write_summary(out, summary)


def small_specs(strings_test: str = "strings", strings_query: str = "") -> list[QuerySpec]:
    """One query of each verdict in tests `sum` and `strings` (whose name tests may vary)."""
    s = strings_test
    extra = strings_query
    return [
        QuerySpec("sum", 0, "SELECT sum(number) FROM numbers(100000000)", "slower",
                  "D >= T and >= min effect", 0.100, 0.132, 0.04),
        QuerySpec("sum", 1, "SELECT count() FROM numbers(100000000) WHERE number % 3 = 0",
                  "faster", "D >= T and >= min effect", 0.200, 0.100, 0.03),
        QuerySpec("sum", 2, "SELECT max(number) FROM numbers(10000000)", "unchanged",
                  "|D| < T", 0.050, 0.051, 0.04),
        QuerySpec(s, 0,
                  f"SELECT count() FROM numbers(1000000) WHERE NOT ignore(toString(number)){extra}",
                  "unstable", "T >= 10% and not changed", 0.020, 0.021, 0.15),
        QuerySpec(s, 1, f"SELECT lower(toString(number)) FROM numbers(1000) FORMAT Null{extra}",
                  "partial", "failed on patched only", 0.030, None, None),
        QuerySpec(s, 2, "SELECT count() FROM numbers_mt(1000000)", "error",
                  "failed on both servers", None, None, None),
        QuerySpec(s, 3, "SELECT toString(number) FROM numbers(1000000)", "unchanged",
                  "|D| < T", 0.080, 0.081, 0.03, server_share=0.5),
    ]  # fmt: skip


def write_small_run(
    out: Path, *, strings_test: str = "strings", strings_query: str = "",
    profile_dir: Path | None = None,
) -> list[QuerySpec]:  # fmt: skip
    """The golden run: every number known, one query of each verdict, run and setup errors
    and a server death. With profile_dir (holding reference.folded and patched.folded),
    query sum 0 has profiles of both sides."""
    specs = small_specs(strings_test, strings_query)
    s = strings_test
    tests = [
        TestRow("sum", "perf_tests/sum.xml", "ran", "", 12.5),
        TestRow(s, "perf_tests/strings.xml", "ran", "", 30.0),
        TestRow("long_join", "perf_tests/long_join.xml", "skipped", "tagged long: pass --long",
                0.0),
        TestRow("broken", "perf_tests/broken.xml", "error", "cannot parse", 0.0),
    ]  # fmt: skip
    errors = [
        ErrorRow(s, 1, tables.PATCHED, tables.STAGE_RUN, 47,
                 "Code: 47. DB::Exception: Unknown identifier: lower_utf8 <b>x</b>"
                 f"{strings_query}"),
        ErrorRow(s, 2, tables.REFERENCE, tables.STAGE_PREWARM, 46,
                 "Code: 46. DB::Exception: Unknown table function numbers_mt"),
        ErrorRow(s, 2, tables.PATCHED, tables.STAGE_PREWARM, 46,
                 "Code: 46. DB::Exception: Unknown table function numbers_mt"),
        ErrorRow("broken", tables.WHOLE_TEST, tables.BOTH, tables.STAGE_PARSE, 0,
                 "perf_tests/broken.xml:3: unknown element <bogus>"),
        ErrorRow(s, tables.WHOLE_TEST, tables.PATCHED, tables.STAGE_SERVER, 0,
                 "patched server (pid 4121, port 9002) exited with code 139 during "
                 f"{s} query 1; last log lines: Segmentation fault"),
    ]  # fmt: skip
    metrics = [
        MetricRow("sum", 0, "server_time", 0.090, 0.119, 0.32, 0.05),
        MetricRow("sum", 0, "SelectedRows", 1e8, 1e8, 0.0, 0.0),
        MetricRow("sum", 0, "RealTimeMicroseconds", 180000.0, 236000.0, 0.311, 0.06),
        MetricRow("sum", 0, "ContextLock", 12.0, 13.0, 0.083, 0.2),
        MetricRow("sum", 1, "server_time", 0.180, 0.090, -0.5, 0.04),
    ]
    profiles: list[dict[str, Any]] = []
    if profile_dir is not None:
        (out / "profiles").mkdir(parents=True, exist_ok=True)
        for side in tables.SIDES:
            target = out / "profiles" / f"sum-0.{side}.folded"
            target.write_bytes((profile_dir / f"{side}.folded").read_bytes())
            folded = f"profiles/sum-0.{side}.folded"
            profiles.append(
                {"test": "sum", "query_index": 0, "side": side, "folded": folded, "kind": "perf"}
            )
    write_run(out, specs, tests=tests, errors=errors, profiles=profiles, metrics=metrics)
    return specs


def large_specs(queries: int, *, per_test: int = 20, seed: int = 1) -> list[QuerySpec]:
    """About 5% slower, 3% faster, 5% unstable, 1% partial, 0.5% error, the rest unchanged."""
    rng = random.Random(seed)
    specs = []
    for n in range(queries):
        test, index = f"test_{n // per_test:04d}", n % per_test
        sql = (
            f"SELECT {index}, sum(cityHash64(number, toString(number % {n + 7}))) "
            f"FROM numbers_mt(100000000) WHERE number % 13 = {index % 13} GROUP BY number % 1000"
        )
        median = rng.lognormvariate(-2.5, 1.0)
        roll = rng.random()
        reference: float | None = median
        patched: float | None = median * rng.uniform(0.98, 1.02)
        threshold: float | None = 0.03
        verdict = "unchanged"
        if roll < 0.05:
            verdict, patched = "slower", median * rng.uniform(1.06, 1.5)
        elif roll < 0.08:
            verdict, patched = "faster", median / rng.uniform(1.06, 1.5)
        elif roll < 0.13:
            verdict, threshold = "unstable", rng.uniform(0.1, 0.4)
        elif roll < 0.14:
            verdict, patched, threshold = "partial", None, None
        elif roll < 0.145:
            verdict, reference, patched, threshold = "error", None, None, None
        specs.append(
            QuerySpec(test, index, sql, verdict, "synthetic", reference, patched, threshold)
        )
    return specs


def write_large_run(out: Path, queries: int, *, runs: int = 15, seed: int = 1) -> None:
    specs = large_specs(queries, seed=seed)
    metrics: list[MetricRow] = []
    # ProfileEvents names are about this long (OSReadChars, RealTimeMicroseconds, ...).
    events = [f"SyntheticProfileEvent{n:02d}" for n in range(40)]
    for q in specs:  # compare writes metrics for every query measured on both sides
        if q.reference and q.patched:
            diff = (q.patched - q.reference) / q.reference
            for name in events:
                metrics.append(
                    MetricRow(q.test, q.index, name, 1000.0, 1000.0 * (1 + diff), diff, 0.05)
                )
    tests = sorted({q.test for q in specs})
    rows = [TestRow(t, f"perf_tests/{t}.xml", "ran", "", 60.0) for t in tests]
    # A neighbour busy for a minute every quarter of an hour, over a day at most.
    busy = [(start + 300.0, start + 360.0) for start in range(0, 86_400, 900)]
    write_run(out, specs, runs=runs, tests=rows, metrics=metrics, busy=busy)
