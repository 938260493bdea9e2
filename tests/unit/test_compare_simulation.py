"""Simulated runs with fixed seeds: the false-positive rate and power of the
decision, through the real SQL statistic and the real classification. No servers needed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from bench.bench_classes import CLASSES, SyntheticClass
from bench.bench_classes import simulate as simulate_classes
from compare.engine import SqlEngine
from compare.randomization import Randomization, Samples
from compare.verdict import QueryEvidence, Thresholds, Verdict, classify

RUNS = 15  # per side, the fixed mode's default
QUERIES = 1000


@pytest.fixture(scope="module")
def engine() -> Iterator[SqlEngine]:
    with SqlEngine() as session:  # one chDB session a process: every test of the module
        yield session


@pytest.fixture(scope="module")
def randomization(engine: SqlEngine) -> Randomization:
    return Randomization(engine)


def simulate(
    randomization: Randomization, *, noise: float, change: float, seed: int
) -> Counter[Verdict]:
    """Verdicts of QUERIES queries whose runs take base * (1 + change) * exp(noise * N(0, 1))."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.01, 1.0, QUERIES)  # seconds; the verdict is scale-free
    series = {
        i: Samples(
            tuple(base[i] * np.exp(noise * rng.standard_normal(RUNS))),
            tuple(base[i] * (1 + change) * np.exp(noise * rng.standard_normal(RUNS))),
        )
        for i in range(QUERIES)
    }
    stats = randomization.statistics(series)
    verdicts = Counter[Verdict]()
    for i in range(QUERIES):
        evidence = QueryEvidence(
            "sim", i, "", None, runs_reference=RUNS, runs_patched=RUNS, stats=stats[i]
        )
        verdicts[classify(evidence, Thresholds()).verdict] += 1
    return verdicts


def changed(verdicts: Counter[Verdict]) -> int:
    return verdicts[Verdict.FASTER] + verdicts[Verdict.SLOWER]


def test_aa_runs_with_3_percent_noise_flag_at_most_1_percent_of_queries(
    randomization: Randomization,
) -> None:
    verdicts = simulate(randomization, noise=0.03, change=0.0, seed=1)
    assert changed(verdicts) <= QUERIES // 100
    assert verdicts[Verdict.UNCHANGED] >= 0.98 * QUERIES


def test_a_20_percent_slowdown_with_3_percent_noise_is_slower_in_99_percent_of_queries(
    randomization: Randomization,
) -> None:
    verdicts = simulate(randomization, noise=0.03, change=0.20, seed=2)
    assert verdicts[Verdict.SLOWER] >= 0.99 * QUERIES
    assert verdicts[Verdict.FASTER] == 0


def test_a_20_percent_speedup_with_3_percent_noise_is_faster_in_99_percent_of_queries(
    randomization: Randomization,
) -> None:
    verdicts = simulate(randomization, noise=0.03, change=-0.20, seed=3)
    assert verdicts[Verdict.FASTER] >= 0.99 * QUERIES


def test_25_percent_noise_gives_unstable_not_changed(randomization: Randomization) -> None:
    verdicts = simulate(randomization, noise=0.25, change=0.0, seed=4)
    # Under no change |D| >= T has probability of about 1 - QUANTILE by construction, so a
    # few queries can still cross T; the bar is that noise reads as unstable, not as change.
    assert verdicts[Verdict.UNSTABLE] >= 0.97 * QUERIES
    assert changed(verdicts) <= 0.025 * QUERIES
    assert verdicts[Verdict.UNCHANGED] <= 0.01 * QUERIES


# The default (paired) statistic over bench/bench_classes.py's synthetic classes at the fixed
# mode's 15 runs a side: its bars, with fixed seeds.
@pytest.mark.parametrize("cls", [c for c in CLASSES if abs(c.change) < 0.02], ids=lambda c: c.name)
def test_no_change_below_2_percent_is_called_changed_by_the_paired_statistic(
    engine: SqlEngine, cls: SyntheticClass
) -> None:
    found = simulate_classes(engine, cls, 15, 500, seed=5)
    assert changed(found) <= 5  # at most 1%
    wrong = Verdict.FASTER if cls.change > 0 else Verdict.SLOWER
    if cls.change:
        assert found[wrong] == 0


@pytest.mark.parametrize(
    "cls",
    [c for c in CLASSES if abs(c.change) >= 0.10 and "heavy" not in c.name],
    ids=lambda c: c.name,
)
def test_a_10_percent_change_or_more_is_called_in_its_direction_by_the_paired_statistic(
    engine: SqlEngine, cls: SyntheticClass
) -> None:
    found = simulate_classes(engine, cls, 15, 500, seed=6)
    right, wrong = (
        (Verdict.SLOWER, Verdict.FASTER)
        if cls.change > 0
        else (
            Verdict.FASTER,
            Verdict.SLOWER,
        )
    )
    assert found[right] >= 0.95 * 500
    assert found[wrong] == 0
