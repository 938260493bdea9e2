"""A/A calibration: per-query noise floors measured by running the
reference against itself, written to calibration.tsv and applied by later comparisons.

An A/A run (`chperf run --aa`: patched = the reference binary with the reference overlays)
has no real change, so whatever it shows is noise. Per query the calibration records:
  threshold   T of the A/A run (the randomization noise at the run count it got)
  diff        the A/A D: two identical servers differ by a few percent on some queries
              (memory layout, METHOD.md §9), which T cannot see (it only shuffles runs)
  flagged     1 when this A/A run's per-query rule (|D| >= T and |D| >= min effect, before
              false-discovery control) called it changed: a false positive seen
  flag_rate   the share of random relabellings of the query's own A/A runs that the
              per-query rule would flag, under the query's method: pooled splits with
              |median difference| >= max(T, min effect x reference median), or (paired)
              sign vectors with |trimmed mean of s_i r_i| >= max(ln(1 + T),
              ln(1 + min effect)) (paired_tail_share.sql). It assumes exchangeability, so
              it measures the run-to-run part of the false-positive rate only; `diff` and
              `flagged` show the server-to-server part. Under the 0.99 quantile it is at most
              ~1% by construction, and ~0 when the min effect dominates T.
  mde         the minimum detectable effect at the run count it got (the default budget
              when the A/A run used the defaults): max(min effect, 2 x T). Under a pure
              shift a true change of 2T gives |D| >= T in ~99% of runs (T is the 0.99
              quantile of D's noise); a change of T only in ~50%.
  noise_floor max(T, |diff|): the largest apparent change noise produced in the A/A run.

A later run with `--calibration FILE` gives each query the min effect
    max(--min-effect, the test's max_ignored_relative_change, CALIBRATION_FACTOR x noise_floor)
A query the file lacks (or whose SQL text changed since) keeps the default and is reported
"not calibrated": never silently treated as calibrated.

The file's format: artifacts/calibration.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from artifacts.calibration import CalibrationRow
from artifacts.calibration import read_calibration as read_calibration_rows
from compare.verdict import QueryVerdict

CALIBRATED = "calibrated"
NOT_CALIBRATED = "not calibrated"

# The calibrated min effect is 1.5 x the A/A noise floor. One A/A run gives one draw of each
# query's server-to-server offset; a second server start can land somewhat further out, and
# 1.5x covers that without blunting quiet queries: a floor up to 3.3% keeps the 5% default.
# A judgement, to be tuned with repeated A/A runs (bench/bench_aa.py).
CALIBRATION_FACTOR = 1.5
# MDE = max(min effect, MDE_FACTOR x T): see the module docstring.
MDE_FACTOR = 2.0


def flag_cutoff(verdict: QueryVerdict) -> float | None:
    """max(T, min effect x reference median) in seconds: a relabelled difference at or above
    it would be flagged by the per-query rule; None when the query was not measured."""
    stats = verdict.stats
    if stats is None or stats.diff is None or verdict.min_effect is None:
        return None
    return max(stats.threshold_abs, verdict.min_effect * stats.reference_median)


def paired_flag_cutoff(verdict: QueryVerdict) -> float | None:
    """The same cutoff for the paired statistic, as a log ratio: max(T, min effect) on the
    log scale, where the paired rule compares |trimmed mean of ln ratios| with T."""
    stats = verdict.stats
    if stats is None or stats.threshold is None or verdict.min_effect is None:
        return None
    return max(math.log1p(stats.threshold), math.log1p(verdict.min_effect))


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
        """(calibrated min effect, status) of a query: status "calibrated", or "not
        calibrated: why" with no min effect."""
        row = self.rows.get((test, query_index))
        if row is None:
            return None, f"{NOT_CALIBRATED}: not in {self.source}"
        if row.query != query:
            return None, f"{NOT_CALIBRATED}: its SQL changed since {self.source} was made"
        return CALIBRATION_FACTOR * row.noise_floor, CALIBRATED


def read_calibration(path: Path) -> Calibration:
    """calibration.tsv as the per-query floors of a comparison (exit 2 when malformed)."""
    return Calibration(str(path), read_calibration_rows(path))
