"""Measuring one query on both servers: prewarm, the runs in turn, deaths and hangs; its query_log
rows come from runner/querylog.py, its tables go through runner/writers.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from artifacts.errors import InfrastructureError
from artifacts.tables import (
    BOTH,
    PATCHED,
    REFERENCE,
    SIDES,
    STAGE_NOT_RUN,
    STAGE_PREWARM,
    STAGE_RUN,
    STAGE_SERVER,
    STAGE_TOO_LONG,
    ErrorRow,
    RunRow,
    StopRow,
)
from compare.interim import InterimJudge
from compare.randomization import Samples
from compare.stopping import (
    StopDecision,
    StopRule,
    hold_for_interference,
    is_checkpoint,
    should_stop,
)
from compare.verdict import MIN_RUNS
from runner.budget import TIMEOUT_CODES, Clock, Limits
from runner.executor import HttpExecutor
from runner.querylog import MeasuredRuns, collect_query_log
from runner.results import RECHECK_LABEL, ResultRecorder, RowHasher
from runner.schedule import (
    PREWARM_LABEL,
    first_run,
    query_id,
    run_label,
    run_pair,
    server_set,
)
from runner.servers import ServerPair
from runner.testdef import TestDef, TestQuery
from runner.writers import Writers

# After a dropped connection, how long to wait for the server process to be reaped before
# calling it hung rather than dead.
DEATH_GRACE_S = 2.0
# KILL QUERY after the client's timeout: a server that cannot answer it this fast is hung.
CANCEL_TIMEOUT_S = 2.0
# The first run after an adaptive look (~20 ms of idle servers) runs ~2% slower: noise in every
# pair; a 4-5 ms single-threaded query on the server that runs next removes most
# of it (bench/bench_wake.py; docs/method.md "The adaptive stop rule"). Not logged, not a measured
# run (its time counts in measured_runs_seconds).
WAKE_QUERY = "SELECT count() FROM numbers(10000000)"
WAKE_SETTINGS = {"max_threads": "1", "log_queries": "0"}


@dataclass(frozen=True)
class Executed:
    """What became of one execution."""

    elapsed: float
    ok: bool = False
    too_long: bool = False  # over the execution's own time limit
    cut_short: bool = False  # stopped at a budget's limit: the query is "not run"
    stage: str = ""  # the errors.tsv stage recorded for a failure
    reason: str = ""


def sql_string(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def samples_of(times: dict[str, list[float]], sets: int = 1) -> Samples:
    """A query's client times so far; run n of both sides is the n-th value of each list (a
    side stops at its first failure), so zipping them gives the pairs, and run n ran on
    process set server_set(n, sets)."""
    reference, patched = tuple(times[REFERENCE]), tuple(times[PATCHED])
    pairs = tuple(zip(reference, patched, strict=False))
    processes = tuple(server_set(run, sets) for run in range(len(pairs))) if sets > 1 else ()
    return Samples(reference, patched, pairs, processes)


class Measurer:
    def __init__(
        self,
        sets: Sequence[ServerPair],
        writers: Writers,
        runs: int,
        clock: Clock,
        stop_rule: StopRule | None = None,
        judge: InterimJudge | None = None,
    ) -> None:
        self.sets = tuple(sets)
        self.writers = writers
        self.runs = runs
        self.clock = clock
        self.executors = [
            {
                side: HttpExecutor(pair.side(side).process.ports.http, clock.limits.run_seconds)
                for side in SIDES
            }
            for pair in self.sets
        ]
        self.measured = MeasuredRuns()
        # Wall time of the measured runs alone, for the harness-efficiency benchmark.
        self.run_seconds = 0.0
        # Client times of the current test's queries, for interim verdicts (profiling).
        self.samples: dict[int, dict[str, list[float]]] = {}
        # The first failure of each of the current test's queries, for the console.
        self.first_failures: dict[int, str] = {}
        self.stop_rule = stop_rule
        self.discoveries = 0  # queries stopped as changed with an FDR-safe p-value
        self.wakes = 0
        self.judge = judge
        # Whether a pair's wall-clock window coincided with interference (runner/monitor.py);
        # None: no monitor, no pair counts as disturbed.
        self.disturbed: Callable[[float, float], bool] | None = None
        # Called after a server restart (new PID), so run.json always names live processes.
        self.on_restart: Callable[[], None] = lambda: None
        # Hashes every prewarm's result (runner/results.py); None: results are not compared.
        self.results: ResultRecorder | None = None

    def disconnect(self, process_set: int) -> None:
        """Close the set's connections (its servers are about to become new processes); the
        next query opens new ones."""
        for executor in self.executors[process_set].values():
            executor.close()

    def close(self) -> None:
        for executors in self.executors:
            for executor in executors.values():
                executor.close()

    def measure(self, test: TestDef, query: TestQuery, sides_set_up: Sequence[str] = SIDES) -> None:
        limits = self.clock.limits.for_test(test.max_query_seconds)
        settings = dict(test.settings)
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        self.samples[query.index] = times
        if self.results is not None:
            self.results.begin()
        sides, ended = self._prewarm(test, query, sides_set_up, limits, settings)
        if self.results is not None and sides and not ended:
            ended = self._recheck_results(test, query, sides, limits, settings)
        start = time.perf_counter()
        reason = ended or ("failed on both sides" if not sides else f"fixed {self.runs} runs")
        disturbed_pairs = 0
        for run in range(self.max_runs if sides and not ended else 0):
            why = self.clock.out_of_time()
            if why is not None:
                reason = self._out_of_time(test, query, why, run)
                break
            process = server_set(run, len(self.sets))
            pair_start = time.time()
            for slot in run_pair(run, sides):
                label = run_label(run)
                outcome = self._execute(
                    test, query, process, slot.side, label, settings, STAGE_RUN, limits.run_seconds
                )
                if outcome.too_long or outcome.cut_short:
                    reason = f"{outcome.stage}: {outcome.reason}"
                    sides.clear()  # the runs it has are kept; nothing more is measured
                    break
                if not outcome.ok:
                    # One failed run ends the measurement of that side: the query is partial.
                    sides.remove(slot.side)
                    continue
                qid = query_id(test.name, query.index, run_label(run))
                self.writers.runs.write(
                    RunRow(
                        test.name,
                        query.index,
                        slot.side,
                        run,
                        qid,
                        outcome.elapsed,
                        process,
                        time.time() - outcome.elapsed,
                    )
                )
                self.measured.add(process, slot.side, qid, query.index, run)
                times[slot.side].append(outcome.elapsed)
            if not sides:
                break
            if self.disturbed is not None and self.disturbed(pair_start, time.time()):
                disturbed_pairs += 1
            decision, looked = self._stop_decision(run + 1, times, limits, disturbed_pairs)
            if decision is not None and decision.stop:
                reason = decision.reason
                self.discoveries += decision.discovery
                break
            if looked:
                self._wake(run + 1, sides)
        self.run_seconds += time.perf_counter() - start
        completed = min(len(t) for t in times.values()) if all(times.values()) else 0
        self.writers.stops.write(StopRow(test.name, query.index, completed, reason))

    def _prewarm(
        self,
        test: TestDef,
        query: TestQuery,
        sides_set_up: Sequence[str],
        limits: Limits,
        settings: dict[str, str],
    ) -> tuple[list[str], str]:
        """One prewarm run per server (its caches are its own), in the order of each set's
        first measured run. A side whose prewarm fails is not measured. A prewarm over the
        limit of a measured run makes the query too long: the other side is still prewarmed
        once, to tell who went over, and nothing is measured. The sides to measure, and why
        the query ended ("" when it goes on)."""
        failed: set[str] = set()
        ended = ""
        for process in range(len(self.sets)):
            for slot in run_pair(first_run(process), sides_set_up):
                if slot.side in failed:
                    continue
                why = self.clock.out_of_time()
                if why is not None:
                    return [], self._out_of_time(test, query, why, 0)
                hasher = self._hasher(query)
                outcome = self._execute(
                    test,
                    query,
                    process,
                    slot.side,
                    PREWARM_LABEL,
                    settings,
                    STAGE_PREWARM,
                    limits.prewarm_seconds,
                    hasher,
                )
                self._record_result(test, query, process, slot.side, PREWARM_LABEL, outcome, hasher)
                if outcome.ok and outcome.elapsed > limits.run_seconds:
                    message = (
                        f"the prewarm took {outcome.elapsed:.1f} s on the {slot.side} server, "
                        f"over the {limits.run_seconds:g} s limit of a measured run"
                    )
                    self._record(test, query, slot.side, STAGE_TOO_LONG, 0, message)
                    outcome = Executed(
                        outcome.elapsed, too_long=True, stage=STAGE_TOO_LONG, reason=message
                    )
                if outcome.cut_short:
                    return [], f"{outcome.stage}: {outcome.reason}"
                if outcome.too_long and not ended:
                    ended = f"{outcome.stage}: {outcome.reason}"
                if not outcome.ok:
                    failed.add(slot.side)
            if ended:
                break
        return [side for side in sides_set_up if side not in failed], ended

    def _hasher(self, query: TestQuery) -> RowHasher | None:
        return self.results.hasher(query.sql) if self.results is not None else None

    def _record_result(
        self,
        test: TestDef,
        query: TestQuery,
        process: int,
        side: str,
        label: str,
        outcome: Executed,
        hasher: RowHasher | None,
    ) -> None:
        if self.results is not None and hasher is not None and outcome.ok:
            self.results.record(test.name, query.index, process, side, label, hasher)

    def _recheck_results(
        self,
        test: TestDef,
        query: TestQuery,
        sides: list[str],
        limits: Limits,
        settings: dict[str, str],
    ) -> str:
        """Servers whose results disagree run the query once more, hashed, so that each side
        has two executions: compare tells a wrong result from a non-deterministic query
        (docs/method.md, "Result equality"). A failure here counts as a failed prewarm: the
        side leaves `sides`. Why the query ended ("" when it goes on)."""
        assert self.results is not None
        for process, side in self.results.to_recheck():
            if side not in sides:
                continue
            why = self.clock.out_of_time()
            if why is not None:
                sides.clear()
                return self._out_of_time(test, query, why, 0)
            hasher = self._hasher(query)
            outcome = self._execute(
                test, query, process, side, RECHECK_LABEL, settings, STAGE_PREWARM,
                limits.prewarm_seconds, hasher,
            )  # fmt: skip
            self._record_result(test, query, process, side, RECHECK_LABEL, outcome, hasher)
            if outcome.cut_short or outcome.too_long:
                sides.clear()
                return f"{outcome.stage}: {outcome.reason}"
            if not outcome.ok:
                sides.remove(side)
        return ""

    def _out_of_time(self, test: TestDef, query: TestQuery, why: str, runs: int) -> str:
        """A budget ran out before run `runs`: with fewer runs than a verdict needs the query
        is "not run"; otherwise it is judged on the runs it has."""
        needed = self.stop_rule.min_runs if self.stop_rule else min(self.runs, MIN_RUNS)
        if runs < needed:
            message = f"{why} after {runs} of at least {needed} runs" if runs else why
            self._record(test, query, BOTH, STAGE_NOT_RUN, 0, message)
        return f"{why} after {runs} runs"

    @property
    def max_runs(self) -> int:
        return self.stop_rule.extended_runs if self.stop_rule else self.runs

    def _stop_decision(
        self, runs: int, times: dict[str, list[float]], limits: Limits, disturbed: int = 0
    ) -> tuple[StopDecision | None, bool]:
        """The stop rule's decision and whether it looked at the statistics (a chDB
        evaluation). In the fixed mode only the query's time budget stops it early, once it
        has the runs a verdict needs. With one side left there is nothing to compare: it stops
        at min_runs."""
        if self.stop_rule is None or self.judge is None:
            spent = sum(sum(t) for t in times.values())
            if runs >= MIN_RUNS and spent >= limits.query_seconds:
                why = f"used the {limits.query_seconds:g} s time budget of a query"
                return StopDecision(True, why), False
            return None, False
        if runs >= self.stop_rule.min_runs and sum(1 for t in times.values() if t) == 1:
            return StopDecision(True, "measured on one side only: nothing to compare"), False
        spent = sum(sum(t) for t in times.values())
        stats = None
        looked = is_checkpoint(self.stop_rule, runs) and all(times.values())
        if looked:
            stats = self.judge.stats(samples_of(times, len(self.sets)))
        decision = should_stop(self.stop_rule, runs, spent, stats, self.discoveries)
        return hold_for_interference(self.stop_rule, runs, spent, disturbed, decision), looked

    def _wake(self, run: int, sides: Sequence[str]) -> None:
        """WAKE_QUERY on the server that executes run `run` first. Its outcome does not matter:
        a dead or hung server shows in the measured run that follows."""
        first = run_pair(run, sides)[0].side
        executor = self.executors[server_set(run, len(self.sets))][first]
        executor.execute(WAKE_QUERY, f"chperf.wake.{time.time_ns()}", WAKE_SETTINGS)
        self.wakes += 1

    def _execute(
        self,
        test: TestDef,
        query: TestQuery,
        process: int,
        side: str,
        label: str,
        settings: dict[str, str],
        stage: str,
        limit: float,
        hasher: RowHasher | None = None,
    ) -> Executed:
        """One execution under `limit`, cut to what the budgets have left; a failure is
        recorded in errors.tsv: over the limit it is "too long", at a budget's limit "not run",
        otherwise an error of `stage`. `hasher` hashes the result as it arrives; its time is
        not the server's, so it is taken off the elapsed time."""
        cap = self.clock.cap(limit)
        qid = query_id(test.name, query.index, label)
        sink = hasher.feed if hasher is not None else None
        outcome = self.executors[process][side].execute(query.sql, qid, settings, cap.seconds, sink)
        if outcome.ok:
            hashing = hasher.seconds if hasher is not None else 0.0
            return Executed(outcome.elapsed - hashing, ok=True)
        server = self.sets[process].side(side).process.describe()
        stopped = outcome.error_code in TIMEOUT_CODES or (
            outcome.timed_out and self._cancel(process, side, qid)
        )
        if stopped and cap.by_budget:
            message = self.clock.cut_short(cap, f"the {label} run")
            self._record(test, query, BOTH, STAGE_NOT_RUN, 0, message)
            return Executed(outcome.elapsed, cut_short=True, stage=STAGE_NOT_RUN, reason=message)
        if stopped:
            message = (
                f"the {label} run was stopped at the {limit:g} s limit on {server} "
                f"after {outcome.elapsed:.1f} s"
            )
            self._record(test, query, side, STAGE_TOO_LONG, outcome.error_code, message)
            return Executed(outcome.elapsed, too_long=True, stage=STAGE_TOO_LONG, reason=message)
        message = outcome.message
        if outcome.server_gone:
            where = f"during {test.name} query {query.index} ({label})"
            message = self.recover(
                side, test.name, query.index, where, outcome.message, process, query.sql
            )
        self._record(test, query, side, stage, outcome.error_code, message)
        return Executed(outcome.elapsed, stage=stage, reason=message)

    def _record(
        self, test: TestDef, query: TestQuery, side: str, stage: str, code: int, message: str
    ) -> None:
        self.first_failures.setdefault(query.index, f"{stage} on {side}: {message}")
        self.writers.errors.write(ErrorRow(test.name, query.index, side, stage, code, message))

    def _cancel(self, process: int, side: str, qid: str) -> bool:
        """The client gave up on a query the server did not stop: KILL QUERY. True when the
        server answered, so it is alive and the query was only too long."""
        port = self.sets[process].side(side).process.ports.http
        killer = HttpExecutor(port, CANCEL_TIMEOUT_S)
        try:
            sql = f"KILL QUERY WHERE query_id = {sql_string(qid)} ASYNC"
            return killer.execute(sql, f"chperf.cancel.{time.time_ns()}", {}).ok
        finally:
            killer.close()

    def recover(
        self,
        side: str,
        test: str,
        query_index: int,
        where: str,
        failure: str,
        process: int = 0,
        sql: str = "",
    ) -> str:
        """The server did not answer: find out why, restart it, record what happened (with
        `sql`, the query it was running, and its log tail). Main thread only: a server started
        from a worker thread dies with it (PR_SET_PDEATHSIG)."""
        server = self.sets[process].side(side).process
        if not server.exits_within(DEATH_GRACE_S):
            what = f"{server.describe()} stopped answering {where} ({failure}); restarted it"
        else:
            what = f"{server.describe()} exited with code {server.exit_code()} {where}"
        log = server.log_tail()
        server.incidents.append(what)
        try:
            server.restart()
        except InfrastructureError as e:
            raise InfrastructureError(f"{what}; restart failed: {e.message}") from e
        self.on_restart()  # writes run.json: its failure is not the restart's
        query = f"query: {sql}\n" if sql else ""
        self.writers.errors.write(
            ErrorRow(test, query_index, side, STAGE_SERVER, 0, f"{what}\n{query}{log}")
        )
        return f"{what}: {failure}"

    def collect_query_log(self, test: str) -> None:
        """Flush and read system.query_log for this test's runs (runner/querylog.py)."""
        collect_query_log(self.sets, self.measured, self.writers, test)
