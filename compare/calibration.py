"""A/A calibration: per-query noise floors from a run of the reference against itself
(`chperf run --aa`), written to calibration.tsv and applied by later comparisons.

Each column's meaning: docs/formats.md, "calibration.tsv"; the rule: docs/method.md, "A/A
calibration". `flag_rate` assumes exchangeable runs, so it is only the run-to-run part of
the false-positive rate; `diff` and `flagged` show the server-to-server part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.calibration import CalibrationRow
from artifacts.calibration import read_calibration as read_calibration_rows
from compare.verdict import QueryVerdict

CALIBRATED = "calibrated"
NOT_CALIBRATED = "not calibrated"

# One A/A run is one draw of each query's server-to-server offset; 1.5x covers a second start
# landing further out, yet a floor up to 3.3% keeps the 5% default. A judgement, to be tuned
# with repeated A/A runs (bench/bench_aa.py).
CALIBRATION_FACTOR = 1.5
# A true change of 2T gives |D| >= T in ~99% of runs (T is the 0.99 quantile of D's noise),
# one of T only in ~50%.
MDE_FACTOR = 2.0


def flag_cutoff(verdict: QueryVerdict) -> float | None:
    """max(T, min effect x reference median) in seconds: a relabelled difference at or above
    it would be flagged by the per-query rule; None when the query was not measured."""
    stats = verdict.stats
    if stats is None or stats.diff is None or verdict.min_effect is None:
        return None
    return max(stats.threshold_abs, verdict.min_effect * stats.reference_median)


def calibration_rows(
    verdicts: Sequence[QueryVerdict], flag_rates: Mapping[tuple[str, int], float]
) -> list[CalibrationRow]:
    """The rows of calibration.tsv: every query measured in the A/A run."""
    rows = []
    for v in verdicts:
        stats, rate = v.stats, flag_rates.get((v.test, v.query_index))
        if stats is None or stats.diff is None or stats.threshold is None or rate is None:
            continue
        min_effect = v.min_effect or 0.0
        rows.append(
            CalibrationRow(
                test=v.test,
                query_index=v.query_index,
                query=v.query,
                runs=min(v.runs_reference, v.runs_patched),
                reference_median=stats.reference_median,
                diff=stats.diff,
                threshold=stats.threshold,
                p_value=stats.p_value,
                flagged=stats.significant and abs(stats.diff) >= min_effect,
                flag_rate=rate,
                mde=max(min_effect, MDE_FACTOR * stats.threshold),
                noise_floor=max(stats.threshold, abs(stats.diff)),
            )
        )
    return rows


@dataclass(frozen=True)
class Calibration:
    source: str  # the file, as given
    rows: Mapping[tuple[str, int], CalibrationRow]

    def lookup(self, test: str, query_index: int, query: str) -> tuple[float | None, str]:
        """(min effect, "calibrated"), or (None, "not calibrated: why"): never silently
        treated as calibrated."""
        row = self.rows.get((test, query_index))
        if row is None:
            return None, f"{NOT_CALIBRATED}: not in {self.source}"
        if row.query != query:
            return None, f"{NOT_CALIBRATED}: its SQL changed since {self.source} was made"
        return CALIBRATION_FACTOR * row.noise_floor, CALIBRATED


def read_calibration(path: Path) -> Calibration:
    """calibration.tsv as the per-query floors of a comparison (exit 2 when malformed)."""
    return Calibration(str(path), read_calibration_rows(path))
