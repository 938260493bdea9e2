"""bench/between_runs.py: a difference between runs that every process set of one run shares."""

from __future__ import annotations

from bench.between_runs import every_set_apart


def test_every_set_beyond_the_other_runs_change_on_the_same_side_counts() -> None:
    assert every_set_apart(0.01, [0.08, 0.07], 0.05)
    assert every_set_apart(0.01, [-0.05, -0.10], 0.05)


def test_sets_that_disagree_or_stay_close_do_not_count() -> None:
    assert not every_set_apart(0.01, [0.08, -0.06], 0.05)  # opposite sides
    assert not every_set_apart(0.01, [0.08, 0.05], 0.05)  # one only 4 points away
    assert not every_set_apart(0.01, [0.20], 0.05)  # one set says nothing about sets agreeing
