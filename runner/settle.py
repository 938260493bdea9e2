"""A test's setup ends in the state the test asks for, and quiet, before its first measured run.
An OPTIMIZE whose parts a background merge holds is a silent no-op, leaving each server a part
layout of its own, and merges still running take cores from the first measured runs: hence the
waits for merges, OPTIMIZE with `optimize_throw_if_noop` and the part count comparison across
servers (docs/run.md "Per test")."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from runner.control import ControlClient

# How long a server may keep merging after a test's setup before its queries run anyway (with
# a warning): agg_sum_avg's 20M rows settle in ~5-10 s on 2 cores with 4 servers merging.
SETTLE_TIMEOUT_S = 300.0
POLL_S = 0.2
# ClickHouse's CANNOT_ASSIGN_OPTIMIZE: OPTIMIZE found nothing it could merge right now.
CANNOT_ASSIGN_OPTIMIZE = 388
OPTIMIZE_ATTEMPTS = 5
THROW_IF_NOOP = "optimize_throw_if_noop"

_OPTIMIZE = re.compile(r"^\s*OPTIMIZE\b", re.IGNORECASE)


def is_optimize(sql: str) -> bool:
    return _OPTIMIZE.match(sql) is not None


def running_merges(control: ControlClient) -> int:
    return int(control.execute("SELECT count() FROM system.merges")[0][0])


def wait_for_merges(
    control: ControlClient,
    timeout: float = SETTLE_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Whether the server had no merge running within `timeout` seconds."""
    deadline = clock() + timeout
    while running_merges(control) > 0:
        if clock() >= deadline:
            return False
        sleep(POLL_S)
    return True


def active_parts(control: ControlClient) -> dict[str, int]:
    """Active parts per table of the current database (the tests' tables)."""
    rows = control.execute(
        "SELECT table, toUInt64(count()) FROM system.parts "
        "WHERE active AND database = currentDatabase() GROUP BY table"
    )
    return {str(table): int(count) for table, count in rows}


@dataclass(frozen=True)
class Settled:
    merges_done: bool  # False: still merging after SETTLE_TIMEOUT_S
    parts: dict[str, int]


def settle(control: ControlClient, timeout: float = SETTLE_TIMEOUT_S) -> Settled:
    done = wait_for_merges(control, timeout)
    return Settled(done, active_parts(control))


def layout_differences(parts_by_server: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One line per table whose active part count differs between servers."""
    tables = sorted({t for parts in parts_by_server.values() for t in parts})
    lines = []
    for table in tables:
        counts = {server: parts.get(table, 0) for server, parts in parts_by_server.items()}
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{server} {n}" for server, n in counts.items())
            lines.append(f"table {table} has different numbers of active parts: {shown}")
    return lines
