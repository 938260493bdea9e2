from __future__ import annotations

import itertools

import pytest

from runner.schedule import query_id, run_pair, run_schedule


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        (1, "RP"),
        (2, "RPRP"),
        (4, "RPRPPRPR"),
        (8, "RPRPPRPRPRPRRPRP"),
    ],
)
def test_the_sides_alternate_within_a_block_and_every_second_block_is_mirrored(
    runs: int, expected: str
) -> None:
    order = "".join(slot.side[0].upper() for slot in run_schedule(runs))
    assert order == expected


def test_each_run_number_executes_once_per_side() -> None:
    slots = run_schedule(5)
    assert sorted((s.run, s.side) for s in slots) == sorted(
        (n, side) for n in range(5) for side in ("reference", "patched")
    )


def test_with_one_side_left_only_that_side_runs() -> None:
    assert [s.side for s in run_pair(3, ["reference"])] == ["reference"]


def test_query_id_is_the_same_on_both_sides_for_a_run() -> None:
    assert query_id("sum", 3, "run7") == "sum.3.run7"


def test_runs_go_to_the_process_sets_in_blocks_of_two_so_each_set_sees_both_orders() -> None:
    from runner.schedule import server_set

    assert [server_set(run, 2) for run in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert {server_set(run, 1) for run in range(8)} == {0}
    for process in (0, 1):
        firsts = [run_pair(run)[0].side for run in range(24) if server_set(run, 2) == process]
        assert firsts.count("reference") == firsts.count("patched") == 6


def test_one_side_runs_twice_in_a_row_only_across_a_switch_between_process_sets() -> None:
    from runner.schedule import server_set

    slots = run_schedule(24)
    edges = []
    for before, after in itertools.pairwise(slots):
        switch = server_set(before.run, 2) != server_set(after.run, 2)
        if not switch:
            assert before.side != after.side
        else:
            edges += [before.side, after.side]
    # Around the switches, the runs just before and just after are each side's equally often.
    assert edges.count("reference") == edges.count("patched") > 0


def test_each_set_is_started_and_prewarmed_in_the_order_of_its_first_run() -> None:
    from runner.schedule import first_run, server_set

    for process in (0, 1, 2):
        assert server_set(first_run(process), 3) == process
    assert run_pair(first_run(0))[0].side == "reference"
    assert run_pair(first_run(1))[0].side == "patched"
