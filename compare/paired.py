"""The paired method (the default): a query's verdict statistic from its ABBA pairs, which
cancel the machine's slow spells that pooling (compare/randomization.py) mixes into both
groups. The method: docs/method.md, "The verdict statistic: paired (default) and pooled".
It runs in chDB (paired.sql) over sign vectors and resamples that depend only on the pair
count (sign_coefficients.sql, paired_draws.sql): all 2^n up to SIGN_VECTORS, seeded beyond.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import count
from pathlib import Path
from typing import TypeVar

import numpy as np

from compare.bootstrap import RESAMPLES, interval_ranks
from compare.engine import SqlEngine, sql_text

# The trimmed share at each end: the midmean. 0 would be the mean (one disturbed pair moves
# it), 0.5 the median (its sign-flip distribution is so coarse that below ~15 pairs no
# p-value can reach 0.01, and BH over a suite never finds a discovery).
TRIM = 0.25
QUANTILE = 0.99
SIGN_VECTORS = 10_000
SIGN_SEED = 20_261_122
DRAW_SEED = 20_261_123

PAIRED = "paired"
POOLED = "pooled"
METHODS = (PAIRED, POOLED)

K = TypeVar("K", bound=Hashable)
Pair = tuple[float, float]  # (reference, patched) client times of one run number


@dataclass(frozen=True)
class PairedStats:
    pairs: int
    diff: float  # exp(trimmed mean of log ratios) - 1
    threshold: float  # exp(t) - 1
    threshold_log: float
    p_value: float
    significant: bool
    exact: bool
    ci_low: float
    ci_high: float


def trim_count(pairs: int) -> int:
    return int(pairs * TRIM)


def smallest_p_value(pairs: int) -> float:
    """The smallest p-value paired.sql gives for `pairs` pairs, however clear the change:
    2 / 2^n, when every pair moved the same way (only the observed signs and their mirror are
    that extreme), also for sampled sizes. Other sampled p-values are >= 1/(SIGN_VECTORS + 1)."""
    if pairs < 1:
        raise ValueError(f"need at least one pair, got {pairs}")
    return min(1.0, 2.0 / float(2**pairs))


class Paired:
    """Computes PairedStats in one chDB session, caching coefficient vectors per pair count."""

    def __init__(self, engine: SqlEngine) -> None:
        self._engine = engine
        self._sizes: set[int] = set()
        self._files = count()
        for statement in sql_text("paired_tables.sql").split(";"):
            if statement.strip():
                engine.execute(statement, source="paired_tables.sql")

    def statistics(self, series: Mapping[K, Sequence[Pair]]) -> dict[K, PairedStats]:
        """Every series needs at least one pair, with both times above 0."""
        keys = list(series)
        if not keys:
            return {}
        for key in keys:
            if not series[key] or any(min(p) <= 0 for p in series[key]):
                raise ValueError(f"series {key!r}: no pairs, or a time <= 0")
        self.prepare({len(pairs) for pairs in series.values()})
        path = self._engine.scratch / f"pairs-{next(self._files)}.tsv"
        _write_pairs(path, [series[k] for k in keys])
        low, high = interval_ranks()
        params: dict[str, str | int | float] = {
            "pairs": str(path),
            "quantile": QUANTILE,
            "low_rank": low,
            "high_rank": high,
        }
        rows = self._engine.rows("paired.sql", params)
        path.unlink()
        return {keys[int(row[0])]: _parse(row) for row in rows}

    def tail_shares(
        self, series: Mapping[K, Sequence[Pair]], cutoffs: Mapping[K, float]
    ) -> dict[K, float]:
        """Per series, the share of sign vectors the per-query rule would flag: |trimmed mean|
        at least its cutoff (a log ratio) and a p-value of at most 1 - QUANTILE."""
        keys = [k for k in series if k in cutoffs]
        if not keys:
            return {}
        self.prepare({len(series[k]) for k in keys})
        number = next(self._files)
        pairs_file = self._engine.scratch / f"pairs-{number}.tsv"
        cutoff_file = self._engine.scratch / f"cutoffs-{number}.tsv"
        _write_pairs(pairs_file, [series[k] for k in keys])
        cuts = ["series\tcutoff\n", *(f"{i}\t{float(cutoffs[k])!r}\n" for i, k in enumerate(keys))]
        cutoff_file.write_text("".join(cuts), encoding="utf-8")
        params: dict[str, str | int | float] = {
            "pairs": str(pairs_file),
            "cutoffs": str(cutoff_file),
            "level": 1 - QUANTILE,
        }
        rows = self._engine.rows("paired_tail_share.sql", params)
        pairs_file.unlink()
        cutoff_file.unlink()
        return {keys[int(row[0])]: float(row[1]) for row in rows}

    def prepare(self, sizes: Iterable[int]) -> None:
        """Build the paired_vectors rows of these pair counts now rather than at a look: 40-160 ms
        each (bench/bench_look.py)."""
        for n in sizes:
            self._ensure(n)

    def _ensure(self, n: int) -> None:
        if n in self._sizes:
            return
        # Another Paired on the same engine may have filled the session table already.
        present = self._engine.execute(
            "SELECT count() FROM paired_vectors WHERE n = {n:UInt32}",
            {"n": n},
            source="paired.py",
        )
        if int(present.strip() or 0) > 0:
            self._sizes.add(n)
            return
        params: dict[str, str | int | float] = {
            "n": n,
            "trim": trim_count(n),
            "vectors": SIGN_VECTORS,
            "seed": SIGN_SEED,
            "resamples": RESAMPLES,
            "draw_seed": DRAW_SEED,
        }
        self._engine.execute(_group_vectors(), params, source="paired_tables.sql")
        self._sizes.add(n)


@cache
def _group_vectors() -> str:
    """The INSERT of one paired_vectors row: sign_coefficients.sql and paired_draws.sql for
    one n, grouped into arrays in any order. Read on first use, not at import."""
    return f"""
