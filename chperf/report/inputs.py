"""Reading everything the report is built from, tolerantly.

The report is the last stage and the one people look at when something went wrong, so it
never raises on bad input: a missing file, a truncated line or an unknown schema becomes a
`problem` string that the report shows under "Errors while building the report".

Inputs (all in the output directory):
  run.json            the runner's manifest (chperf.artifacts)
  queries.tsv, runs.tsv, query_log.tsv, errors.tsv, tests.tsv   (chperf.artifacts)
  verdicts.tsv        compare's per-query verdicts; columns read by name, extra columns
                      (ci_low, ci_high, ... from later compare versions) are allowed
  metrics.tsv         compare's per-metric medians, diff and threshold
  summary.json        compare's status line and counts (schema_version 1)
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from chperf import artifacts
from chperf.artifacts import ErrorRow, QueryRow, TestRow

VERDICTS_FILE = "verdicts.tsv"
METRICS_FILE = "metrics.tsv"
SUMMARY_FILE = "summary.json"
SUMMARY_SCHEMA_VERSION = 1

T = TypeVar("T")

# Read problems of one file beyond this many are counted, not listed (a truncated 100k-line
# file should not produce a 100k-line report).
MAX_LISTED_READ_PROBLEMS = 20


class RunTime(NamedTuple):
    """One measured run from runs.tsv (a NamedTuple: there are ~100k of them)."""

    test: str
    query_index: int
    server: str
    run: int
    client_time: float  # seconds


class ServerTime(NamedTuple):
    """One run's server-side duration from query_log.tsv."""

    test: str
    query_index: int
    server: str
    server_time: float  # seconds


@dataclass(frozen=True)
class VerdictRow:
    test: str
    query_index: int
    verdict: str
    reason: str
    reference_median: float | None  # seconds
    patched_median: float | None
    diff: float | None  # fraction, (patched - reference) / reference
    threshold: float | None  # fraction of the reference median
    p_value: float | None
    runs_reference: int | None
    runs_patched: int | None
    ci_low: float | None  # ratio patched/reference, when compare writes it (issue 8)
    ci_high: float | None
    equivalence: str  # "equivalent"/"inconclusive" for unchanged (issue 8), else ""
    calibration: str  # "calibrated"/"not calibrated: why" with --calibration, else ""


@dataclass(frozen=True)
class MetricRow:
    test: str
    query_index: int
    metric: str  # "server_time" or a ProfileEvent name
    reference_median: float | None
    patched_median: float | None
    diff: float | None
    threshold: float | None


@dataclass(frozen=True)
class FdrSummary:
    """summary.json `fdr` (issue 8)."""

    q: float
    tests: int
    discoveries: int
    expected_false_at_most: float
    # q/m and the run's smallest attainable p-value (None in older summaries or unknown)
    lone_discovery_level: float | None = None
    smallest_p_value: float | None = None


@dataclass(frozen=True)
class NoiseSummary:
    """summary.json `noise` (compare/noise.py)."""

    pair_spread: float
    pairs: int
    queries: int
    median_threshold: float | None


@dataclass(frozen=True)
class CalibrationSummary:
    """summary.json `calibration` (issue 8)."""

    file: str
    calibrated: int
    not_calibrated: int


@dataclass(frozen=True)
class Summary:
    status: str
    message: str
    counts: tuple[tuple[str, int], ...]
    fdr: FdrSummary | None = None  # None: no FDR control, or a summary without the key
    calibration: CalibrationSummary | None = None
    noise: NoiseSummary | None = None  # None: fewer than 7 pairs anywhere, or older summaries


@dataclass(frozen=True)
class Profile:
    test: str
    query_index: int
    side: str
    folded: Path  # absolute
    kind: str


@dataclass(frozen=True)
class Inputs:
    out: Path
    manifest: dict[str, Any]  # {} when run.json is missing or unreadable
    queries: tuple[QueryRow, ...]
    runs: tuple[RunTime, ...]
    query_log: tuple[ServerTime, ...]
    errors: tuple[ErrorRow, ...]
    tests: tuple[TestRow, ...]
    verdicts: tuple[VerdictRow, ...]
    metrics: tuple[MetricRow, ...]
    summary: Summary | None
    profiles: tuple[Profile, ...]
    missing: tuple[str, ...]  # input files that do not exist
    problems: tuple[str, ...]


