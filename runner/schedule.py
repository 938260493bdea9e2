"""The order of measured runs. Even runs start with the reference, odd ones with the patched
server (R P P R R P P R ...), so an advantage of either position in a pair falls on both sides
equally. Process sets take runs in blocks of two (0-1 on set 0, 2-3 on set 1, ...), so every set
sees both orders equally often and compare/verdict.py can demand a change on every set."""

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
