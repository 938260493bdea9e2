"""The pooled method (ClickHouse's): medians, D, T and the p-value of many series (a series is
one metric of one query) at once, in chDB (randomization.sql). The splits depend only on the
group sizes, so the distribution of the groups' median positions is computed once per
(n1, n2), exactly (split_weights_exact.sql) or from a seeded sample, and reused.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import TypeVar

from compare.engine import SqlEngine, sql_text

# As in ClickHouse's compare.sh: a query with no real change exceeds T in about 1% of runs.
QUANTILE = 0.99

# Exact up to 25 runs a side: every split count stays below 2**53, so the weights are exact in
# randomization.sql's Float64 sums, and the enumeration below ~10^4 position tuples.
MAX_EXACT_POOLED_RUNS = 50

# Beyond that, a sample: with 10,000 splits about 100 lie above the 0.99 quantile, which
# keeps its sampling error small.
SAMPLED_SPLITS = 10_000

# Fixed, so the same input always gives the same verdicts.
SPLIT_SEED = 20_240_601

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Samples:
    """The measured values of one series per side (in any order), and for the paired method
    the (reference, patched) pairs of the run numbers measured on both sides."""

    reference: tuple[float, ...]
    patched: tuple[float, ...]
    pairs: tuple[tuple[float, float], ...] = ()  # empty where pairs do not apply (metrics)
    processes: tuple[int, ...] = ()  # each pair's server process set; empty: one set


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
    # Each server process set's own D (blocked.process_diffs): a change must show on each.
    process_diffs: tuple[float, ...] = ()
    # The paired method's T on the log scale (|ln(1 + D)| >= it exactly when its interval
    # excludes 0), and whether its run count can reach the level at all.
    threshold_log: float | None = None
    decidable: bool = True

    @property
    def beyond_threshold(self) -> bool:
        """|D| >= T on the method's own scale (paired: log, where a speedup to 0.67x is as far
        out as a slowdown to 1.5x). Unlike `significant`, no p-value condition: the stop rule
        uses it while the pairs are still too few for one."""
        if self.diff is None or self.threshold is None:
            return False
        if self.threshold_log is not None:
            return abs(math.log1p(self.diff)) >= self.threshold_log
        return abs(self.diff) >= self.threshold

    @property
    def significant(self) -> bool:
        """The per-query rule's |D| >= T; for the paired method also p <= 0.01 (paired.sql)."""
        if self.paired_significant is not None:
            return self.paired_significant
        return self.beyond_threshold


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
        return [positions(row[1]) for row in rows]

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


def positions(text: str) -> tuple[int, ...]:
    """A chDB Array(UInt32) of split positions, as TSV prints it ("[1,4,5]")."""
    return tuple(int(v) for v in text.strip("[]").split(","))


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
