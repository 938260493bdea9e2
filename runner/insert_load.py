"""The target table of an insert load test, between blocks (docs/load.md, "Insert tests").

Before each block the table is truncated on the server about to run it, so both sides insert
into the same empty table. After the block, what it wrote is read from `system.parts` (active
parts: merges move rows between parts, never add or drop any), and then chperf waits until the
server runs no merge of that table: a merge that starts during a block shares the CPU with the
inserts and is part of the measurement, as in production; one still running when the block
ends is waited for, unmeasured, so the next block (on either server) never shares the machine
with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from runner.control import ControlClient

# Background merges of a block's parts finish in seconds; past this the block's rows are
# still counted and the next block starts (the wait is a warning, not a failure).
MERGE_WAIT_S = 60.0
MERGE_POLL_S = 0.05


@dataclass(frozen=True)
class Written:
    rows: int
    bytes: int


def bytes_column(control: ControlClient) -> str:
    """system.parts' uncompressed size column where the server has it, else the stored size:
    probed, not assumed from a version."""
    names = {
        str(row[0])
        for row in control.execute(
            "SELECT name FROM system.columns WHERE database = 'system' AND table = 'parts'"
        )
    }
    for name in ("data_uncompressed_bytes", "bytes_on_disk", "bytes"):
        if name in names:
            return name
    return ""


def reset(control: ControlClient, table: str) -> None:
    control.execute(f"TRUNCATE TABLE {table}")  # `table` is an identifier (runner/loaddef.py)


def written(control: ControlClient, table: str, size_column: str) -> Written:
    size = f"sum({size_column})" if size_column else "0"
    rows = control.execute(
        f"SELECT sum(rows), {size} FROM system.parts "
        "WHERE active AND database = currentDatabase() AND table = %(table)s",
        {"table": table},
    )
    return Written(int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else Written(0, 0)


def wait_for_merges(control: ControlClient, table: str, timeout: float = MERGE_WAIT_S) -> bool:
    """True once the server merges nothing of `table`; False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        running = control.execute(
            "SELECT count() FROM system.merges "
            "WHERE database = currentDatabase() AND table = %(table)s",
            {"table": table},
        )
        if not running or int(running[0][0]) == 0:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(MERGE_POLL_S)
