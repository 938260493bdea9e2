"""Everything the report is built from. The report is what people read when something went
wrong, so bad input never raises here: it becomes a problem shown in the report. Except a
value no measurement gives (artifacts/values.py), which the readers refuse (exit 2): plotted,
it would pass for a measurement."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.columns import Columns
from artifacts.manifest import MANIFEST, load_manifest
from artifacts.results import ResultProblem, read_result_problems
from artifacts.summary import SUMMARY_FILE, Summary, read_summary
from artifacts.tables import (
    ERRORS,
    QUERIES,
    QUERY_LOG,
    TESTS,
    ErrorRow,
    MonitorSample,
    QueryRow,
    RunTime,
    TestRow,
    read_monitor_samples,
    read_run_times,
)
from artifacts.tsv import Table, read_table
from artifacts.verdicts import MetricRow, VerdictRow, read_metrics, read_verdicts
from compare.interference import Interference, interference_of

# Read problems of one file beyond this many are counted, not listed (a truncated 100k-line
# file should not produce a 100k-line report).
MAX_LISTED_READ_PROBLEMS = 20


@dataclass(frozen=True)
class Profile:
    test: str
    query_index: int
    side: str
    folded: Path  # absolute
    kind: str
    # Added later (run.json of older runs lacks them: 0 and "" mean unknown).
    runs: int = 0  # profile runs of this side: the graphs are drawn per run
    seconds: float = 0.0  # their wall time in all
    sample_ns: int = 0  # CPU time one sample stands for
    failure: str = ""  # the query's error when it failed in a profile run
    unnamed: tuple[str, ...] = ()  # why frames of some modules have no names


@dataclass(frozen=True)
class Inputs:
    out: Path
    manifest: dict[str, Any]  # {} when run.json is missing or unreadable
    queries: tuple[QueryRow, ...]
    runs: tuple[RunTime, ...]
    errors: tuple[ErrorRow, ...]
    tests: tuple[TestRow, ...]
    verdicts: tuple[VerdictRow, ...]
    metrics: tuple[MetricRow, ...]
    summary: Summary | None
    monitor: tuple[MonitorSample, ...]  # empty for runs made before the monitor existed
    # Per query, its runs that coincided with other work on the machine: compare's own rule
    # (compare/interference.py), so the report marks exactly the runs the verdict names.
    interference: dict[tuple[str, int], Interference]
    profiles: tuple[Profile, ...]
    missing: tuple[str, ...]
    problems: tuple[str, ...]
    # summary.json's queries whose results were not equal (artifacts/results.py)
    result_problems: tuple[ResultProblem, ...] = ()


def load_inputs(out: Path) -> Inputs:
    problems: list[str] = []
    missing: list[str] = []

    def table(t: Table[Any]) -> tuple[Any, ...]:
        contents = read_table(out, t)
        if contents.missing:
            missing.append(t.file)
        else:
            problems.extend(_limit(t.file, [str(p) for p in contents.problems]))
        return contents.rows

    def columns(contents: Columns[Any]) -> tuple[Any, ...]:
        if contents.missing:
            missing.append(contents.file)
        else:
            problems.extend(_limit(contents.file, [str(p) for p in contents.problems]))
        return contents.rows

    manifest = load_manifest(out)
    if manifest.missing:
        missing.append(MANIFEST)
    problems.extend(manifest.problems)
    verdicts = columns(read_verdicts(out))
    metrics = columns(read_metrics(out))
    summary = read_summary(out)
    if summary.missing:
        missing.append(SUMMARY_FILE)
    problems.extend(summary.problems)
    runs = columns(read_run_times(out))
    # The report takes each query's server time from metrics.tsv (compare's medians of
    # query_log.tsv, one row a query, not one a run); a run without a query log is still named.
    if not (out / QUERY_LOG.file).exists():
        missing.append(QUERY_LOG.file)
    monitor = _monitor(out, problems)
    return Inputs(
        out=out,
        manifest=manifest.data,
        queries=table(QUERIES),
        runs=runs,
        errors=table(ERRORS),
        tests=table(TESTS),
        verdicts=verdicts,
        metrics=metrics,
        summary=summary.summary,
        monitor=monitor,
        interference=interference_of(
            monitor, ((r.test, r.query_index, r.run, r.client_time, r.start_time) for r in runs)
        ),
        profiles=_profiles(out, manifest.data, problems),
        missing=tuple(missing),
        problems=tuple(problems),
        result_problems=read_result_problems(out),
    )


def _monitor(out: Path, problems: list[str]) -> tuple[MonitorSample, ...]:
    """monitor.tsv: optional (older runs have none), its damage a problem like any table's."""
    contents = read_monitor_samples(out)
    if not contents.missing:
        problems.extend(_limit(contents.file, [str(p) for p in contents.problems]))
    return tuple(sorted(contents.rows, key=lambda s: s.time))


def _limit(file: str, problems: list[str]) -> list[str]:
    if len(problems) <= MAX_LISTED_READ_PROBLEMS:
        return problems
    rest = len(problems) - MAX_LISTED_READ_PROBLEMS
    return [*problems[:MAX_LISTED_READ_PROBLEMS], f"{file}: and {rest} more unreadable lines"]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _profiles(out: Path, manifest: dict[str, Any], problems: list[str]) -> tuple[Profile, ...]:
    raw = manifest.get("profiles")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(f"{MANIFEST}: 'profiles' is not a list")
        return ()
    profiles: list[Profile] = []
    for number, item in enumerate(raw):
        try:
            profiles.append(
                Profile(
                    test=str(item["test"]),
                    query_index=int(item["query_index"]),
                    side=str(item["side"]),
                    folded=out / str(item["folded"]),
                    kind=str(item.get("kind", "")),
                    runs=int(item.get("runs", 0)),
                    seconds=float(item.get("seconds", 0.0)),
                    sample_ns=int(item.get("sample_ns", 0)),
                    failure=str(item.get("failure", "")),
                    unnamed=tuple(str(u) for u in _list(item.get("unnamed"))),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"{MANIFEST}: profiles[{number}] is malformed: {e!r}")
    return tuple(profiles)
