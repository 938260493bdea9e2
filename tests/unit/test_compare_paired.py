"""The paired method (compare/paired.py): its SQL against a brute-force oracle, and its
behaviour on simulated runs with slow-downs shared by both servers. No servers."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from compare.engine import SqlEngine
from compare.paired import PAIRED, POOLED, SIGN_VECTORS, Paired, smallest_p_value, trim_count
from compare.randomization import Samples
from compare.statistics import QueryStatistics
from compare.verdict import QueryEvidence, Thresholds, Verdict, classify


@pytest.fixture(scope="module")
def engine() -> Iterator[SqlEngine]:
    with SqlEngine() as e:
        yield e


def flip_statistics(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|trimmed mean| and |mean| of s * r for every sign vector s, in numpy."""
    n, k = len(r), trim_count(len(r))
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    flipped = signs * r
    return np.abs(np.sort(flipped, axis=1)[:, k : n - k].mean(axis=1)), np.abs(flipped.mean(1))


def at_least_as_extreme(d: np.ndarray, e: np.ndarray, d0: float, e0: float) -> np.ndarray:
    """paired.sql's order: by |trimmed mean|, ties (relative 1e-9) broken by |mean|."""
    tied = (d >= d0 * (1 - 1e-9)) & (d <= d0 * (1 + 1e-9))
    return (d > d0 * (1 + 1e-9)) | (tied & (e >= e0 * (1 - 1e-9)))


def oracle(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """(statistic, threshold, p-value) by enumerating every sign vector in numpy."""
    r = np.log(np.array([p for _, p in pairs]) / np.array([x for x, _ in pairs]))
    n, k = len(r), trim_count(len(r))
    d, e = flip_statistics(r)
    threshold = float(np.sort(d)[int(np.ceil(0.99 * len(d) - 1e-9)) - 1])
    observed = float(np.sort(r)[k : n - k].mean())
    extreme = at_least_as_extreme(d, e, abs(observed), abs(float(r.mean())))
    return observed, threshold, float(np.mean(extreme))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 11, 13])
def test_exact_statistics_match_a_brute_force_enumeration(engine: SqlEngine, n: int) -> None:
    rng = np.random.default_rng(n)
    pairs = [
        (float(a), float(a * np.exp(rng.normal(0.03, 0.05)))) for a in rng.lognormal(0, 0.2, n)
    ]
    found = Paired(engine).statistics({0: pairs})[0]
    observed, threshold, p_value = oracle(pairs)
    assert found.exact
    assert found.pairs == n
    assert np.log1p(found.diff) == pytest.approx(observed, abs=1e-12)
    assert found.threshold_log == pytest.approx(threshold, abs=1e-12)
    assert found.p_value == pytest.approx(p_value, abs=1e-12)
    level_ok = p_value <= 0.01 + 1e-12
    assert found.significant == (abs(observed) >= threshold * (1 - 1e-9) and level_ok)
    assert found.ci_low <= np.exp(observed) <= found.ci_high


def test_sampled_statistics_are_seeded_and_close_to_the_truth(engine: SqlEngine) -> None:
    rng = np.random.default_rng(7)
    pairs = [
        (float(a), float(a * 1.1 * np.exp(rng.normal(0, 0.03)))) for a in rng.lognormal(0, 0.2, 25)
    ]
    first = Paired(engine).statistics({0: pairs})[0]
    second = Paired(engine).statistics({"again": pairs})["again"]
    assert not first.exact
    assert first == second
    assert first.diff == pytest.approx(0.1, abs=0.02)
    assert first.significant
    # every pair slower: complete separation, whose p-value is exact, not sampled
    assert first.p_value == pytest.approx(2 / 2**25, rel=1e-12)
    # one pair reversed: sampled, and no sampled vector reaches the observed statistic
    mixed = [*pairs[:-1], (pairs[-1][1], pairs[-1][0])]
    assert Paired(engine).statistics({0: mixed})[0].p_value == pytest.approx(1 / 10_001)


