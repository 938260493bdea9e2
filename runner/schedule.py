"""The order of measured runs: ABBA, pure and tested (METHOD.md §1).

Run n executes once on each side with the same query_id. Even runs start with the reference
server and odd runs with the patched one, so the sequence is R P P R R P P R ...: whatever
advantage the first (or second) position in a pair carries falls on both sides equally.

With several server processes per side (`--processes`, default 2), runs go to the process
sets in blocks of two: runs 0-1 on set 0, 2-3 on set 1, 4-5 on set 0 again, ... Each set
then sees both orders (R P and P R) equally often, so the position advantage cannot differ
between the sets (compare/verdict.py requires a change on every set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from artifacts.tables import PATCHED, REFERENCE


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


def server_set(run: int, sets: int) -> int:
    """The process set (0 .. sets - 1) that executes run `run` on both sides."""
    return (run // 2) % max(sets, 1)


def query_id(test: str, query_index: int, label: str) -> str:
    """The same id on both servers for the same run: `<test>.<query_index>.<label>`."""
    return f"{test}.{query_index}.{label}"


def run_label(run: int) -> str:
    return f"run{run}"


PREWARM_LABEL = "prewarm"
