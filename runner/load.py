"""Load mode (docs/load.md): a test's queries as a mix that N concurrent clients run, level by
level, in blocks that alternate between the servers as runs do (R P, P R, P R, R P, ...), so
that the pairs of blocks are compare/blocked.py's pairs of runs. One row per block goes to
load_blocks.tsv; compare/load.py turns them into verdicts per (test, concurrency).

The pairs of blocks go to the server process sets as runs do, two pairs at a time
(runner/schedule.py): a process of a server can be 20-50% slower at inserts than another
process of the same binary for its whole life, and with one set such an offset is a "change"
that no patch made. compare/load.py demands the change on every set, as for queries.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from artifacts.console import console_text
from artifacts.loadblocks import LoadBlockRow
from artifacts.tables import WHOLE_TEST
from artifacts.tsv import TableWriter
from compare.load import STOPPED_PREFIX
from runner.budget import Clock
from runner.control import ControlClient
from runner.insert_load import Written as WrittenRows
from runner.insert_load import bytes_column, reset, wait_for_merges, written
from runner.loadclients import BlockMeasure, ClientPool, percentile, run_block
from runner.loaddef import LoadSpec
from runner.measure import Measurer
from runner.progress import Progress
from runner.schedule import run_pair, server_set
from runner.servers import ServerPair, Side
from runner.settle import SETTLE_TIMEOUT_S
from runner.statements import settle_all
from runner.testdef import TestDef

# (side, what happened, the failure, process set) -> restart that server and record it
# (Measurer.recover).
Recover = Callable[[str, str, str, int], None]
Note = Callable[[str], None]  # a warning for stderr and run.json


@dataclass(frozen=True)
class Slot:
    pair: int
    side: str
    process: int = 0  # the server process set that runs the block


def block_order(blocks: int, sides: Sequence[str], sets: int = 1) -> tuple[Slot, ...]:
    """The blocks of one level in run order: pair i in the order of run i, on the process set
    of run i (runner/schedule.py)."""
    return tuple(
        Slot(pair, s.side, server_set(pair, sets))
        for pair in range(blocks)
        for s in run_pair(pair, sides)
    )


def block_row(
    test: str, concurrency: int, slot: Slot, block: BlockMeasure, rows: WrittenRows
) -> LoadBlockRow:
    latencies = block.latencies
    return LoadBlockRow(
        test=test,
        concurrency=concurrency,
        server=slot.side,
        pair=slot.pair,
        start_time=block.start_time,
        seconds=block.seconds,
        queries=block.queries,
        errors=block.errors,
        p50=percentile(latencies, 0.5),
        p90=percentile(latencies, 0.9),
        p99=percentile(latencies, 0.99),
        rows=rows.rows,
        bytes=rows.bytes,
        harness_cpu=block.harness_cpu,
        error=console_text(block.first_error, 1000),
        process=slot.process,
    )


def failed_block(block: BlockMeasure, message: str) -> BlockMeasure:
    return dataclasses.replace(
        block, errors=block.errors + 1, first_error=block.first_error or message
    )


class LoadRunner:
    """Runs the levels of one load test on the server process sets of a run."""

    def __init__(
        self,
        sets: Sequence[ServerPair],
        writer: TableWriter[LoadBlockRow],
        clock: Clock,
        recover: Recover,
        note: Note,
    ) -> None:
        self.sets = tuple(sets)
        self.writer = writer
        self.clock = clock
        self.recover = recover
        self.note = note

    def server(self, slot: Slot) -> Side:
        return self.sets[slot.process].side(slot.side)

    def run(self, test: TestDef, sides: Sequence[str], on_level: Callable[[int], None]) -> str:
        """Every level in order; "" when all ran, else why the rest did not (a budget)."""
        spec = test.load
        assert spec is not None
        limits = self.clock.limits.for_test(test.max_query_seconds)
        mix = [q.sql for q in test.queries]
        settings = dict(test.settings)
        servers = [(n, side) for n in range(len(self.sets)) for side in sides]
        size = (
            {key: bytes_column(self.sets[key[0]].side(key[1]).control) for key in servers}
            if spec.is_insert
            else {}
        )
        for concurrency in spec.concurrency:
            on_level(concurrency)
            pools = {key: ClientPool(concurrency, limits.run_seconds) for key in servers}
            try:
                self._prewarm(test, concurrency, mix, settings, pools)
                why = self._level(test, spec, concurrency, mix, settings, pools, size, sides)
            finally:
                for pool in pools.values():
                    pool.close()
            if why:
                return why
        return ""

    def _prewarm(
        self,
        test: TestDef,
        concurrency: int,
        mix: Sequence[str],
        settings: dict[str, str],
        pools: dict[tuple[int, str], ClientPool],
    ) -> None:
        """Every query of the mix once on each server (caches, connections), not measured."""
        for (process, side), pool in pools.items():
            port = self.sets[process].side(side).process.ports.http
            for i, sql in enumerate(mix):
                query_id = f"{test.name}.load{concurrency}.prewarm.{process}.{i}"
                pool.executors(port)[0].execute(sql, query_id, settings)

    def _level(
        self,
        test: TestDef,
        spec: LoadSpec,
        concurrency: int,
        mix: Sequence[str],
        settings: dict[str, str],
        pools: dict[tuple[int, str], ClientPool],
        size: dict[tuple[int, str], str],
        sides: Sequence[str],
    ) -> str:
        for slot in block_order(spec.blocks, sides, len(self.sets)):
            why = self.clock.out_of_time()
            if why is not None:
                return why
            side = self.server(slot)
            if spec.is_insert and not self._reset(test, concurrency, slot, spec.insert_table):
                continue
            executors = pools[(slot.process, slot.side)].executors(side.process.ports.http)
            prefix = f"{test.name}.load{concurrency}.{slot.pair}.{slot.side}"
            block = run_block(executors, mix, settings, spec.block_seconds, prefix)
            rows = WrittenRows(0, 0)
            if spec.is_insert and not block.server_gone:
                try:
                    rows = self._after_insert_block(
                        side.control, spec.insert_table, size[(slot.process, slot.side)]
                    )
                except Exception as e:  # the server's answer: the block counts as failed
                    block = failed_block(block, f"counting the rows of {spec.insert_table}: {e}")
            self.writer.write(block_row(test.name, concurrency, slot, block, rows))
            if block.server_gone and not side.process.ping():
                where = f"during {test.name} load block {slot.pair} at {concurrency} clients"
                self.recover(slot.side, where, block.first_error, slot.process)
        return ""

    def _reset(self, test: TestDef, concurrency: int, slot: Slot, table: str) -> bool:
        """Truncate the insert table before a block; a server that refuses fails the block
        (a row with one error), and the test goes on."""
        try:
            reset(self.server(slot).control, table)
        except Exception as e:  # clickhouse-driver's errors have no common base worth naming
            block = BlockMeasure(
                time.time(), 0.0, (), 1, f"TRUNCATE TABLE {table}: {e}", False, 0.0
            )
            self.writer.write(block_row(test.name, concurrency, slot, block, WrittenRows(0, 0)))
            return False
        return True

    def _after_insert_block(self, control: ControlClient, table: str, size: str) -> WrittenRows:
        rows = written(control, table, size)
        if not wait_for_merges(control, table):
            self.note(f"merges of {table} still running after an insert block; went on")
        return rows


def measure_load_test(
    measurer: Measurer, clock: Clock, progress: Progress, test: TestDef, sides: Sequence[str]
) -> str:
    """Settle the setup, then run the load test's levels; the test's tests.tsv reason: "" when
    every level ran, else what stopped it and where."""
    progress.activity(test.name, "setup done, waiting for background merges")
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        print(f"chperf: warning: {console_text(message, 1000)}", file=sys.stderr)

    for warning in settle_all(measurer.sets, test, clock.cap(SETTLE_TIMEOUT_S).seconds):
        note(warning)

    def recover(side: str, where: str, failure: str, process: int) -> None:
        measurer.recover(side, test.name, WHOLE_TEST, where, failure, process)

    def on_level(concurrency: int) -> None:
        progress.activity(test.name, f"load: {concurrency} clients")

    runner = LoadRunner(measurer.sets, measurer.writers.load_blocks, clock, recover, note)
    why = runner.run(test, sides, on_level)
    reason = f"{STOPPED_PREFIX}: {why}" if why else "load test"
    if len(sides) < 2:
        reason += f"; measured on {sides[0]} only" if sides else "; measured on no side"
    return reason