INSERT INTO paired_vectors
SELECT v.n, v.trim, v.exact, v.coefficients, v.signs, d.draws
FROM
(
    SELECT any(n) AS n, any(trim) AS trim, any(exact) AS exact,
           groupArray(coefficients) AS coefficients, groupArray(signs) AS signs
    FROM ({sql_text("sign_coefficients.sql")}
    )
) AS v
CROSS JOIN
(
    SELECT groupArray(coefficients) AS draws
    FROM ({sql_text("paired_draws.sql")}
    )
) AS d
"""


# A process set's own D counts once it has this many pairs (7 runs give 4 and 3).
MIN_PROCESS_PAIRS = 3


def trimmed_mean_diff(pairs: Sequence[Pair]) -> float:
    """D of paired.sql, exp(25% trimmed mean of ln(patched / reference)) - 1, in numpy."""
    ratios = np.sort(np.log([p / r for r, p in pairs]))
    k = trim_count(len(ratios))
    return math.expm1(float(np.mean(ratios[k : len(ratios) - k])))


def process_diffs(pairs: Sequence[Pair], processes: Sequence[int]) -> tuple[float, ...]:
    """D of each server process set on its own pairs, in set order: runs alternate between
    the sets in blocks of two (runner/schedule.server_set), so each set holds half the pairs
    in both orders. Empty unless at least two sets have MIN_PROCESS_PAIRS pairs."""
    if len(processes) != len(pairs):
        return ()
    by_set: dict[int, list[Pair]] = {}
    for pair, number in zip(pairs, processes, strict=True):
        by_set.setdefault(number, []).append(pair)
    usable = [by_set[n] for n in sorted(by_set) if len(by_set[n]) >= MIN_PROCESS_PAIRS]
    if len(usable) < 2:
        return ()
    return tuple(trimmed_mean_diff(p) for p in usable)


def _write_pairs(path: Path, series: Sequence[Sequence[Pair]]) -> None:
    """The pairs input of paired.sql and paired_tail_share.sql: series numbered by position."""
    lines = ["series\treference\tpatched\n"]
    for index, pairs in enumerate(series):
        lines.extend(f"{index}\t{float(r)!r}\t{float(p)!r}\n" for r, p in pairs)
    path.write_text("".join(lines), encoding="utf-8")


def _parse(row: list[str]) -> PairedStats:
    observed, threshold_log = float(row[3]), float(row[4])
    return PairedStats(
        pairs=int(row[1]),
        exact=row[2] == "1",
        diff=math.expm1(observed),
        threshold=math.expm1(threshold_log),
        threshold_log=threshold_log,
        p_value=float(row[5]),
        significant=row[6] == "1",
        ci_low=float(row[7]),
        ci_high=float(row[8]),
    )
