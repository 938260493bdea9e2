"""Measuring a `<protocols>` test's queries per interface (docs/protocols.md): probe each
interface of every server, prewarm each query over each protocol, then the pairs of
runner/protocols.py, written to protocol_runs.tsv; what could not be measured goes to
protocol_problems.tsv with the server's words. Runs after the test's usual measurement, on
the same servers and data."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from artifacts.protocols import (
    FAILED,
    NOT_RUN,
    UNAVAILABLE,
    ProtocolProblemRow,
    ProtocolRunRow,
)
from artifacts.tables import BOTH, SIDES
from runner.budget import TIMEOUT_CODES
from runner.measure import Measurer
from runner.protocol_clients import HTTP, NATIVE, ProtocolOutcome, execute
from runner.protocols import ProtocolSpec, run_order
from runner.schedule import first_run, query_id, run_label, run_pair, server_set
from runner.server import ServerProcess
from runner.testdef import TestDef, TestQuery

PROBE_QUERY = "SELECT 1"
PROBE_LIMIT_S = 10.0
INTERFACE_NAMES = {NATIVE: "native (TCP)", HTTP: "HTTP"}


def port_of(process: ServerProcess, protocol: str) -> int:
    return process.ports.tcp if protocol == NATIVE else process.ports.http


@dataclass
class _Query:
    """What is left to measure of one query: the sides each protocol still runs on."""

    test: TestDef
    query: TestQuery
    sides: dict[str, list[str]]
    runs: int  # pairs per protocol


class ProtocolRuns:
    def __init__(self, measurer: Measurer, on_activity: Callable[[str], None]) -> None:
        self.measurer = measurer
        self.writers = measurer.writers
        self.on_activity = on_activity

    def measure(
        self, test: TestDef, queries: Sequence[TestQuery], sides_set_up: Sequence[str]
    ) -> None:
        spec = test.protocols
        if spec is None or not queries:
            return
        self.on_activity(f"probing {', '.join(spec.protocols)} on every server")
        reachable = self._probe(test, spec, queries)
        for query in queries:
            sides = {
                p: [s for s in SIDES if s in sides_set_up and s in reachable[p]]
                for p in spec.protocols
            }
            for protocol in spec.protocols:
                for side in SIDES:
                    if side not in sides_set_up:
                        why = f"the test's setup failed on the {side} server"
                        self._problem(test, query, protocol, side, FAILED, 0, why)
            state = _Query(test, query, sides, spec.runs)
            self.on_activity(f"query {query.index}: protocol timings, {spec.runs} pairs each")
            if self._prewarm(state):
                self._pairs(state, spec)

    def _probe(
        self, test: TestDef, spec: ProtocolSpec, queries: Sequence[TestQuery]
    ) -> dict[str, set[str]]:
        """Which sides answer PROBE_QUERY over each protocol on every process set; the
        others get an `unavailable` problem for every query."""
        reachable = {p: set(SIDES) for p in spec.protocols}
        for number, pair in enumerate(self.measurer.sets):
            for protocol in spec.protocols:
                for side in SIDES:
                    process = pair.side(side).process
                    qid = f"chperf.probe.{protocol}.{time.time_ns()}"
                    port = port_of(process, protocol)
                    found = execute(protocol, port, PROBE_QUERY, qid, {}, PROBE_LIMIT_S)
                    if found.ok or side not in reachable[protocol]:
                        continue
                    reachable[protocol].discard(side)
                    message = (
                        f"the {INTERFACE_NAMES[protocol]} interface (port {port}) of "
                        f"{process.describe()}, process set {number}, did not answer "
                        f"{PROBE_QUERY}: {found.message}"
                    )
                    for query in queries:
                        self._problem(test, query, protocol, side, UNAVAILABLE, 0, message)
        return reachable

    def _prewarm(self, state: _Query) -> bool:
        """One execution per protocol, side and process set, in each set's first order."""
        for number in range(len(self.measurer.sets)):
            for protocol, sides in state.sides.items():
                for slot in run_pair(first_run(number), list(sides)):
                    if self._out_of_time(state, 0):
                        return False
                    self._execute(state, protocol, slot.side, number, "prewarm")
        return True

    def _pairs(self, state: _Query, spec: ProtocolSpec) -> None:
        sets = len(self.measurer.sets)
        for run in range(spec.runs):
            if self._out_of_time(state, run):
                return
            number = server_set(run, sets)
            for slot in run_order(run, spec.protocols, state.sides):
                if slot.side not in state.sides[slot.protocol]:
                    continue  # its pair partner failed just now
                start = time.time()
                outcome = self._execute(state, slot.protocol, slot.side, number, run_label(run))
                if outcome is None or outcome.timing is None:
                    continue
                t = outcome.timing
                self.writers.protocol_runs.write(
                    ProtocolRunRow(
                        state.test.name,
                        state.query.index,
                        slot.protocol,
                        slot.side,
                        run,
                        t.connect,
                        t.first_byte,
                        t.transfer,
                        t.bytes,
                        t.blocks,
                        number,
                        start,
                    )
                )

    def _out_of_time(self, state: _Query, runs: int) -> bool:
        why = self.measurer.clock.out_of_time()
        if why is None:
            return False
        for protocol, sides in state.sides.items():
            if sides:
                message = f"{why} after {runs} of {state.runs} pairs"
                self._problem(state.test, state.query, protocol, BOTH, NOT_RUN, 0, message)
            sides.clear()
        return True

    def _execute(
        self, state: _Query, protocol: str, side: str, number: int, label: str
    ) -> ProtocolOutcome | None:
        """One execution; a failure stops that side of the protocol (recorded), and a server
        that no longer answers is restarted as in the usual measurement."""
        test, query = state.test, state.query
        limits = self.measurer.clock.limits.for_test(test.max_query_seconds)
        cap = self.measurer.clock.cap(limits.run_seconds)
        process = self.measurer.sets[number].side(side).process
        qid = query_id(test.name, query.index, f"{protocol}.{label}")
        outcome = execute(
            protocol, port_of(process, protocol), query.sql, qid, dict(test.settings), cap.seconds
        )
        if outcome.ok:
            return outcome
        state.sides[protocol].remove(side)
        message = outcome.message
        if outcome.error_code in TIMEOUT_CODES:
            message = f"the {label} run went over the {cap.seconds:g} s limit: {message}"
        elif not process.ping():
            where = f"during {test.name} query {query.index} ({protocol} {label})"
            message = self.measurer.recover(
                side, test.name, query.index, where, message, number, query.sql
            )
        message = f"{label}: {message}"
        self._problem(test, query, protocol, side, FAILED, outcome.error_code, message)
        return None

    def _problem(
        self,
        test: TestDef,
        query: TestQuery,
        protocol: str,
        side: str,
        kind: str,
        code: int,
        message: str,
    ) -> None:
        row = ProtocolProblemRow(test.name, query.index, protocol, side, kind, code, message)
        self.writers.protocol_problems.write(row)