def regime_runs(rng: np.random.Generator, n: int, change: float) -> Samples:
    """ABBA pairs under regime noise: the machine switches between a fast and a 1.4x slower
    regime for stretches of runs, shared by both servers; 2% noise per run."""
    regime = np.repeat(rng.choice([1.0, 1.4], size=n // 5 + 1), 5)[:n]
    reference = 0.1 * regime * np.exp(0.02 * rng.standard_normal(n))
    patched = 0.1 * (1 + change) * regime * np.exp(0.02 * rng.standard_normal(n))
    ref, pat = tuple(reference.tolist()), tuple(patched.tolist())
    return Samples(ref, pat, tuple(zip(ref, pat, strict=True)))


def verdicts(engine: SqlEngine, method: str, change: float, queries: int = 200) -> list[Verdict]:
    rng = np.random.default_rng(11)
    series = {i: regime_runs(rng, 15, change) for i in range(queries)}
    stats = QueryStatistics(engine, method).statistics(series)
    return [
        classify(
            QueryEvidence("sim", i, "", None, runs_reference=15, runs_patched=15, stats=s),
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
    assert paired.count(Verdict.UNSTABLE) == 0
    assert paired.count(Verdict.FASTER) + paired.count(Verdict.SLOWER) <= 2  # ~1% at most
    assert paired.count(Verdict.UNCHANGED) >= 198


def test_a_10_percent_slowdown_under_regime_shifts_is_found_by_the_paired_method(
    engine: SqlEngine,
) -> None:
    paired = verdicts(engine, PAIRED, 0.10)
    assert paired.count(Verdict.SLOWER) == len(paired)


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
    assert stats["pairs"].diff == 0.0 and stats["pairs"].threshold == 0.0
    assert stats["none"].method == POOLED and stats["none"].pairs == 0


@pytest.mark.parametrize("n", [7, 8, 9, 10, 11, 13])
def test_the_mean_breaks_the_ties_of_the_trimmed_pairs(engine: SqlEngine, n: int) -> None:
    """Every pair slower, no two alike: flipping any of the floor(n/4) smallest pairs leaves
    the trimmed mean as it is (2^(k+1) of 2^n vectors tie with the observed one) but lowers
    the mean, so only the observed signs and their mirror are as extreme: the floor is
    2 / 2^n, and 8 pairs are the fewest that can reach p <= 0.01 (docs/method.md)."""
    pairs = [(1.0, 1.1 + 0.01 * i) for i in range(n)]
    r = np.log(np.array([p for _, p in pairs]))
    d, _ = flip_statistics(r)
    assert int(np.sum(d >= d.max() * (1 - 1e-9))) == 2 ** (trim_count(n) + 1)
    found = Paired(engine).statistics({0: pairs})[0]
    assert found.p_value == pytest.approx(2 / 2**n)
    assert found.p_value == pytest.approx(smallest_p_value(n))
    assert found.significant == (n >= 8)


def test_complete_separation_is_exactly_2_of_2_to_the_n_where_vectors_are_sampled(
    engine: SqlEngine,
) -> None:
    """14 pairs (16,384 sign vectors > SIGN_VECTORS: sampled), every pair slower: a numpy
    enumeration of all vectors in paired.sql's order finds exactly 2 as extreme as the
    observed signs, which is the p-value paired.sql gives without sampling."""
    rng = np.random.default_rng(14)
    pairs = [(1.0, float(np.exp(x))) for x in rng.uniform(0.01, 0.3, 14)]
    r = np.log(np.array([p for _, p in pairs]))
    d, e = flip_statistics(r)
    k = trim_count(14)
    observed = float(np.sort(r)[k : 14 - k].mean())
    assert int(np.sum(at_least_as_extreme(d, e, observed, float(r.mean())))) == 2
    found = Paired(engine).statistics({0: pairs})[0]
    assert not found.exact
    assert found.p_value == pytest.approx(2 / 2**14, rel=1e-12) == smallest_p_value(14)


@pytest.mark.parametrize("n", [15, 17, 25, 40])
def test_the_floor_is_2_of_2_to_the_n_and_other_sampled_p_values_stay_above_1_of_n(
    engine: SqlEngine, n: int
) -> None:
    """Beyond 13 pairs the sign vectors are sampled: complete separation still gets its exact
    p-value 2 / 2^n (what summary.json fdr.smallest_p_value reports), so even a lone change
    among thousands of queries can be a discovery; with one pair reversed the estimate is
    sampled and never below 1 / (SIGN_VECTORS + 1)."""
    pairs = [(1.0, 1.1 + 0.01 * i) for i in range(n)]
    found = Paired(engine).statistics({0: pairs})[0]
    assert found.p_value == pytest.approx(smallest_p_value(n), rel=1e-12)
    assert smallest_p_value(n) == pytest.approx(2 / 2**n)
    mixed = [(1.1, 1.0), *pairs[1:]]
    assert Paired(engine).statistics({0: mixed})[0].p_value >= 1 / (SIGN_VECTORS + 1)


def test_tail_shares_count_the_sign_vectors_that_reach_the_cutoff(engine: SqlEngine) -> None:
    """calibration.tsv flag_rate under the paired method, against the numpy enumeration."""
    rng = np.random.default_rng(3)
    pairs = [
        (float(a), float(a * np.exp(rng.normal(0.0, 0.04)))) for a in rng.lognormal(0, 0.2, 13)
    ]
    r = np.log(np.array([p for _, p in pairs]) / np.array([x for x, _ in pairs]))
    flips, means = flip_statistics(r)
    # flagged: at least the cutoff, and itself significant (at most 1% of vectors are at
    # least as extreme in paired.sql's order)
    reaching = np.array(
        [
            int(np.sum(at_least_as_extreme(flips, means, d0, e0)))
            for d0, e0 in zip(flips, means, strict=True)
        ]
    )
    rare = reaching / len(flips) <= 0.01
    cutoffs = {"low": 0.001, "high": float(np.log1p(0.05)), "none": 1.0}
    shares = Paired(engine).tail_shares(dict.fromkeys(cutoffs, pairs), cutoffs)
    for name, cutoff in cutoffs.items():
        assert shares[name] == pytest.approx(float(np.mean((flips >= cutoff) & rare)))
    assert shares["none"] == 0.0 and 0 < shares["low"] <= 0.01
    # 7 pairs: even the most extreme vectors, 2 of 128, are more than 1%: nothing is flagged
    assert Paired(engine).tail_shares({0: pairs[:7]}, {0: 0.0})[0] == 0.0


@pytest.mark.parametrize("n", [3, 4, 7, 12])
def test_the_numpy_trimmed_mean_is_the_d_of_paired_sql(engine: SqlEngine, n: int) -> None:
    from compare.paired import trimmed_mean_diff

    rng = np.random.default_rng(100 + n)
    pairs = [(float(a), float(a * np.exp(rng.normal(0.05, 0.1)))) for a in rng.lognormal(0, 1, n)]
    found = Paired(engine).statistics({0: pairs})[0]
    assert trimmed_mean_diff(pairs) == pytest.approx(found.diff, abs=1e-12)


def test_a_process_offset_shows_in_the_per_process_d_not_in_the_statistics(
    engine: SqlEngine,
) -> None:
    """Runs alternate between two process sets in blocks of two; the second set's patched
    server is 8% slower: the pooled D is about half that, each set's own D shows it."""
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
    assert 0.01 < (found.diff or 0) < 0.08
    verdict = classify(
        QueryEvidence("t", 0, "q", None, runs_reference=24, runs_patched=24, stats=found),
        Thresholds(min_effect=0.03),
    )
    assert verdict.verdict is Verdict.UNCHANGED
    assert "not on every server process" in verdict.reason
    single = QueryStatistics(engine).statistics(
        {0: Samples(samples.reference, samples.patched, pairs)}
    )
    assert single[0].process_diffs == ()


def test_prepared_pair_counts_are_built_once_and_not_again_on_use(engine: SqlEngine) -> None:
    """One chDB session a process: the module's engine, with pair counts no other test uses."""
    rows = "SELECT n, count() FROM paired_vectors WHERE n BETWEEN 31 AND 36 GROUP BY n ORDER BY n"
    assert engine.execute(rows, source="test") == ""
    Paired(engine).prepare(range(31, 35))
    Paired(engine).prepare([33, 34])  # another Paired on the session: nothing built twice
    built = "31\t1\n32\t1\n33\t1\n34\t1\n"
    assert engine.execute(rows, source="test") == built
    pairs = [(0.1, 0.1 * (1.05 + 0.01 * (i % 3))) for i in range(33)]
    found = Paired(engine).statistics({0: pairs, 1: pairs[:31]})
    assert engine.execute(rows, source="test") == built
    assert found[0].pairs == 33 and found[1].pairs == 31
    assert found[0].diff == pytest.approx(0.06, abs=0.01) and found[0].significant
