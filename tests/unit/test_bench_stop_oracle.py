"""bench/stop_oracle.py: the least time a stop rule could spend, knowing the future."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from bench.stop_oracle import (
    FIXED_COUNTS,
    SHRINK_COUNTS,
    Need,
    apart,
    dropping_needs,
    fixed_counts,
    known_noise_needs,
    least_time,
    needs,
    reason_kind,
    rule_gap,
    shrinkage,
    window_thresholds,
    without_apart,
)
from compare.interim import InterimJudge
from compare.stopping import StopRule
from compare.verdict import Thresholds


def _pairs(
    seed: int, spread: float, ratio: float = 1.0, runs: int = 41
) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [
        (0.1 * rng.lognormvariate(0, spread), 0.1 * ratio * rng.lognormvariate(0, spread))
        for _ in range(runs)
    ]


@pytest.fixture
def judge() -> Iterator[InterimJudge]:
    judge = InterimJudge(Thresholds())
    yield judge
    judge.close()


def test_a_quiet_query_settles_at_the_first_look_a_hopeless_one_never(judge: InterimJudge) -> None:
    runs = {
        ("quiet", 0): _pairs(1, 0.005),
        ("clear change", 0): _pairs(2, 0.01, ratio=1.5),
        ("hopeless", 0): _pairs(3, 0.8),
    }
    found = {q.key[0]: q for q in needs(runs, StopRule(queries=3), 1, judge)}
    assert found["quiet"].runs == 6
    assert found["clear change"].runs == 6
    assert found["hopeless"].runs is None and found["hopeless"].seconds is None
    assert found["quiet"].fixed_settles and not found["hopeless"].fixed_settles
    pairs = runs[("quiet", 0)]
    assert found["quiet"].seconds == pytest.approx(sum(r + p for r, p in pairs[:6]))
    assert found["quiet"].fixed_seconds == pytest.approx(sum(r + p for r, p in pairs[:15]))


def test_a_query_the_source_cut_short_settles_at_the_cost_of_all_its_runs(
    judge: InterimJudge,
) -> None:
    pairs = _pairs(3, 0.8, runs=20)  # hopeless, but its source stopped it at 20 runs
    (found,) = needs({("cut", 0): pairs}, StopRule(queries=1), 1, judge)
    assert found.runs == 20
    assert found.seconds == pytest.approx(sum(r + p for r, p in pairs))


def test_a_noisier_query_needs_more_runs_than_a_quiet_one(judge: InterimJudge) -> None:
    runs = {("quiet", 0): _pairs(4, 0.01), ("noisy", 0): _pairs(4, 0.12)}
    found = {q.key[0]: q.runs for q in needs(runs, StopRule(queries=2), 1, judge)}
    assert found["noisy"] is not None and found["quiet"] is not None
    assert found["noisy"] > found["quiet"]


def _need(name: str, runs: int | None, seconds: float | None) -> Need:
    return Need((name, 0), runs, seconds, floor_seconds=1.0, fixed_seconds=2.5, fixed_settles=True)


def test_the_oracle_gives_up_the_costliest_queries_within_the_share() -> None:
    queries = [_need(f"q{i}", 6, 1.0) for i in range(30)]
    queries += [_need("costly", 30, 9.0), _need("dear", 20, 5.0), _need("cheap", 8, 1.5)]
    spent, given_up = least_time(queries, 0.07)  # floor(0.07 x 33) = 2 may end unstable
    assert [q.key[0] for q in given_up] == ["costly", "dear"]
    assert spent == pytest.approx(30 * 1.0 + 1.0 + 1.0 + 1.5)
    spent, given_up = least_time(queries, 0.0)
    assert given_up == [] and spent == pytest.approx(30 + 9.0 + 5.0 + 1.5)


def test_hopeless_queries_use_up_the_share_first() -> None:
    queries = [_need("never", None, None), _need("costly", 30, 9.0), _need("cheap", 8, 1.5)]
    queries += [_need(f"q{i}", 6, 1.0) for i in range(30)]
    spent, given_up = least_time(queries, 0.07)  # 2 may: the hopeless one and the costliest
    assert [q.key[0] for q in given_up] == ["never", "costly"]
    assert spent == pytest.approx(1.0 + 1.0 + 1.5 + 30)
    spent, given_up = least_time(queries, 0.0)  # none may, yet the hopeless one is unstable
    assert [q.key[0] for q in given_up] == ["never"]


def test_t_shrinks_like_one_over_sqrt_runs_on_normal_noise_but_not_after_a_slow_run(
    judge: InterimJudge,
) -> None:
    runs = {("q", i): _pairs(100 + i, 0.05) for i in range(30)}
    runs[("short", 0)] = _pairs(7, 0.05, runs=20)  # fewer than 40 runs: not in the ratios
    ratios = shrinkage(runs, 1, judge)
    assert list(ratios) == list(SHRINK_COUNTS)
    assert all(len(values) == 30 for values in ratios.values())
    assert all(0.8 < sorted(values)[15] < 1.3 for values in ratios.values())
    # one reference run at 3x in the first block: the early intervals reach out to it
    slowed = {}
    for i in range(30):
        pairs = _pairs(100 + i, 0.05)
        pairs[1] = (3 * pairs[1][0], pairs[1][1])
        slowed[("q", i)] = pairs
    ratios = shrinkage(slowed, 1, judge)
    median = {n: sorted(values)[15] for n, values in ratios.items()}
    assert median[6] > 1.5 > 1.2 > median[30]


def test_the_rule_s_time_above_the_oracle_is_told_by_why_it_stopped() -> None:
    runs = {("a", 0): [(1.0, 1.0)] * 10, ("b", 0): [(0.5, 0.5)] * 10}
    queries = [
        Need(("a", 0), 6, 12.0, floor_seconds=12.0, fixed_seconds=30.0, fixed_settles=True),
        Need(("b", 0), None, None, floor_seconds=6.0, fixed_seconds=15.0, fixed_settles=False),
    ]
    _, given_up = least_time(queries, 0.0)
    reasons = {
        ("a", 0): "settled: T 7.0% above the target, but a change is out of reach: |D| 1.0%",
        ("b", 0): "reached 40 runs (extended)",
    }
    gap = rule_gap(queries, given_up, runs, {("a", 0): 8, ("b", 0): 10}, reasons)
    assert gap == {"futility (rule 6)": (1, 4.0), "reached 40 runs": (1, 4.0)}
    assert reason_kind("settled changed (D +11.0%, p 0.0028)") == "settled changed"
    assert reason_kind("used the 30 s time budget") == "used the 30 s time budget"


def test_a_statistic_knowing_the_noise_settles_by_it_and_a_robust_one_ignores_outliers() -> None:
    rule = StopRule(queries=4)
    # sd 0.02: 2.58 x 0.028 / sqrt(6) is far below 10%; sd 0.2: about 2.58 x 0.28 / sqrt(40)
    runs = {("quiet", 0): _pairs(5, 0.02), ("noisy", 0): _pairs(6, 0.2)}
    outlying = _pairs(7, 0.02)
    for i in range(0, 40, 5):  # every fifth reference run 4x slower: a heavy tail
        outlying[i] = (4 * outlying[i][0], outlying[i][1])
    runs[("outliers", 0)] = outlying
    runs[("change", 0)] = _pairs(8, 0.15, ratio=1.5)  # settles as a change, not by its spread
    sd = {q.key[0]: q.runs for q in known_noise_needs(runs, rule, robust=False)}
    robust = {q.key[0]: q.runs for q in known_noise_needs(runs, rule, robust=True)}
    assert sd["quiet"] == robust["quiet"] == 6
    assert sd["noisy"] is None and robust["noisy"] is None  # 10% out of reach even at 40
    assert sd["outliers"] is None and robust["outliers"] == 6
    assert sd["change"] == robust["change"] == 6


def test_a_fixed_run_count_leaves_the_noisy_queries_unstable_until_it_is_large(
    judge: InterimJudge,
) -> None:
    runs = {("quiet", i): _pairs(200 + i, 0.005) for i in range(3)}
    runs[("noisy", 0)] = _pairs(9, 0.07)  # T below 10% only with many runs
    runs[("hopeless", 0)] = _pairs(3, 0.8)
    counts = {n: (unstable, time) for n, unstable, time in fixed_counts(runs, 1, judge)}
    assert list(counts) == list(FIXED_COUNTS)
    assert counts[6][0] == 2 and counts[40][0] == 1  # the noisy one settles, the hopeless never
    assert [counts[n][0] for n in FIXED_COUNTS] == sorted(
        (counts[n][0] for n in FIXED_COUNTS), reverse=True
    )
    fifteen = sum(sum(r + p for r, p in pairs[:15]) for pairs in runs.values())
    six = sum(sum(r + p for r, p in pairs[:6]) for pairs in runs.values())
    assert counts[15][1] == pytest.approx(1.0)
    assert counts[6][1] == pytest.approx(six / fifteen)


def test_a_block_with_one_run_apart_is_found_whichever_side_ran_it() -> None:
    assert apart([(1.0, 1.01), (3.0, 1.02)], 0.8)  # a reference run 3x slower
    assert apart([(1.0, 3.0), (1.01, 1.02)], 0.8)  # a patched one
    assert apart([(0.3, 1.0), (1.01, 1.02)], 0.8)  # one run far faster
    assert not apart([(1.0, 1.5), (1.01, 1.52)], 0.8)  # a change: two runs and two
    assert not apart([(1.0, 1.0), (1.0, 1.0)], 0.8)  # equal times
    pairs = [(1.0, 1.0), (3.0, 1.0), (1.0, 1.1), (1.0, 1.1), (2.0, 2.0)]
    assert without_apart(pairs, 0.8) == [(1.0, 1.1), (1.0, 1.1), (2.0, 2.0)]


def test_leaving_out_the_block_of_a_lone_slow_run_costs_that_block_not_three_looks(
    judge: InterimJudge,
) -> None:
    pairs = _pairs(11, 0.005, ratio=1.02)
    pairs[1] = (3 * pairs[1][0], pairs[1][1])
    runs = {("slowed", 0): pairs}
    rule = StopRule(queries=1)
    # with every block the interval reaches the slow run's two cross differences until the
    # critical rank passes them (3, at 10 runs); without its block, three blocks at 8 runs
    assert needs(runs, rule, 1, judge)[0].runs == 10
    assert dropping_needs(runs, rule, 0.8, judge)[0].runs == 8
    quiet = {("quiet", 0): _pairs(12, 0.005, ratio=1.02)}
    assert dropping_needs(quiet, rule, 0.8, judge)[0].runs == needs(quiet, rule, 1, judge)[0].runs


def test_median_t_by_window_of_runs_finds_the_noisy_stretch(judge: InterimJudge) -> None:
    runs = {}
    for i in range(5):
        pairs = _pairs(300 + i, 0.01, runs=18)
        pairs[6:12] = _pairs(400 + i, 0.2, runs=6)
        runs[("q", i)] = pairs
    windows = window_thresholds(runs, judge)
    assert [(first, count) for first, _, count in windows] == [(1, 5), (7, 5), (13, 5)]
    medians = [median for _, median, _ in windows]
    assert medians[1] > 5 * max(medians[0], medians[2])
