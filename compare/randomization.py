"""The randomization threshold (METHOD.md §3) for many series at once, computed in chDB.

A *series* is one metric of one query: its measured runs on the reference and the patched
side. For each series the SQL (compare/randomization.sql) returns both medians, the relative
difference D, and the threshold T: the QUANTILE quantile of |median(group 1) -
median(group 2)| over the splits of the pooled runs into groups of the original sizes,
relative to the reference median; plus the randomization p-value of the observed difference.

The splits depend only on the group sizes, not on the values: a split decides which
positions of the sorted pooled runs hold each group's middle values. So the distribution of
those positions is computed once per (n1, n2) pair -- exactly by order statistics
(split_weights_exact.sql) or from a fixed seeded sample (sampled_splits.sql,
split_weights_sampled.sql) -- and every series of those sizes reuses it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import TypeVar

from compare.engine import SqlEngine, sql_text

# The threshold is the 0.99 quantile of the no-change distribution (METHOD.md §3, as in
# ClickHouse's compare.sh): a query with no real change exceeds it in about 1% of runs.
QUANTILE = 0.99

# Enumerate every split exactly up to this many pooled runs (25 per side). Up to here every
# split count is below 2**53, so the weights and their cumulative sums are exact in the
# Float64 comparisons of randomization.sql; the enumeration stays below ~10^4 position tuples.
MAX_EXACT_POOLED_RUNS = 50

# Beyond that, a fixed sample of splits: at least 10,000 (issue 3) keeps the sampling error of
# the 0.99 quantile small (about 100 splits lie above it).
SAMPLED_SPLITS = 10_000

# The seed of the sampled splits: fixed, so the same input always gives the same verdicts.
SPLIT_SEED = 20_240_601

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Samples:
    """The measured values of one series, per side (run order does not matter), and the
    pairs (reference, patched) of the run numbers measured on both sides, for the paired
    method (compare/paired.py); empty where pairs do not apply (metrics)."""

    reference: tuple[float, ...]
    patched: tuple[float, ...]
    pairs: tuple[tuple[float, float], ...] = ()
    # The server process set of each pair (runs.tsv `process`); empty: all from one set.
    processes: tuple[int, ...] = ()


@dataclass(frozen=True)
class SeriesStats:
    runs_reference: int
    runs_patched: int
    reference_median: float
    patched_median: float
    diff: float | None  # D, relative to the reference median; None when that median is 0
    threshold: float | None  # T, relative to the reference median; None when that median is 0
    threshold_abs: float  # T in the metric's own unit
    p_value: float  # randomization p-value of |patched_median - reference_median|
    exact: bool  # every split enumerated (else a seeded sample of SAMPLED_SPLITS)
    # The paired method (compare/paired.py) replaces diff, threshold, threshold_abs, p_value
    # and exact with its own and sets these; the medians stay those of the pooled runs.
    method: str = "pooled"
    pairs: int = 0
    paired_significant: bool | None = None
    paired_interval: tuple[float, float] | None = None
    # D of each server process set with enough pairs, in set order (compare/paired.py,
    # process_diffs); empty with a single set. compare/verdict.py: a change must show on each.
    process_diffs: tuple[float, ...] = ()

    @property
    def beyond_threshold(self) -> bool:
        """|D| >= T by magnitude alone, in the method's own terms: the paired method compares
        on the log scale, where a speedup to 0.67x (D -33%) is as far from 0 as a slowdown to
        1.5x (T reported as +50%); the pooled one on the linear scale. Unlike `significant`,
        no p-value condition: the stop rule uses it while the pairs are still too few for one."""
        if self.diff is None or self.threshold is None:
            return False
        if self.method == "paired":
            return abs(math.log1p(self.diff)) >= math.log1p(self.threshold) * (1 - 1e-9)
        return abs(self.diff) >= self.threshold

    @property
    def significant(self) -> bool:
        """|D| >= T, in the method's own terms (the paired method compares on the log scale,
        where a slowdown and a speedup by the same factor are equally far from 0)."""
        if self.paired_significant is not None:
            return self.paired_significant
        return self.beyond_threshold  # pooled: no p-value condition beyond |D| >= T


def is_exact(runs_reference: int, runs_patched: int) -> bool:
    return runs_reference + runs_patched <= MAX_EXACT_POOLED_RUNS


class Randomization:
    """Computes SeriesStats in one chDB session, caching split distributions per size pair."""

    def __init__(self, engine: SqlEngine) -> None:
        self._engine = engine
        self._sizes: set[tuple[int, int]] = set()
        self._files = count()
        engine.execute(sql_text("split_weights.sql"), source="split_weights.sql")

    def statistics(self, series: Mapping[K, Samples]) -> dict[K, SeriesStats]:
        """Statistics of every series; each must have at least one run on each side."""
        keys = list(series)
        for key in keys:
            if not series[key].reference or not series[key].patched:
                raise ValueError(f"series {key!r} has no runs on one side")
        if not keys:
            return {}
        for sizes in {(len(s.reference), len(s.patched)) for s in series.values()}:
            self._ensure_split_weights(*sizes)
        path = self._engine.scratch / f"samples-{next(self._files)}.tsv"
        write_samples(path, [series[k] for k in keys])
        rows = self._engine.rows("randomization.sql", {"samples": str(path), "quantile": QUANTILE})
        path.unlink()
        return {keys[int(row[0])]: _parse_stats(row) for row in rows}

    def tail_shares(
        self, series: Mapping[K, Samples], cutoffs: Mapping[K, float]
    ) -> dict[K, float]:
        """Per series, the share of its splits whose |median difference| >= its cutoff (in
        the values' unit): how often random relabelling of its own runs reaches the cutoff."""
        keys = list(series)
        if not keys:
            return {}
        for sizes in {(len(s.reference), len(s.patched)) for s in series.values()}:
            self._ensure_split_weights(*sizes)
        number = next(self._files)
        samples = self._engine.scratch / f"samples-{number}.tsv"
        cutoff_file = self._engine.scratch / f"cutoffs-{number}.tsv"
        write_samples(samples, [series[k] for k in keys])
        lines = ["series\tcutoff\n", *(f"{i}\t{float(cutoffs[k])!r}\n" for i, k in enumerate(keys))]
        cutoff_file.write_text("".join(lines), encoding="utf-8")
        params = {"samples": str(samples), "cutoffs": str(cutoff_file)}
        rows = self._engine.rows("tail_share.sql", params)
        samples.unlink()
        cutoff_file.unlink()
        return {keys[int(row[0])]: float(row[1]) for row in rows}

    def sampled_splits(self, runs_reference: int, runs_patched: int) -> list[tuple[int, ...]]:
        """The group-1 positions (1-based, in the sorted pooled runs) of every sampled split."""
        rows = self._engine.rows("sampled_splits.sql", _sampling(runs_reference, runs_patched))
        return [tuple(int(v) for v in row[1].strip("[]").split(",")) for row in rows]

    def _ensure_split_weights(self, n1: int, n2: int) -> None:
        if (n1, n2) in self._sizes:
            return
        if is_exact(n1, n2):
            self._engine.insert("split_weights", "split_weights_exact.sql", {"n1": n1, "n2": n2})
        else:
            params = _sampling(n1, n2)
            self._engine.create_table("sampled_splits", "sampled_splits.sql", params)
            self._engine.insert("split_weights", "split_weights_sampled.sql", params)
            self._engine.execute("DROP TABLE sampled_splits", source="sampled_splits.sql")
        self._sizes.add((n1, n2))


def _sampling(n1: int, n2: int) -> dict[str, str | int | float]:
    return {"n1": n1, "n2": n2, "seed": SPLIT_SEED, "splits": SAMPLED_SPLITS}


def write_samples(path: Path, series: list[Samples]) -> None:
    lines = ["series\tside\tvalue\n"]
    for index, samples in enumerate(series):
        lines.extend(f"{index}\treference\t{float(v)!r}\n" for v in samples.reference)
        lines.extend(f"{index}\tpatched\t{float(v)!r}\n" for v in samples.patched)
    path.write_text("".join(lines), encoding="utf-8")


def _nullable(text: str) -> float | None:
    return None if text == "\\N" else float(text)


def _parse_stats(row: list[str]) -> SeriesStats:
    return SeriesStats(
        runs_reference=int(row[1]),
        runs_patched=int(row[2]),
        reference_median=float(row[3]),
        patched_median=float(row[4]),
        diff=_nullable(row[5]),
        threshold=_nullable(row[6]),
        threshold_abs=float(row[7]),
        p_value=float(row[8]),
        exact=row[9] == "1",
    )
