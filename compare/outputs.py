"""The files compare writes into OUT: verdicts.tsv, metrics.tsv and summary.json.

Formats (documented for users in compare/FORMATS.md, merged into the README):
  verdicts.tsv  TabSeparatedWithNames, chperf.artifacts escaping, one row per query
                (or per test, query_index -1, for a test without queries)
  metrics.tsv   TabSeparatedWithNames, one row per (query, metric that varies across runs)
  summary.json  the CI-facing summary, `schema_version` below

Format history (bump SUMMARY_SCHEMA_VERSION on incompatible summary.json changes; the TSV
columns only ever grow at the end):
  1 -- first version (issue 3).
  1 (issue 8, additive: readers of the first version are unaffected) -- verdicts.tsv gains the
       columns ci_low, ci_high, equivalence, min_effect, calibration at the end; summary.json
       gains the top-level keys equivalence, fdr, calibration and, per query, p_value,
       ci_low, ci_high, equivalence, min_effect, calibration.
  1 (server process sets, additive) -- verdicts.tsv gains the column process_diffs at the
       end, summary.json the per-query key process_diffs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chperf.artifacts import escape
from compare.randomization import SeriesStats
from compare.verdict import QueryVerdict, Verdict

SUMMARY_SCHEMA_VERSION = 1
VERDICTS_FILE = "verdicts.tsv"
METRICS_FILE = "metrics.tsv"
SUMMARY_FILE = "summary.json"

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
)
METRIC_COLUMNS = (
    "test",
    "query_index",
    "metric",
    "reference_median",
    "patched_median",
    "diff",
    "threshold",
)


@dataclass(frozen=True)
class MetricRow:
    test: str
    query_index: int
    metric: str
    stats: SeriesStats


def write_verdicts(out: Path, verdicts: Sequence[QueryVerdict]) -> Path:
    rows = (
        (
            v.test,
            v.query_index,
            v.verdict.value,
            v.reason,
            *_numbers(v.stats),
            v.runs_reference,
            v.runs_patched,
            *_interval(v),
            v.equivalence,
            v.min_effect,
            v.calibration,
            ",".join(repr(d) for d in _process_diffs(v)) or None,
        )
        for v in verdicts
    )
    return _write_tsv(out / VERDICTS_FILE, VERDICT_COLUMNS, rows)


def write_metrics(out: Path, metrics: Sequence[MetricRow]) -> Path:
    rows = ((m.test, m.query_index, m.metric, *_numbers(m.stats)[:4]) for m in metrics)
    return _write_tsv(out / METRICS_FILE, METRIC_COLUMNS, rows)


def summary_document(
    status: str,
    message: str,
    counts: Mapping[str, int],
    verdicts: Sequence[QueryVerdict],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """summary.json, schema version 1: issue 3's keys, then issue 8's additive `extra` keys
    (equivalence, fdr, calibration; README "summary.json")."""
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "status": status,
        "message": message,
        "counts": {v.value: counts.get(v.value, 0) for v in Verdict},
        **(extra or {}),
        "queries": [_summary_query(v) for v in verdicts],
    }


def write_summary(out: Path, document: Mapping[str, Any]) -> Path:
    """Atomically: CI reads this file, and must never see half of it."""
    path = out / SUMMARY_FILE
    tmp = out / (SUMMARY_FILE + ".tmp")
    tmp.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _summary_query(v: QueryVerdict) -> dict[str, Any]:
    reference, patched, diff, threshold, p_value = _numbers(v.stats)
    ci_low, ci_high = _interval(v)
    return {
        "test": v.test,
        "query_index": v.query_index,
        "query": v.query,
        "verdict": v.verdict.value,
        "reference_median": reference,
        "patched_median": patched,
        "diff": diff,
        "threshold": threshold,
        "runs": _runs_per_side(v),
        "p_value": p_value,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "equivalence": v.equivalence,
        "min_effect": v.min_effect,
        "calibration": v.calibration,
        "process_diffs": list(_process_diffs(v)),
    }


def _process_diffs(v: QueryVerdict) -> tuple[float, ...]:
    return v.stats.process_diffs if v.stats is not None else ()


def _interval(v: QueryVerdict) -> tuple[float | None, float | None]:
    if v.interval is None:
        return (None, None)
    return (v.interval.low, v.interval.high)


def _runs_per_side(v: QueryVerdict) -> int:
    """Measured runs per side: the smaller count when both sides ran, else the side that did."""
    counts = (v.runs_reference, v.runs_patched)
    return min(counts) if min(counts) > 0 else max(counts)


def _numbers(stats: SeriesStats | None) -> tuple[float | None, ...]:
    if stats is None:
        return (None, None, None, None, None)
    values = (
        stats.reference_median,
        stats.patched_median,
        stats.diff,
        stats.threshold,
        stats.p_value,
    )
    return tuple(None if v is None or not math.isfinite(v) else v for v in values)


def _write_tsv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    lines = ["\t".join(columns) + "\n"]
    lines.extend("\t".join(_cell(v) for v in row) + "\n" for row in rows)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
    return path


def _cell(value: object) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, float):
        return repr(value)
    return escape(str(value))
