"""bench/inject_change.py: a change of known size over a source run's own noise, judged by
the live stop rule and compare's per-query and BH rules (chDB, no servers)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from bench.inject_change import centre_of, draw, judge_run, simulate
from bench.runs import run_pairs
from compare.interim import InterimJudge
from compare.stopping import StopRule
from compare.verdict import Thresholds
from tests.runs import write_artifacts


def noisy_source(tmp_path: Path, queries: int, change: float) -> Path:
    """41 pairs a query: the patched side `change` slower, with +-1% alternating noise."""
    series = {}
    for index in range(queries):
        reference = tuple(0.05 + 0.001 * (n % 3) for n in range(41))
        factor = [(1 + change) * (1.01 if (n + index) % 2 else 0.99) for n in range(41)]
        series[index] = (reference, tuple(r * f for r, f in zip(reference, factor, strict=True)))
    return write_artifacts(tmp_path / "source", series)


def test_draw_replaces_the_source_change_by_the_shift(tmp_path: Path) -> None:
    pairs = run_pairs(noisy_source(tmp_path, 1, 0.30))[("t", 0)]
    drawn = draw(pairs, 0.10, 40, random.Random(1))
    logs = sorted(math.log(p / r) for r, p in drawn)
    middle = logs[10:30]
    assert len(drawn) == 40
    assert sum(middle) / len(middle) == pytest.approx(math.log(1.10), abs=0.011)
    assert all(abs(x - math.log(1.10)) < 0.011 for x in logs)
    assert draw(pairs, 0.10, 40, random.Random(1)) == drawn  # seeded


@pytest.mark.parametrize(("shift", "changed"), [(0.20, 6), (0.0, 0)])
def test_every_injected_change_is_found_and_none_without_one(
    tmp_path: Path, shift: float, changed: int
) -> None:
    # Six queries, all changed: from the second discovery on the level (c + 1) * 0.05 / 6
    # passes 1%, where a stop at 7 pairs (p 0.0156) would be a BH discovery that compare's
    # per-query rule (p <= 1%) still calls unchanged. Every one must end changed.
    sources = run_pairs(noisy_source(tmp_path, 6, -0.25))
    rule = StopRule(fdr_q=0.05, queries=len(sources))
    rng = random.Random(3)
    sequences = {k: draw(v, shift, rule.extended_runs, rng) for k, v in sources.items()}
    judge = InterimJudge(Thresholds(0.05, 0.10))
    try:
        counts = judge_run(simulate(rule, sequences, judge, 1), shift)
    finally:
        judge.close()
    assert counts["queries"] == 6
    assert counts["changed"] == changed
    assert counts["right direction"] == changed
    assert counts["wrong direction"] == 0
    assert counts["unstable"] == 0
    assert counts["fixed_us"] == pytest.approx(6 * 15 * 2 * 0.051 * 1e6 * (1 + shift / 2), rel=0.1)


def test_noise_scale_shrinks_the_spread_around_the_shift(tmp_path: Path) -> None:
    # The source's log ratios are ln(1.3) + ln(0.99) or + ln(1.01): +-1% around the centre.
    pairs = run_pairs(noisy_source(tmp_path, 1, 0.30))[("t", 0)]
    assert centre_of(pairs) == pytest.approx(math.log(1.30), abs=0.001)
    for scale in (0.5, 2.0):
        drawn = draw(pairs, 0.10, 40, random.Random(1), noise_scale=scale)
        spread = max(abs(math.log(p / r) - math.log(1.10)) for r, p in drawn)
        assert spread == pytest.approx(0.01 * scale, rel=0.15)


def test_own_changes_are_scored_per_query(tmp_path: Path) -> None:
    # Each query keeps its own change: two large ones in opposite directions, one below 2%.
    sources = run_pairs(noisy_source(tmp_path, 3, 0.0))
    shifts = dict(zip(sorted(sources), (0.20, -0.20, 0.01), strict=True))
    rule = StopRule(fdr_q=0.05, queries=len(sources))
    rng = random.Random(5)
    sequences = {k: draw(v, shifts[k], rule.extended_runs, rng) for k, v in sources.items()}
    judge = InterimJudge(Thresholds(0.05, 0.10))
    try:
        outcomes = simulate(rule, sequences, judge, 1)
    finally:
        judge.close()
    counts = judge_run(outcomes, shifts)
    assert (counts["large"], counts["large found"], counts["wrong direction"]) == (2, 2, 0)
    assert counts["small flagged"] == 0
    # Scored against the opposite truth, both large changes are flagged the wrong way.
    flipped = judge_run(outcomes, {k: -s for k, s in shifts.items()})
    assert (flipped["large found"], flipped["wrong direction"]) == (0, 2)
