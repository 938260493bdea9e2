"""verdicts.tsv (one row per query; query_index -1 for a test without queries) and metrics.tsv
(one row per query and metric that varies across its runs), written atomically by compare.
Readers take files of every version: a column a file lacks reads as NULL.

Format history:
  1 -- test .. runs_patched; then, additively, ci_low, ci_high, equivalence, min_effect,
       calibration, process_diffs and ci_level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.columns import (
    NULL,
    Columns,
    optional_float,
    optional_int,
    optional_text,
    read_columns,
)
from artifacts.tsv import write_rows
from artifacts.values import MAX_SECONDS, ImpossibleValue, measure

VERDICTS_FILE = "verdicts.tsv"
SERVER_TIME = "server_time"  # the metric of query_log's query_duration_ms (compare/metrics.py)
METRICS_FILE = "metrics.tsv"

VERDICT_COLUMNS = (
    "test",
    "query_index",
    "verdict",
    "reason",
    "reference_median",
    "patched_median",
    "diff",
    "threshold",
    "p_value",
    "runs_reference",
    "runs_patched",
    "ci_low",
    "ci_high",
    "equivalence",
    "min_effect",
    "calibration",
    "process_diffs",
    "ci_level",
)
# What every version of the file has; the rest read as NULL where absent.
_VERDICT_REQUIRED = 5
METRIC_COLUMNS = (
    "test",
    "query_index",
    "metric",
    "reference_median",
    "patched_median",
    "diff",
    "threshold",
)
_METRIC_REQUIRED = 5


@dataclass(frozen=True)
class VerdictRow:
    test: str
    query_index: int
    verdict: str  # a compare.verdict.Verdict value
    reason: str
    reference_median: float | None  # seconds
    patched_median: float | None
    diff: float | None  # fraction, (patched - reference) / reference
    threshold: float | None  # fraction of the reference median
    p_value: float | None
    runs_reference: int | None
    runs_patched: int | None
    ci_low: float | None = None  # ratio patched / reference
    ci_high: float | None = None
    equivalence: str = ""  # "equivalent" / "inconclusive" for unchanged queries
    min_effect: float | None = None
    calibration: str = ""  # "calibrated" / "not calibrated: why" with --calibration
    process_diffs: tuple[float, ...] = ()  # D of each server process set
    ci_level: float | None = None  # of ci_low..ci_high: 0.99 paired, 0.95 pooled


@dataclass(frozen=True)
class MetricRow:
    test: str
    query_index: int
    metric: str  # "server_time" or a ProfileEvent name
    reference_median: float | None
    patched_median: float | None
    diff: float | None
    threshold: float | None


def write_verdicts(out: Path, rows: Sequence[VerdictRow]) -> Path:
    return write_rows(out / VERDICTS_FILE, VERDICT_COLUMNS, (_verdict_cells(r) for r in rows))


def write_metrics(out: Path, rows: Sequence[MetricRow]) -> Path:
    cells = (
        (m.test, m.query_index, m.metric, m.reference_median, m.patched_median, m.diff, m.threshold)
        for m in rows
    )
    return write_rows(out / METRICS_FILE, METRIC_COLUMNS, cells)


def read_verdicts(out: Path) -> Columns[VerdictRow]:
    columns = VERDICT_COLUMNS
    return read_columns(out, VERDICTS_FILE, columns[:_VERDICT_REQUIRED], columns, _verdict)


def read_metrics(out: Path) -> Columns[MetricRow]:
    columns = METRIC_COLUMNS
    return read_columns(out, METRICS_FILE, columns[:_METRIC_REQUIRED], columns, _metric)


def _verdict_cells(v: VerdictRow) -> tuple[object, ...]:
    return (
        v.test,
        v.query_index,
        v.verdict,
        v.reason,
        v.reference_median,
        v.patched_median,
        v.diff,
        v.threshold,
        v.p_value,
        v.runs_reference,
        v.runs_patched,
        v.ci_low,
        v.ci_high,
        v.equivalence or None,
        v.min_effect,
        v.calibration or None,
        ",".join(repr(d) for d in v.process_diffs) or None,
        v.ci_level,
    )


def _verdict(v: Sequence[str]) -> VerdictRow:
    return VerdictRow(
        test=optional_text(v[0]),
        query_index=int(v[1]),
        verdict=optional_text(v[2]),
        reason=optional_text(v[3]),
        reference_median=optional_float(v[4]),
        patched_median=optional_float(v[5]),
        diff=optional_float(v[6]),
        threshold=optional_float(v[7]),
        p_value=optional_float(v[8]),
        runs_reference=optional_int(v[9]),
        runs_patched=optional_int(v[10]),
        ci_low=optional_float(v[11]),
        ci_high=optional_float(v[12]),
        equivalence=optional_text(v[13]),
        min_effect=optional_float(v[14]),
        calibration=optional_text(v[15]),
        process_diffs=() if v[16] in (NULL, "") else tuple(float(d) for d in v[16].split(",")),
        ci_level=optional_float(v[17]),
    )


def _metric(v: Sequence[str]) -> MetricRow:
    """A metrics.tsv row; a value no run gives (inf, nan, a negative median, a server_time
    median over MAX_SECONDS) raises ImpossibleValue: compare writes NULL for what it cannot
    compute, so such a value is damage."""
    metric = optional_text(v[2])
    return MetricRow(
        test=optional_text(v[0]),
        query_index=int(v[1]),
        metric=metric,
        reference_median=_median(v[3], "reference_median", metric),
        patched_median=_median(v[4], "patched_median", metric),
        diff=_optional(v[5], "diff"),
        threshold=_optional(v[6], "threshold", 0.0),
    )


def _median(text: str, column: str, metric: str) -> float | None:
    value = _optional(text, f"{column} of {metric}", 0.0)
    if value is not None and metric == SERVER_TIME and value > MAX_SECONDS:
        raise ImpossibleValue(
            f"{column} of {metric} {text} is not a time in seconds (0 to {MAX_SECONDS:g})"
        )
    return value


def _optional(text: str, column: str, low: float = -math.inf) -> float | None:
    return None if text in (NULL, "") else measure(text, column, low)
