"""compare's results as rows of verdicts.tsv and metrics.tsv and the summary.json document
(the formats and their history: artifacts/verdicts.py, artifacts/summary.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts import verdicts as verdicts_file
from artifacts.summary import SUMMARY_SCHEMA_VERSION
from artifacts.verdicts import MetricRow, VerdictRow
from compare.randomization import SeriesStats
from compare.verdict import QueryVerdict, Verdict


@dataclass(frozen=True)
class MetricStats:
    test: str
    query_index: int
    metric: str
    stats: SeriesStats


def write_verdicts(out: Path, verdicts: Sequence[QueryVerdict]) -> Path:
    return verdicts_file.write_verdicts(out, [verdict_row(v) for v in verdicts])


def verdict_row(v: QueryVerdict) -> VerdictRow:
    reference, patched, diff, threshold, p_value = _numbers(v.stats)
    ci_low, ci_high = _interval(v)
    return VerdictRow(
        test=v.test,
        query_index=v.query_index,
        verdict=v.verdict.value,
        reason=v.reason,
        reference_median=reference,
        patched_median=patched,
        diff=diff,
        threshold=threshold,
        p_value=p_value,
        runs_reference=v.runs_reference,
        runs_patched=v.runs_patched,
        ci_low=ci_low,
        ci_high=ci_high,
        equivalence=v.equivalence or "",
        min_effect=v.min_effect,
        calibration=v.calibration or "",
        process_diffs=_process_diffs(v),
        ci_level=v.interval.level if v.interval is not None else None,
    )


def write_metrics(out: Path, metrics: Sequence[MetricStats]) -> Path:
    rows = [MetricRow(m.test, m.query_index, m.metric, *_numbers(m.stats)[:4]) for m in metrics]
    return verdicts_file.write_metrics(out, rows)


def summary_document(
    status: str,
    message: str,
    counts: Mapping[str, int],
    verdicts: Sequence[QueryVerdict],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """summary.json: the base keys, then the additive `extra` ones, then the queries."""
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "status": status,
        "message": message,
        "counts": {v.value: counts.get(v.value, 0) for v in Verdict},
        **(extra or {}),
        "queries": [_summary_query(v) for v in verdicts],
    }


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
        "ci_level": v.interval.level if v.interval is not None else None,
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
