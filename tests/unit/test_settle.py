"""The pure parts of runner/settle.py; the integration test in test_runner_integration.py
runs a setup whose OPTIMIZE meets running merges on real servers."""

from __future__ import annotations

from typing import Any

from runner.settle import is_optimize, layout_differences, wait_for_merges


class Merges:
    """A control client whose system.merges holds `counts[i]` merges at the i-th look."""

    def __init__(self, counts: list[int]) -> None:
        self.counts = counts
        self.looks = 0

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> list[tuple[int]]:
        assert "system.merges" in sql
        count = self.counts[min(self.looks, len(self.counts) - 1)]
        self.looks += 1
        return [(count,)]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_optimize_statements_are_recognised_in_any_case_and_indentation() -> None:
    assert is_optimize("OPTIMIZE TABLE t FINAL")
    assert is_optimize("\n   optimize table t")
    assert not is_optimize("INSERT INTO optimize_log SELECT 1")
    assert not is_optimize("SELECT 'OPTIMIZE TABLE t'")


def test_waiting_ends_when_the_server_has_no_merge_running() -> None:
    control, clock = Merges([2, 1, 1, 0, 3]), Clock()
    assert wait_for_merges(control, 10.0, clock, clock.sleep)  # type: ignore[arg-type]
    assert control.looks == 4
    assert abs(clock.now - 0.6) < 1e-9


def test_waiting_gives_up_after_the_timeout() -> None:
    control, clock = Merges([1]), Clock()
    assert not wait_for_merges(control, 2.0, clock, clock.sleep)  # type: ignore[arg-type]
    assert 2.0 <= clock.now < 2.3


def test_tables_whose_part_counts_differ_between_servers_are_named() -> None:
    parts = {
        "reference": {"a": 1, "b": 5, "c": 2},
        "patched": {"a": 1, "b": 1, "c": 2},
        "reference #2": {"a": 1, "b": 5},
    }
    assert layout_differences(parts) == [
        "table b has different numbers of active parts: reference 5, patched 1, reference #2 5",
        "table c has different numbers of active parts: reference 2, patched 2, reference #2 0",
    ]
    assert layout_differences({"reference": {"a": 3}, "patched": {"a": 3}}) == []
