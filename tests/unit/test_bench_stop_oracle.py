"""bench/stop_oracle.py: the least time a stop rule could spend, knowing the future."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from bench.stop_oracle import Need, least_time, needs
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
