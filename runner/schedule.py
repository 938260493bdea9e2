"""The order of measured runs. Pairs follow R P, P R, P R, R P (ABBA, then its mirror BAAB),
so an advantage of either position in a pair falls on both sides equally, and so does whatever
happens around a switch between process sets. Process sets take runs in blocks of two (0-1 on
set 0, 2-3 on set 1, ...): every set sees both orders in every block, and compare/verdict.py
can demand a change on every set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from artifacts.tables import PATCHED, REFERENCE


@dataclass(frozen=True)
class Slot:
    run: int
    side: str


def reference_first(run: int) -> bool:
    """Runs 0 and 3 of every four start with the reference. With plain ABBA (R P P R R P P R)
    every block of two pairs starts and ends with the reference, so a disturbance at the switch
    to the next process set (a server that sat idle, the other set's leftovers) would always
    fall on the reference's runs: an A/A drifted to "patched faster". Mirroring every second
    block alternates the side on either edge of a switch (docs/method.md "Run order")."""
    return run % 4 in (0, 3)


def abba_pair(run: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    """The executions of run `run` in order; with one side left, just that side."""
    ordered = list(sides) if reference_first(run) else list(reversed(sides))
    return tuple(Slot(run, side) for side in ordered)


def abba_schedule(runs: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    return tuple(slot for run in range(runs) for slot in abba_pair(run, sides))


def server_set(run: int, sets: int) -> int:
    """The process set (0 .. sets - 1) that executes run `run` on both sides."""
    return (run // 2) % max(sets, 1)


def first_run(process_set: int) -> int:
    """The first measured run of a query on process set `process_set`."""
    return 2 * process_set


def query_id(test: str, query_index: int, label: str) -> str:
    """The same id on both servers for the same run: `<test>.<query_index>.<label>`."""
    return f"{test}.{query_index}.{label}"


def run_label(run: int) -> str:
    return f"run{run}"


PREWARM_LABEL = "prewarm"
