"""The paired method (compare/blocked.py, blocked.sql): its null distribution and interval
against brute-force enumeration, chDB against numpy, the properties that keep the printed
numbers consistent, and its behaviour on simulated runs. No servers."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
import pytest

from compare.blocked import (
    ALPHA,
    MARGIN_LOG,
    Blocked,
    blocked_stats,
    critical_rank,
    null_cdf,
    null_counts,
    process_diffs,
    smallest_p_value,
    structure_of,
)
from compare.blocked import test_size as size_of_the_test
from compare.engine import SqlEngine
from compare.paired import PAIRED, POOLED
from compare.randomization import Samples
from compare.statistics import QueryStatistics, interim_paired
from compare.verdict import QueryEvidence, Thresholds, Verdict, classify

Pairs = list[tuple[float, float]]


@pytest.fixture(scope="module")
def engine() -> Iterator[SqlEngine]:
    with SqlEngine() as e:
        yield e


def arrangements(pairs: Pairs) -> Iterator[Pairs]:
    """Every relabelling of the runs within each block of two pairs (6 a block, 2 for a
    block of one pair), as pairs again: the null hypothesis's equally likely outcomes."""
    blocks = [pairs[i : i + 2] for i in range(0, len(pairs), 2)]
    choices = []
    for block in blocks:
        runs = [v for pair in block for v in pair]  # r1, p1, r2, p2
        options = []
        for patched in itertools.combinations(range(len(runs)), len(block)):
            reference = [runs[i] for i in range(len(runs)) if i not in patched]
            options.append(list(zip(reference, [runs[i] for i in patched], strict=True)))
        choices.append(options)
    for combo in itertools.product(*choices):
        yield [pair for block in combo for pair in block]


def w_of(pairs: Pairs) -> float:
    from compare.blocked import cross_differences

    cross = cross_differences(pairs)
    return float(np.count_nonzero(cross > 0) + 0.5 * np.count_nonzero(cross == 0))


def shifted(pairs: Pairs, delta: float) -> Pairs:
    """The patched runs moved by -delta on the log scale."""
    return [(r, p * math.exp(-delta)) for r, p in pairs]


def random_pairs(rng: np.random.Generator, n: int, change: float, noise: float) -> Pairs:
    reference = rng.lognormal(-2.3, noise, n)
    patched = reference * (1 + change) * np.exp(rng.normal(0, noise, n))
    return list(zip(reference.tolist(), patched.tolist(), strict=True))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])
@pytest.mark.parametrize("change", [0.05, -0.05, 0.005])
def test_the_null_distribution_and_p_value_match_enumerating_every_arrangement(
    n: int, change: float
) -> None:
    """The p-value against the margin is the test against no change of the pairs moved by
    the margin towards D's side, one tail (D's) doubled: enumerated by relabelling them."""
    rng = np.random.default_rng(n)
    pairs = random_pairs(rng, n, change, 0.05)
    found = blocked_stats(pairs)
    edge = MARGIN_LOG if found.diff_log >= 0 else -MARGIN_LOG
    moved = shifted(pairs, edge)
    ws = [w_of(a) for a in arrangements(moved)]
    counts = null_counts(structure_of(n))
    assert sum(counts) == len(ws)
    assert [ws.count(float(w)) for w in range(len(counts))] == list(counts)
    observed = w_of(moved)
    tail = [w >= observed if edge > 0 else w <= observed for w in ws]
    assert found.p_value == pytest.approx(min(1.0, 2 * sum(tail) / len(ws)))
    unmargined = blocked_stats(pairs, margin_log=0.0).p_value
    observed = w_of(pairs)
    ws = [w_of(a) for a in arrangements(pairs)]
    extreme = min(sum(w <= observed for w in ws), sum(w >= observed for w in ws))
    assert unmargined == pytest.approx(min(1.0, 2 * extreme / len(ws)))
    assert found.p_value >= unmargined  # the margin only makes the test stricter


@pytest.mark.parametrize("n", [6, 7, 9, 12])
def test_the_interval_is_every_shift_the_test_does_not_reject(n: int) -> None:
    """Inverting the test: shifting the patched logs by delta, the test at level ALPHA
    accepts exactly the deltas inside [ci_low, ci_high]."""
    rng = np.random.default_rng(100 + n)
    pairs = random_pairs(rng, n, 0.1, 0.04)
    found = blocked_stats(pairs)
    for delta in np.linspace(found.ci_low_log - 0.05, found.ci_high_log + 0.05, 41):
        rejected = blocked_stats(shifted(pairs, delta), margin_log=0.0).p_value <= ALPHA
        inside = found.ci_low_log < delta < found.ci_high_log
        if abs(delta - found.ci_low_log) > 1e-9 and abs(delta - found.ci_high_log) > 1e-9:
            assert rejected is not inside, (delta, found)