def load_inputs(out: Path) -> Inputs:
    problems: list[str] = []
    missing: list[str] = []

    def table(t: artifacts.Table[Any]) -> tuple[Any, ...]:
        contents = artifacts.read_table(out, t)
        if contents.missing:
            missing.append(t.file)
        else:
            problems.extend(_limit(t.file, [str(p) for p in contents.problems]))
        return contents.rows

    manifest = _read_manifest(out, problems, missing)
    verdicts = _read_named_tsv(
        out, VERDICTS_FILE, _VERDICT_COLUMNS, _verdict, problems, missing, _VERDICT_OPTIONAL
    )
    metrics = _read_named_tsv(
        out, METRICS_FILE, _METRIC_COLUMNS, _metric, problems, missing, _METRIC_OPTIONAL
    )
    return Inputs(
        out=out,
        manifest=manifest,
        queries=table(artifacts.QUERIES),
        runs=tuple(
            _read_named_tsv(out, artifacts.RUNS.file, _RUN_COLUMNS, _run, problems, missing)
        ),
        query_log=tuple(
            _read_named_tsv(out, artifacts.QUERY_LOG.file, _LOG_COLUMNS, _log, problems, missing)
        ),
        errors=table(artifacts.ERRORS),
        tests=table(artifacts.TESTS),
        verdicts=tuple(verdicts),
        metrics=tuple(metrics),
        summary=_read_summary(out, problems, missing),
        profiles=_profiles(out, manifest, problems),
        missing=tuple(missing),
        problems=tuple(problems),
    )


def _limit(file: str, problems: list[str]) -> list[str]:
    if len(problems) <= MAX_LISTED_READ_PROBLEMS:
        return problems
    rest = len(problems) - MAX_LISTED_READ_PROBLEMS
    return [*problems[:MAX_LISTED_READ_PROBLEMS], f"{file}: and {rest} more unreadable lines"]


# --- run.json and summary.json ------------------------------------------------------------


def _read_json(path: Path, problems: list[str], missing: list[str]) -> dict[str, Any] | None:
    if not path.exists():
        missing.append(path.name)
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        problems.append(f"{path.name}: cannot be read: {e}")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path.name}: is not a JSON object")
        return None
    return data


def _read_manifest(out: Path, problems: list[str], missing: list[str]) -> dict[str, Any]:
    data = _read_json(out / artifacts.MANIFEST, problems, missing)
    if data is None:
        return {}
    version = data.get("schema_version")
    if version != artifacts.SCHEMA_VERSION:
        problems.append(
            f"{artifacts.MANIFEST}: schema_version {version!r}, this report reads "
            f"{artifacts.SCHEMA_VERSION}; what follows may be incomplete: rerun `chperf run` "
            "with this chperf version"
        )
    return data


def _read_summary(out: Path, problems: list[str], missing: list[str]) -> Summary | None:
    data = _read_json(out / SUMMARY_FILE, problems, missing)
    if data is None:
        return None
    version = data.get("schema_version")
    if version != SUMMARY_SCHEMA_VERSION:
        problems.append(
            f"{SUMMARY_FILE}: schema_version {version!r}, this report reads "
            f"{SUMMARY_SCHEMA_VERSION}: rerun `chperf compare` with this chperf version"
        )
    status, message = data.get("status"), data.get("message")
    if not isinstance(status, str) or not isinstance(message, str):
        problems.append(f"{SUMMARY_FILE}: 'status' and 'message' must be strings")
        return None
    raw_counts = data.get("counts")
    counts: list[tuple[str, int]] = []
    if isinstance(raw_counts, dict):
        counts = [(str(k), v) for k, v in raw_counts.items() if isinstance(v, int)]
    else:
        problems.append(f"{SUMMARY_FILE}: 'counts' is missing or not an object")
    return Summary(status, message, tuple(counts), _fdr(data), _calibration(data), _noise(data))


