"""A percentile bootstrap confidence interval for patched_median / reference_median, in chDB
(bootstrap.sql), each side resampled independently. A resample's median is fixed by two
positions that depend only on the run count: bootstrap_draws.sql draws them once per (side,
run count), seeded, so the same runs always give the same interval.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import count
from typing import TypeVar

from compare.engine import SqlEngine, sql_text
from compare.randomization import Samples, write_samples

# The 2.5% tail holds 50 of 2,000 resamples, enough for a stable end point (Efron and
# Tibshirani, An Introduction to the Bootstrap, ch. 13: >= 1,000 for percentile intervals).
RESAMPLES = 2_000
CONFIDENCE = 0.95  # the conventional level: "1.32x slower, 95% CI 1.25-1.40x"
# Fixed, so reruns of the analysis give the same intervals.
BOOTSTRAP_SEED = 20_240_602
# Streams of bootstrap_draws.sql: the sides are resampled independently.
REFERENCE_STREAM = 1
PATCHED_STREAM = 2

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class RatioInterval:
    """A confidence interval for the ratio patched / reference: of the medians (pooled, a
    bootstrap) or of the paired estimate (the inverted blocked test)."""

    low: float
    high: float
    level: float = CONFIDENCE

    def within(self, effect: float) -> bool:
        return self.low >= 1 - effect and self.high <= 1 + effect


def interval_ranks(resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """1-based ranks of the interval's ends among the sorted resampled ratios (k-th smallest
    and largest), in integers so that SQL and the test oracle pick the same ratios."""
    tail = max(1, int(resamples * (1 - confidence) / 2 + 1e-9))
    return tail, resamples + 1 - tail


class Bootstrap:
    """Computes RatioIntervals in one chDB session, caching resamples per run count."""

    def __init__(self, engine: SqlEngine, resamples: int = RESAMPLES) -> None:
        self._engine = engine
        self._resamples = resamples
        self._drawn: set[tuple[int, int]] = set()
        self._files = count()
        engine.execute(sql_text("bootstrap_draws_table.sql"), source="bootstrap_draws_table.sql")

    def intervals(self, series: Mapping[K, Samples]) -> dict[K, RatioInterval | None]:
        """The interval of every series (None when a resampled reference median is 0);
        each series must have at least one run on each side."""
        keys = list(series)
        if not keys:
            return {}
        for samples in series.values():
            if not samples.reference or not samples.patched:
                raise ValueError("a series has no runs on one side")
            self._ensure_draws(REFERENCE_STREAM, len(samples.reference))
            self._ensure_draws(PATCHED_STREAM, len(samples.patched))
        path = self._engine.scratch / f"bootstrap-{next(self._files)}.tsv"
        write_samples(path, [series[k] for k in keys])
        low, high = interval_ranks(self._resamples)
        rows = self._engine.rows(
            "bootstrap.sql", {"samples": str(path), "low_rank": low, "high_rank": high}
        )
        path.unlink()
        return {keys[int(row[0])]: _parse(row) for row in rows}

    def draws(self, stream: int, n: int) -> list[tuple[int, int]]:
        """(m1, m2) of every resample of `n` runs in `stream`, in resample order (tests)."""
        rows = self._engine.rows("bootstrap_draws.sql", self._params(stream, n))
        return [(int(row[4]), int(row[5])) for row in rows]

    def _ensure_draws(self, stream: int, n: int) -> None:
        if (stream, n) in self._drawn:
            return
        self._engine.execute(
            "INSERT INTO bootstrap_draws SELECT stream, n, resample, m1, m2 FROM ("
            + sql_text("bootstrap_draws.sql")
            + ")",
            self._params(stream, n),
            source="bootstrap_draws.sql",
        )
        self._drawn.add((stream, n))

    def _params(self, stream: int, n: int) -> dict[str, str | int | float]:
        return {"n": n, "stream": stream, "seed": BOOTSTRAP_SEED, "resamples": self._resamples}


def _parse(row: list[str]) -> RatioInterval | None:
    if row[1] == "\\N" or row[2] == "\\N":
        return None
    return RatioInterval(float(row[1]), float(row[2]))
