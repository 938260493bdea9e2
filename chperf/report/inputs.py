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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from chperf import artifacts
from chperf.artifacts import ErrorRow, QueryLogRow, QueryRow, RunRow, TestRow

VERDICTS_FILE = "verdicts.tsv"
METRICS_FILE = "metrics.tsv"
SUMMARY_FILE = "summary.json"
SUMMARY_SCHEMA_VERSION = 1

T = TypeVar("T")

# Read problems of one file beyond this many are counted, not listed (a truncated 100k-line
# file should not produce a 100k-line report).
MAX_LISTED_READ_PROBLEMS = 20


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
class Summary:
    status: str
    message: str
    counts: tuple[tuple[str, int], ...]


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
    runs: tuple[RunRow, ...]
    query_log: tuple[QueryLogRow, ...]
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
    verdicts = _read_named_tsv(out, VERDICTS_FILE, _VERDICT_COLUMNS, _verdict, problems, missing)
    metrics = _read_named_tsv(out, METRICS_FILE, _METRIC_COLUMNS, _metric, problems, missing)
    return Inputs(
        out=out,
        manifest=manifest,
        queries=table(artifacts.QUERIES),
        runs=table(artifacts.RUNS),
        query_log=table(artifacts.QUERY_LOG),
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
    return Summary(status, message, tuple(counts))


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


# --- compare's TSV files, read by column name ---------------------------------------------

_VERDICT_COLUMNS = ("test", "query_index", "verdict", "reference_median", "patched_median")
_METRIC_COLUMNS = ("test", "query_index", "metric", "reference_median", "patched_median")


def _read_named_tsv(
    out: Path,
    file: str,
    required: Sequence[str],
    make: Callable[[dict[str, str]], T],
    problems: list[str],
    missing: list[str],
) -> list[T]:
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
        for number, line in enumerate(f, start=2):
            if not line.endswith("\n"):
                found.append(f"{file}:{number}: truncated line (no end of line)")
                continue
            values = line[:-1].split("\t")
            if len(values) != len(header):
                found.append(
                    f"{file}:{number}: expected {len(header)} columns, found {len(values)}"
                )
                continue
            try:
                rows.append(make(dict(zip(header, values, strict=True))))
            except ValueError as e:
                found.append(f"{file}:{number}: bad value: {e}")
    problems.extend(_limit(file, found))
    return rows


def _float(record: dict[str, str], name: str) -> float | None:
    text = record.get(name, "\\N")
    if text == "\\N" or text == "":
        return None
    value = float(text)
    return None if math.isnan(value) else value


def _int(record: dict[str, str], name: str) -> int | None:
    text = record.get(name, "\\N")
    return None if text in ("\\N", "") else int(text)


def _str(record: dict[str, str], name: str) -> str:
    return artifacts.unescape(record.get(name, ""))


def _verdict(r: dict[str, str]) -> VerdictRow:
    return VerdictRow(
        test=_str(r, "test"),
        query_index=int(r["query_index"]),
        verdict=_str(r, "verdict"),
        reason=_str(r, "reason"),
        reference_median=_float(r, "reference_median"),
        patched_median=_float(r, "patched_median"),
        diff=_float(r, "diff"),
        threshold=_float(r, "threshold"),
        p_value=_float(r, "p_value"),
        runs_reference=_int(r, "runs_reference"),
        runs_patched=_int(r, "runs_patched"),
        ci_low=_float(r, "ci_low"),
        ci_high=_float(r, "ci_high"),
    )


def _metric(r: dict[str, str]) -> MetricRow:
    return MetricRow(
        test=_str(r, "test"),
        query_index=int(r["query_index"]),
        metric=_str(r, "metric"),
        reference_median=_float(r, "reference_median"),
        patched_median=_float(r, "patched_median"),
        diff=_float(r, "diff"),
        threshold=_float(r, "threshold"),
    )