def test_the_smallest_p_value_at_7_runs_a_side_is_below_the_level() -> None:
    assert smallest_p_value(structure_of(7)) == pytest.approx(2 / 432)
    assert smallest_p_value(structure_of(7)) < ALPHA
    assert critical_rank(structure_of(5)) == 0  # 72 arrangements: 2/72 > 1%
    assert critical_rank(structure_of(6)) >= 1


CASES = {
    "noise": (0.0, 0.05),
    "change": (0.15, 0.05),
    "speedup": (-0.3, 0.05),
    "small": (0.02, 0.01),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_printed_numbers_agree_with_each_other(case: str) -> None:
    """D inside its interval; |D| >= T exactly when the interval excludes 0, on the printed
    scale too; significant exactly when the interval lies beyond the margin, which implies
    |D| >= T and p <= ALPHA; T and D of one query share their scale."""
    change, noise = CASES[case]
    rng = np.random.default_rng(hash(case) % 2**32)
    for _ in range(300):
        n = int(rng.integers(6, 30))
        found = blocked_stats(random_pairs(rng, n, change, noise))
        assert found.ci_low_log <= found.diff_log <= found.ci_high_log
        beyond = abs(found.diff_log) > found.threshold_log
        assert beyond == (abs(found.diff) > found.threshold) or math.isclose(
            abs(found.diff), found.threshold
        )
        near_end = abs(found.diff_log) - found.threshold_log  # signed by D's side
        assert found.significant == (near_end > MARGIN_LOG)
        assert found.significant == (found.p_value <= ALPHA)
        if found.significant:
            assert beyond
            assert math.copysign(1, found.diff) == math.copysign(1, found.ci_low_log)
        low, high = math.expm1(found.ci_low_log), math.expm1(found.ci_high_log)
        assert low <= found.diff <= high


def test_ties_equal_times_and_complete_separation() -> None:
    equal = blocked_stats([(0.1, 0.1)] * 9)
    assert (equal.diff_log, equal.ci_low_log, equal.ci_high_log) == (0.0, 0.0, 0.0)
    assert not equal.significant and equal.p_value == 1.0 and equal.threshold == 0.0
    separated = blocked_stats([(0.1, 0.25)] * 7)  # every run 2.5x slower
    assert separated.significant and separated.p_value == pytest.approx(2 / 432)
    assert separated.diff == pytest.approx(1.5)
    faster = blocked_stats(
        [(0.084, 0.035), (0.100, 0.036), (0.090, 0.037), (0.088, 0.035), (0.095, 0.036),
         (0.092, 0.037), (0.086, 0.035)]
    )  # fmt: skip
    assert faster.significant and faster.diff < -0.55
    assert abs(faster.diff) > faster.threshold  # printed on the speedup's own scale


def test_chdb_gives_exactly_the_numpy_statistics(engine: SqlEngine) -> None:
    rng = np.random.default_rng(3)
    series = {}
    for i in range(200):
        n = int(rng.integers(1, 31))
        pairs = random_pairs(rng, n, float(rng.choice([0, 0.05, -0.2])), 0.05)
        if i % 9 == 0:
            pairs = [(0.1, 0.1)] * n  # ties everywhere
        if i % 13 == 0:
            pairs = [(0.1, 0.2)] * n  # complete separation
        series[i] = (pairs, [(k // 2) % 2 for k in range(n)])
    found = Blocked(engine).statistics(series)
    assert set(found) == set(series)
    for key, (pairs, processes) in series.items():
        assert found[key].stats == blocked_stats(pairs), key
        assert found[key].process_diffs == pytest.approx(process_diffs(pairs, processes))


def regime_runs(rng: np.random.Generator, n: int, change: float) -> Samples:
    """ABBA pairs under regime noise: the machine switches between a fast and a 1.4x slower
    regime for stretches of runs, shared by both servers; 2% noise per run."""
    regime = np.repeat(rng.choice([1.0, 1.4], size=n // 5 + 1), 5)[:n]
    reference = 0.1 * regime * np.exp(0.02 * rng.standard_normal(n))
    patched = 0.1 * (1 + change) * regime * np.exp(0.02 * rng.standard_normal(n))
    ref, pat = tuple(reference.tolist()), tuple(patched.tolist())
    return Samples(ref, pat, tuple(zip(ref, pat, strict=True)))


def verdicts(
    engine: SqlEngine, method: str, change: float, queries: int = 200, runs: int = 15
) -> list[Verdict]:
    rng = np.random.default_rng(11)
    series = {i: regime_runs(rng, runs, change) for i in range(queries)}
    stats = QueryStatistics(engine, method).statistics(series)
    return [
        classify(
            QueryEvidence("sim", i, "", None, runs_reference=runs, runs_patched=runs, stats=s),
            Thresholds(),
        ).verdict
        for i, s in stats.items()
    ]


def test_shared_regime_shifts_make_pooled_queries_unstable_but_not_paired_ones(
    engine: SqlEngine,
) -> None:
    pooled = verdicts(engine, POOLED, 0.0)
    paired = verdicts(engine, PAIRED, 0.0)
    assert pooled.count(Verdict.UNSTABLE) >= 100  # T reflects the 40% regime gap
    assert paired.count(Verdict.UNSTABLE) <= 4
    assert paired.count(Verdict.FASTER) + paired.count(Verdict.SLOWER) <= 2  # ~1% at most
    assert paired.count(Verdict.UNCHANGED) >= 194


def test_a_10_percent_slowdown_under_regime_shifts_is_found_by_the_paired_method(
    engine: SqlEngine,
) -> None:
    paired = verdicts(engine, PAIRED, 0.10)
    assert paired.count(Verdict.SLOWER) >= 0.9 * len(paired)
    assert paired.count(Verdict.FASTER) == 0


def test_at_7_runs_a_side_a_10_percent_change_every_pair_shows_is_called(
    engine: SqlEngine,
) -> None:
    """ClickHouse's run count: 2% noise a run and a slow drift of the machine over the runs,
    shared by both sides. Every block then orders both patched runs above both reference
    runs, the one arrangement in 216 (x 2 for the last pair) the 1% level allows."""
    rng = np.random.default_rng(21)
    for change in (0.10, -0.10, 0.0):
        series = {}
        for i in range(100):
            drift = np.linspace(1.0, float(rng.uniform(0.9, 1.1)), 14)
            times = 0.1 * drift * np.exp(0.02 * rng.standard_normal(14))
            order = [0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0]  # R P, P R, P R, R P, ...
            ref = tuple(float(t) for t, o in zip(times, order, strict=True) if o == 0)
            pat = tuple(
                float(t) * (1 + change) for t, o in zip(times, order, strict=True) if o == 1
            )
            series[i] = Samples(ref, pat, tuple(zip(ref, pat, strict=True)))
        stats = QueryStatistics(engine, PAIRED).statistics(series)
        found = [
            classify(
                QueryEvidence("sim", i, "", None, runs_reference=7, runs_patched=7, stats=s),
                Thresholds(),
            ).verdict
            for i, s in stats.items()
        ]
        if change == 0.0:
            assert found.count(Verdict.SLOWER) + found.count(Verdict.FASTER) <= 2
        else:
            expected = Verdict.SLOWER if change > 0 else Verdict.FASTER
            assert found.count(expected) >= 90, found


def test_too_few_pairs_are_inconclusive_never_unstable(engine: SqlEngine) -> None:
    runs = (0.1, 0.1, 0.1, 0.1, 0.1)
    slower = tuple(v * 2 for v in runs)
    stats = QueryStatistics(engine, PAIRED).statistics(
        {0: Samples(runs, slower, tuple(zip(runs, slower, strict=True)))}
    )[0]
    assert not stats.decidable and stats.threshold is None
    verdict = classify(
        QueryEvidence("t", 0, "q", None, runs_reference=5, runs_patched=5, stats=stats),
        Thresholds(),
    )
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert "too few runs" in verdict.reason


def test_the_paired_method_needs_pairs_and_falls_back_to_pooled_without_them(
    engine: SqlEngine,
) -> None:
    runs = tuple(float(v) for v in np.linspace(0.1, 0.11, 9))
    stats = QueryStatistics(engine, PAIRED).statistics(
        {
            "pairs": Samples(runs, runs, tuple(zip(runs, runs, strict=True))),
            "none": Samples(runs, runs),
        }
    )
    assert stats["pairs"].method == PAIRED and stats["pairs"].pairs == 9
    assert stats["pairs"].diff == 0.0 and not stats["pairs"].significant
    assert stats["none"].method == POOLED and stats["none"].pairs == 0


def test_the_stop_rules_look_gives_compares_numbers(engine: SqlEngine) -> None:
    rng = np.random.default_rng(9)
    for _ in range(20):
        samples = regime_runs(rng, int(rng.integers(3, 20)), 0.1)
        assert interim_paired(samples) == QueryStatistics(engine).statistics({0: samples})[0]


def test_a_process_offset_shows_in_the_per_process_d_not_in_the_statistics(
    engine: SqlEngine,
) -> None:
    """Runs alternate between two process sets in blocks of two; the second set's patched
    server is 8% slower: the overall D is between, each set's own D shows it."""
    rng = np.random.default_rng(5)
    processes = tuple((run // 2) % 2 for run in range(24))
    pairs = tuple(
        (a, a * (1.08 if process else 1.0) * float(np.exp(rng.normal(0, 0.01))))
        for a, process in zip(rng.lognormal(-2, 0.1, 24).tolist(), processes, strict=True)
    )
    samples = Samples(tuple(r for r, _ in pairs), tuple(p for _, p in pairs), pairs, processes)
    found = QueryStatistics(engine).statistics({0: samples})[0]
    first, second = found.process_diffs
    assert abs(first) < 0.01 and second == pytest.approx(0.08, abs=0.01)
    assert 0.0 < (found.diff or 0) < 0.08
    verdict = classify(
        QueryEvidence("t", 0, "q", None, runs_reference=24, runs_patched=24, stats=found),
        Thresholds(min_effect=0.03),
    )
    assert verdict.verdict is not Verdict.SLOWER
    single = QueryStatistics(engine).statistics(
        {0: Samples(samples.reference, samples.patched, pairs)}
    )
    assert single[0].process_diffs == ()


def test_at_six_pairs_both_process_sets_have_their_own_d_and_one_set_alone_is_no_change(
    engine: SqlEngine,
) -> None:
    """6 pairs (the adaptive mode's first look) give the two sets 4 and 2 pairs: the set with
    one block still gets its own D, so a patched server 30% slower on the first set and 4.5%
    on the second is not called slower although the overall interval lies beyond the margin."""
    processes = tuple((run // 2) % 2 for run in range(6))
    base = (0.100, 0.101, 0.099, 0.1005, 0.102, 0.0995)
    pairs = tuple(
        (r, r * (1.30 if process == 0 else 1.045) * (1.001 if run % 2 else 0.999))
        for run, (r, process) in enumerate(zip(base, processes, strict=True))
    )
    samples = Samples(tuple(r for r, _ in pairs), tuple(p for _, p in pairs), pairs, processes)
    found = QueryStatistics(engine).statistics({0: samples})[0]
    assert found.pairs == 6 and found.decidable and found.significant
    first, second = found.process_diffs
    assert first == pytest.approx(0.30, abs=0.01) and second == pytest.approx(0.045, abs=0.01)
    verdict = classify(
        QueryEvidence("t", 0, "q", None, runs_reference=6, runs_patched=6, stats=found),
        Thresholds(),
    )
    assert verdict.verdict is not Verdict.SLOWER, verdict.reason
    assert "not on every server process" in verdict.reason
    assert interim_paired(samples) == found


@pytest.mark.parametrize("pairs", [48, 50, 61, 300, 601])
def test_the_null_distribution_stays_exact_past_int64_for_long_runs(pairs: int) -> None:
    """6^25 arrangements exceed int64: the counts, the test's size and the interval of a run of
    hundreds of pairs must still be right."""
    structure = structure_of(pairs)
    counts = null_counts(structure)
    assert sum(counts) == 6**structure.full * 2**structure.half
    assert all(c > 0 for c in counts)
    assert 0.004 < size_of_the_test(structure) <= ALPHA  # at most the level, and not far below it
    cdf = null_cdf(structure)
    assert cdf[-1] == 1.0 and all(a <= b for a, b in itertools.pairwise(cdf))
    noise = np.random.default_rng(pairs).normal(0.0, 0.05, size=(pairs, 2))
    shifted = [(math.exp(r), 1.1 * math.exp(p)) for r, p in noise]
    found = blocked_stats(shifted)
    assert found.significant and found.ci_low_log < math.log(1.1) < found.ci_high_log
    assert found.ci_high_log - found.ci_low_log < 0.1  # narrows with the pairs, not garbage