def _fdr(data: dict[str, Any]) -> FdrSummary | None:
    raw = data.get("fdr")
    if not isinstance(raw, dict):
        return None
    try:
        return FdrSummary(
            float(raw["q"]),
            int(raw["tests"]),
            int(raw["discoveries"]),
            float(raw["expected_false_discoveries_at_most"]),
            _optional_float(raw.get("lone_discovery_level")),
            _optional_float(raw.get("smallest_p_value")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _optional_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _calibration(data: dict[str, Any]) -> CalibrationSummary | None:
    raw = data.get("calibration")
    if not isinstance(raw, dict):
        return None
    try:
        return CalibrationSummary(
            str(raw["file"]), int(raw["calibrated"]), int(raw["not_calibrated"])
        )
    except (KeyError, TypeError, ValueError):
        return None


def _noise(data: dict[str, Any]) -> NoiseSummary | None:
    raw = data.get("noise")
    if not isinstance(raw, dict):
        return None
    spread = _optional_float(raw.get("pair_spread"))
    pairs, queries = raw.get("pairs"), raw.get("queries")
    if spread is None or not isinstance(pairs, int) or not isinstance(queries, int):
        return None
    return NoiseSummary(spread, pairs, queries, _optional_float(raw.get("median_threshold")))


def _profiles(out: Path, manifest: dict[str, Any], problems: list[str]) -> tuple[Profile, ...]:
    raw = manifest.get("profiles")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(f"{artifacts.MANIFEST}: 'profiles' is not a list")
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
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"{artifacts.MANIFEST}: profiles[{number}] is malformed: {e!r}")
    return tuple(profiles)


# --- TSV files read by column name -------------------------------------------------------

# compare's files and the two big runner tables (a row per run and side) are read here rather
# than with artifacts.read_table: by column name (compare's columns may grow at the end), only
# the columns the report needs, positionally, into tuples: ~10x faster on 100k rows.
# A column in `optional` that the header lacks reads as NULL.
_RUN_COLUMNS = ("test", "query_index", "server", "run", "client_time")
_LOG_COLUMNS = ("test", "query_index", "server", "server_time")
_VERDICT_COLUMNS = ("test", "query_index", "verdict", "reference_median", "patched_median")
_VERDICT_OPTIONAL = (
    "reason", "diff", "threshold", "p_value", "runs_reference", "runs_patched", "ci_low", "ci_high",
    "equivalence", "calibration",
)  # fmt: skip
_METRIC_COLUMNS = ("test", "query_index", "metric", "reference_median", "patched_median")
_METRIC_OPTIONAL = ("diff", "threshold")
_NULL = "\\N"


def _read_named_tsv(
    out: Path,
    file: str,
    required: Sequence[str],
    make: Callable[[Sequence[str]], T],
    problems: list[str],
    missing: list[str],
    optional: Sequence[str] = (),
) -> list[T]:
    """Rows of `file` as make(values of required + optional columns, in that order)."""
    path = out / file
    if not path.exists():
        missing.append(file)
        return []
    rows: list[T] = []
    found: list[str] = []
    with path.open(encoding="utf-8", errors="replace", newline="\n") as f:
        header = f.readline().rstrip("\n").split("\t")
        absent = [c for c in required if c not in header]
        if absent:
            problems.append(f"{file}:1: header lacks the columns {', '.join(absent)}")
            return []
        width = len(header)
        # An absent optional column points one past the end, where a NULL is appended.
        positions = [header.index(c) if c in header else width for c in (*required, *optional)]
        select = operator.itemgetter(*positions)
        for number, line in enumerate(f, start=2):
            values = line[:-1].split("\t")
            if not line.endswith("\n") or len(values) != width:
                found.append(_bad_line(file, number, line, width, len(values)))
                continue
            values.append(_NULL)
            try:
                rows.append(make(select(values)))
            except ValueError as e:
                found.append(f"{file}:{number}: bad value: {e}")
    problems.extend(_limit(file, found))
    return rows


def _bad_line(file: str, number: int, line: str, width: int, found: int) -> str:
    if not line.endswith("\n"):
        return f"{file}:{number}: truncated line (no end of line)"
    return f"{file}:{number}: expected {width} columns, found {found}"


def _float(text: str) -> float | None:
    if text == _NULL or text == "":
        return None
    value = float(text)
    return None if math.isnan(value) else value


def _int(text: str) -> int | None:
    return None if text in (_NULL, "") else int(text)


def _run(v: Sequence[str]) -> RunTime:
    return RunTime(artifacts.unescape(v[0]), int(v[1]), v[2], int(v[3]), float(v[4]))


def _log(v: Sequence[str]) -> ServerTime:
    return ServerTime(artifacts.unescape(v[0]), int(v[1]), v[2], float(v[3]))


def _verdict(v: Sequence[str]) -> VerdictRow:
    test, index, verdict, reference, patched, reason, diff, threshold, p_value = v[:9]
    runs_reference, runs_patched, ci_low, ci_high, equivalence, calibration = v[9:]
    return VerdictRow(
        test=artifacts.unescape(test),
        query_index=int(index),
        verdict=artifacts.unescape(verdict),
        reason="" if reason == _NULL else artifacts.unescape(reason),
        reference_median=_float(reference),
        patched_median=_float(patched),
        diff=_float(diff),
        threshold=_float(threshold),
        p_value=_float(p_value),
        runs_reference=_int(runs_reference),
        runs_patched=_int(runs_patched),
        ci_low=_float(ci_low),
        ci_high=_float(ci_high),
        equivalence=_text(equivalence),
        calibration=_text(calibration),
    )


def _text(value: str) -> str:
    return "" if value == _NULL else artifacts.unescape(value)


def _metric(v: Sequence[str]) -> MetricRow:
    test, index, metric, reference, patched, diff, threshold = v
    return MetricRow(
        test=artifacts.unescape(test),
        query_index=int(index),
        metric=artifacts.unescape(metric),
        reference_median=_float(reference),
        patched_median=_float(patched),
        diff=_float(diff),
        threshold=_float(threshold),
    )
