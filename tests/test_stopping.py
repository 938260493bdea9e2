from __future__ import annotations

import pytest

from compare.randomization import SeriesStats
from runner.stopping import StopRule, should_stop

RULE = StopRule(min_runs=7, max_runs=25, target=0.05, min_effect=0.05, budget_seconds=30)
FDR_RULE = StopRule(min_runs=7, max_runs=25, target=0.05, min_effect=0.05, fdr_q=0.05, queries=100)


def stats(diff: float, threshold: float, p_value: float = 0.5) -> SeriesStats:
    return SeriesStats(
        runs_reference=9, runs_patched=9, reference_median=0.1, patched_median=0.1 * (1 + diff),
        diff=diff, threshold=threshold, threshold_abs=0.1 * threshold, p_value=p_value, exact=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("runs", "spent", "series", "stop", "why"),
    [
        (6, 1.0, stats(0.0, 0.01), False, "fewer than 7 runs"),
        (25, 1.0, stats(0.06, 0.2), True, "reached 25 runs"),
        (10, 31.0, stats(0.06, 0.2), True, "time budget"),
        (8, 1.0, None, False, "no statistics"),
        (8, 1.0, stats(0.0, 0.08), False, "above the target"),
        (8, 1.0, stats(0.01, 0.04), True, "settled"),
        (8, 1.0, stats(0.06, 0.04), False, "within T/2 of the minimum effect"),
        (8, 1.0, stats(-0.20, 0.04), True, "settled"),
    ],
)
def test_stop_rule_spends_runs_only_where_the_verdict_is_open(
    runs: int, spent: float, series: SeriesStats | None, stop: bool, why: str
) -> None:
    decision = should_stop(RULE, runs, spent, series)
    assert decision.stop is stop
    assert why in decision.reason


def test_a_query_that_looks_changed_runs_on_until_its_p_value_is_a_sure_discovery() -> None:
    # m = 100 queries, q = 0.05: the first discovery needs p <= 0.0005.
    waiting = should_stop(FDR_RULE, 9, 1.0, stats(0.2, 0.04, p_value=0.0029))
    assert not waiting.stop and "discovery level" in waiting.reason
    done = should_stop(FDR_RULE, 13, 1.0, stats(0.2, 0.03, p_value=0.00018))
    assert done.stop and done.discovery


def test_earlier_discoveries_raise_the_level_for_later_ones() -> None:
    # After 5 discoveries the level is 6 * 0.05 / 100 = 0.003.
    decision = should_stop(FDR_RULE, 9, 1.0, stats(0.2, 0.04, p_value=0.0029), discoveries=5)
    assert decision.stop and decision.discovery


def test_a_clearly_unchanged_query_is_not_held_back_by_false_discovery_control() -> None:
    decision = should_stop(FDR_RULE, 7, 1.0, stats(0.0, 0.03, p_value=0.9))
    assert decision.stop and not decision.discovery


def test_statistics_are_computed_every_second_run_from_the_minimum() -> None:
    from runner.stopping import is_checkpoint

    assert [n for n in range(1, 14) if is_checkpoint(RULE, n)] == [7, 9, 11, 13]
