"""The order of measured runs: ABBA, pure and tested (METHOD.md §1).

Run n executes once on each side with the same query_id. Even runs start with the reference
server and odd runs with the patched one, so the sequence is R P P R R P P R ...: whatever
advantage the first (or second) position in a pair carries falls on both sides equally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chperf.artifacts import PATCHED, REFERENCE


@dataclass(frozen=True)
class Slot:
    run: int
    side: str


def abba_pair(run: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    """The executions of run `run` in order; with one side left, just that side."""
    ordered = list(sides) if run % 2 == 0 else list(reversed(sides))
    return tuple(Slot(run, side) for side in ordered)


def abba_schedule(runs: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    return tuple(slot for run in range(runs) for slot in abba_pair(run, sides))


def query_id(test: str, query_index: int, label: str) -> str:
    """The same id on both servers for the same run: `<test>.<query_index>.<label>`."""
    return f"{test}.{query_index}.{label}"


def run_label(run: int) -> str:
    return f"run{run}"


PREWARM_LABEL = "prewarm"
