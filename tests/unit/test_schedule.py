from __future__ import annotations

import pytest

from runner.schedule import abba_pair, abba_schedule, query_id


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        (1, "RP"),
        (2, "RPPR"),
        (4, "RPPRRPPR"),
    ],
)
def test_abba_schedule_alternates_which_side_goes_first(runs: int, expected: str) -> None:
    order = "".join(slot.side[0].upper() for slot in abba_schedule(runs))
    assert order == expected


def test_each_run_number_executes_once_per_side() -> None:
    slots = abba_schedule(5)
    assert sorted((s.run, s.side) for s in slots) == sorted(
        (n, side) for n in range(5) for side in ("reference", "patched")
    )


def test_with_one_side_left_only_that_side_runs() -> None:
    assert [s.side for s in abba_pair(3, ["reference"])] == ["reference"]


def test_query_id_is_the_same_on_both_sides_for_a_run() -> None:
    assert query_id("sum", 3, "run7") == "sum.3.run7"


def test_runs_go_to_the_process_sets_in_blocks_of_two_so_each_set_sees_both_orders() -> None:
    from runner.schedule import server_set

    assert [server_set(run, 2) for run in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert {server_set(run, 1) for run in range(8)} == {0}
    for process in (0, 1):
        firsts = [abba_pair(run)[0].side for run in range(24) if server_set(run, 2) == process]
        assert firsts.count("reference") == firsts.count("patched") == 6
