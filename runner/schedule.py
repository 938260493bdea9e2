"""The order of measured runs. Within a block of two pairs the sides strictly alternate
(R P R P or its mirror P R P R), and the blocks follow R P R P, P R P R, P R P R, R P R P, so
an advantage of either position in a pair falls on both sides equally, and so does whatever
happens around a switch between process sets. Process sets take runs in blocks of two (0-1 on
set 0, 2-3 on set 1, ...): with two sets, each set sees both orders every two of its blocks,
and compare/verdict.py can demand a change on every set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from artifacts.tables import PATCHED, REFERENCE


@dataclass(frozen=True)
class Slot:
    run: int
    side: str


def reference_first(run: int) -> bool:
    """The runs of blocks 0 and 3 of every four start with the reference. No block runs one
    side twice in a row: with pairs in ABBA order (R P P R) the CPU's speed, which moves over
    a few hundred milliseconds, often moved both middle runs of a block against both outer
    ones, and all four cross pairs of the block then agreed on a change that was not there.
    Mirrored blocks put either side on either edge of a switch between process sets (a server
    that sat idle, the other set's leftovers) equally often (docs/method.md "Run order")."""
    return (run // 2) % 4 in (0, 3)


def run_pair(run: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    """The executions of run `run` in order; with one side left, just that side."""
    ordered = list(sides) if reference_first(run) else list(reversed(sides))
    return tuple(Slot(run, side) for side in ordered)


def run_schedule(runs: int, sides: Sequence[str] = (REFERENCE, PATCHED)) -> tuple[Slot, ...]:
    return tuple(slot for run in range(runs) for slot in run_pair(run, sides))


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
