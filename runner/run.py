"""One chperf run: start both servers, run every test in the run order of runner/schedule.py,
write the artifacts."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import NamedTuple

from artifacts.console import console_text
from artifacts.errors import ChperfError, Terminated
from artifacts.files import Reserve, WriteFailed
from artifacts.manifest import (
    CHPERF_VERSION,
    COMPLETE,
    FAILED,
    INTERRUPTED,
    MANIFEST,
    RunManifest,
)
from artifacts.outdir import prepare_out_dir
from artifacts.tables import (
    BOTH,
    SIDES,
    STAGE_NOT_RUN,
    TEST_ERROR,
    TEST_NOT_RUN,
    TEST_RAN,
    TEST_SKIPPED,
    ErrorRow,
    MonitorRow,
)
from compare.interim import InterimJudge
from compare.verdict import Verdict
from runner.accounting import Accounts, stop_reason
from runner.budget import Clock
from runner.datasets import dataset_tables
from runner.environment import environment_warnings
from runner.load import measure_load_test
from runner.machine import machine_facts
from runner.measure import Measurer, samples_of
from runner.monitor import Monitor
from runner.options import RunOptions
from runner.pinning import resolve as resolve_pinning
from runner.profiler import Profiler
from runner.progress import ProfileForecast, Progress
from runner.protocol_runs import ProtocolRuns
from runner.results import ResultRecorder
from runner.selection import LoadedTests, load_tests, selected_queries
from runner.servers import ServerPair, renew_set, started_server_sets
from runner.settle import SETTLE_TIMEOUT_S
from runner.statements import (
    DROP_KINDS,
    missing_tables,
    settle_all,
    statements,
)
from runner.testdef import TestDef, TestQuery
from runner.testsetup import everywhere, set_up, tear_down
from runner.writers import Writers

# Interim verdicts that get profile runs by default: what a developer will want explained.
PROFILED_VERDICTS = frozenset({Verdict.FASTER, Verdict.SLOWER, Verdict.UNSTABLE})


class Ran(NamedTuple):
    set_up: bool  # its drop, create and fill statements ran: teardown follows
    measured: bool  # its queries were measured: profile runs may follow
    setup_failed: Mapping[str, int] = MappingProxyType({})  # side -> its setup's error code


class Run:
    def __init__(self, options: RunOptions, loaded: LoadedTests) -> None:
        self.options = options
        self.loaded = loaded
        self.writers = Writers(options.out)
        machine = machine_facts()
        for warning in environment_warnings(machine):
            print(f"chperf: warning: {console_text(warning, 1000)}", file=sys.stderr)
            machine["warning"] = warning
        self.manifest = RunManifest(
            chperf_version=CHPERF_VERSION,
            run_id=str(uuid.uuid4()),
            start_time=datetime.now(UTC).isoformat(timespec="seconds"),
            machine=machine,
            options=options.manifest_options(),
            warnings=[str(w) for t in loaded.tests for w in t.warnings],
        )
        self._start = time.monotonic()
        self.clock = Clock(options.limits)
        self.accounts = Accounts(self.writers, options)
        # the environment monitor's verdict on a wall-clock window, while it runs
        self._disturbed: Callable[[float, float], bool] | None = None
        self._reserve = Reserve(options.out)  # room for run.json's last write
        self.renewals: list[float] = []  # seconds of each renewal of the last process set

    def execute(self) -> None:
        status = INTERRUPTED
        try:
            self._reserve.hold()
            self.accounts.parse_problems(self.loaded)
            self.manifest.write(self.options.out)
            if not any(self._needs_servers(t) for t in self.loaded.tests):
                # Nothing to measure (no test loaded, or all skipped): no servers to start.
                self._run_tests(())
                status = COMPLETE
                return
            with (
                started_server_sets(
                    self.options.reference,
                    self.options.patched,
                    self.options.processes,
                    keep_dir=self.options.keep_servers_dir,
                    parent_dir=self.options.servers_dir,
                ) as sets,
                self._monitored(sets),
            ):
                self._servers_started(sets)
                self._run_tests(sets)
                self.manifest.servers_started([pair.infos() for pair in sets])
            status = COMPLETE
        finally:
            self._finish(status, sys.exc_info()[1])

    def _finish(self, status: str, error: BaseException | None) -> None:
        """Every test gets its row, also when the run stops early (signal, server failure),
        then run.json says how the run ended. After a failed write the disk may be full: the
        reserve is given back and run.json goes first; the rows are written if they fit."""
        if isinstance(error, WriteFailed):
            self._reserve.release()
            self._write_end(status, error)
            with contextlib.suppress(WriteFailed):
                self._account_for_every_test(error)
            with contextlib.suppress(WriteFailed):
                self.writers.close()
            return
        try:
            self._account_for_every_test(error)
            self.writers.close()
        except WriteFailed as e:  # the disk filled up just now: the run failed after all
            self._finish(status, e)
            raise
        self._reserve.release()
        self._write_end(status, error)

    def _account_for_every_test(self, error: BaseException | None) -> None:
        stopped = stop_reason(error)
        for test in self.loaded.tests:
            self.accounts.not_run(test, stopped)

    def _write_end(self, status: str, error: BaseException | None) -> None:
        end = datetime.now(UTC).isoformat(timespec="seconds")
        failure = _failure(error)
        status = FAILED if failure is not None else status
        self.manifest.finish(status, end, time.monotonic() - self._start, failure)
        try:
            self.manifest.write(self.options.out)
        except WriteFailed as e:
            if error is None:
                raise
            # The run's own error says what went wrong first; this one only adds to it.
            what = f"{MANIFEST} does not say how the run ended: {e.message}"
            print(f"chperf: warning: {console_text(what, 1000)}", file=sys.stderr)

    def _servers_started(self, sets: tuple[ServerPair, ...]) -> None:
        self.manifest.servers_started([pair.infos() for pair in sets])
        self.manifest.write(self.options.out)

    @contextlib.contextmanager
    def _monitored(self, sets: tuple[ServerPair, ...]) -> Iterator[None]:
        """The environment monitor samples the machine into monitor.tsv while the servers
        run; our servers' CPU time is told from everything else's by their PIDs."""

        def watched() -> list[int]:
            return [pair.side(side).process.pid for pair in sets for side in SIDES]

        def record(sample: MonitorRow) -> None:
            with contextlib.suppress(WriteFailed):  # the run's own next write reports it
                self.writers.monitor.write(sample)

        with Monitor(record, watched) as monitor:
            self._disturbed = monitor.disturbed
            yield

    def _needs_servers(self, test: TestDef) -> bool:
        wanted = self.options.long or not test.is_long
        return wanted and not test.skip_reason and bool(selected_queries(test, self.options))

    def _run_tests(self, sets: tuple[ServerPair, ...]) -> None:
        tests = self.loaded.tests
        total = sum(
            len(selected_queries(t, self.options))
            for t in tests
            if self.options.long or not t.is_long
        )
        stop_rule = self.options.stop_rule
        if stop_rule is not None:
            # m of compare's BH step; a shard's merged run has about N times its queries.
            shards = self.options.shard.count if self.options.shard else 1
            stop_rule = dataclasses.replace(stop_rule, queries=total * shards)
        judge = InterimJudge(self.options.thresholds, self.options.method)
        measurer = Measurer(sets, self.writers, self.options.runs, self.clock, stop_rule, judge)
        measurer.on_restart = lambda: self._servers_started(sets)
        measurer.disturbed = self._disturbed
        if self.options.check_results:
            measurer.results = ResultRecorder(self.writers.results)
        profiler = None
        if self.options.profile.mode != "none" and sets:
            timeout = self.options.limits.run_seconds
            profiler = Profiler(sets[0], self.options.out, self.options.profile, timeout)
        progress = Progress(
            total,
            self.options.runs,
            redraw=self.options.redraw_progress,
            profile=_forecast(profiler),
        )
        current: TestDef | None = None
        try:
            if stop_rule is not None and sets:
                judge.prepare(range(stop_rule.min_runs, stop_rule.extended_runs + 1))
            for number, test in enumerate(tests):
                current = test
                why = self.clock.out_of_time()
                if why is not None and self._needs_servers(test):
                    self.accounts.not_run(test, why)
                    continue
                if number > 0 and self._needs_servers(test):
                    self._renew_last_set(measurer, sets, progress, test)
                self.clock.start_test()
                ran = self._run_test(measurer, progress, test)
                if ran.measured and profiler is not None:
                    self._profile(profiler, judge, measurer, test, progress)
                if ran.set_up:  # a test skipped before its setup has nothing to drop
                    tear_down(measurer, self.writers, self.clock, test, ran.setup_failed)
                self.clock.end_test()
                measurer.samples.clear()
                measurer.first_failures.clear()
            current = None
        except (KeyboardInterrupt, Terminated):
            if current is not None:
                self._collect_after_interrupt(measurer, current)
            raise
        finally:
            self.manifest.measurement_ended(measurer.run_seconds, measurer.wakes, self.renewals)
            if profiler is not None:
                self.manifest.profiles_taken(
                    profiler.records, profiler.unavailable, profiler.problems
                )
            judge.close()
            measurer.close()
            progress.finish()

    def _renew_last_set(
        self,
        measurer: Measurer,
        sets: tuple[ServerPair, ...],
        progress: Progress,
        test: TestDef,
    ) -> None:
        """With --renew-set, the last process set of each side starts afresh before every test
        but the first, so its history differs from set 0's (docs/method.md)."""
        if not self.options.renew_set or len(sets) < 2:
            return
        progress.activity(test.name, "starting the last server process set afresh")
        # Open connections would hold the old processes' shutdown (18.16 waits up to 15 s).
        measurer.disconnect(len(sets) - 1)
        seconds = renew_set(sets[-1])
        self.renewals.append(seconds)
        self._servers_started(sets)

    def _profile(
        self,
        profiler: Profiler,
        judge: InterimJudge,
        measurer: Measurer,
        test: TestDef,
        progress: Progress,
    ) -> None:
        """Profile runs after the test's measured runs, so they cannot disturb them."""
        sets = len(measurer.sets)
        samples = {index: samples_of(times, sets) for index, times in measurer.samples.items()}
        verdicts = judge.verdicts(test.name, test.max_ignored_relative_change, samples)
        queries = selected_queries(test, self.options)
        every = self.options.profile.mode == "all" or test.profile_all_queries
        chosen = [
            (query, verdict)
            for query in queries
            if (verdict := verdicts.get(query.index)) is not None
            and (every or verdict in PROFILED_VERDICTS)
        ]
        with progress.profile_phase(len(chosen), len(queries)):
            for query, verdict in chosen:
                if self.clock.out_of_time() is not None:
                    return  # profile runs explain; they never take a budget's last minutes
                if not profiler.can_profile():
                    return
                with progress.profiling(
                    f"{test.name} query {query.index}",
                    f"profiling ({verdict.value}, up to {profiler.options.seconds:g} s a side)",
                ):
                    profiler.profile(test, query)

    def _collect_after_interrupt(self, measurer: Measurer, test: TestDef) -> None:
        """Keep the query_log rows of the runs already made (the servers are about to stop)."""
        try:
            measurer.collect_query_log(test.name)
        except Exception as e:  # a hung server: the runs are kept, their server times not
            self._warn(f"{test.name}: query_log not collected after the interrupt: {e}")

    def _run_test(self, measurer: Measurer, progress: Progress, test: TestDef) -> Ran:
        """Set up and measure one test."""
        start = time.monotonic()
        queries = self.accounts.list_queries(test)
        if test.is_long and not self.options.long:
            self.accounts.test_row(test, TEST_SKIPPED, "tagged long; pass --long to run it", 0.0)
            return Ran(set_up=False, measured=False)
        if not queries:
            return Ran(set_up=False, measured=False)
        missing = test.skip_reason or missing_tables(measurer.sets, test.required_tables)
        if not missing and (absent := missing_tables(measurer.sets, dataset_tables(test))):
            missing = f"{absent}: the test reads this ClickHouse test dataset"
        if missing:
            reason = test.skip_reason or f"precondition not met: {missing}"
            self.accounts.test_row(test, TEST_SKIPPED, reason, 0.0)
            progress.skip_queries(len(queries))
            return Ran(set_up=False, measured=False)
        everywhere(measurer, self.clock, test, statements(test, DROP_KINDS), stage=None)
        setup = set_up(measurer, self.writers, self.clock, test, queries)
        sides, setup_error = setup.sides, setup.message
        status, reason = TEST_RAN, ""
        why = self.clock.out_of_time()
        if why is not None:
            # The budget ran out during the setup (a fill it cut short, perhaps): the test is
            # not run, not an error of the test.
            self.accounts.test_row(test, TEST_NOT_RUN, why, time.monotonic() - start)
            progress.skip_queries(len(queries))
            return Ran(set_up=True, measured=False, setup_failed=setup.failed)
        if sides and test.load is not None:
            reason = measure_load_test(measurer, self.clock, progress, test, sides)
            progress.skip_queries(len(queries))
            self.accounts.test_row(test, TEST_RAN, reason, time.monotonic() - start)
            # No profile runs for a load test.
            return Ran(set_up=True, measured=False, setup_failed=setup.failed)
        if sides:
            if len(sides) < len(SIDES):
                reason = f"setup failed on the {_other(sides)} side: measured on {sides[0]} only"
            self._measure_queries(measurer, progress, test, queries, sides)
        else:
            status, reason = TEST_ERROR, f"setup failed: {setup_error}"
            print(f"chperf: {console_text(test.name)}: {console_text(reason)}", file=sys.stderr)
            progress.skip_queries(len(queries))
        self.accounts.test_row(test, status, reason, time.monotonic() - start)
        return Ran(set_up=True, measured=status == TEST_RAN, setup_failed=setup.failed)

    def _measure_queries(
        self,
        measurer: Measurer,
        progress: Progress,
        test: TestDef,
        queries: tuple[TestQuery, ...],
        sides: tuple[str, ...],
    ) -> None:
        """After a setup that worked on `sides`: every query's runs, the test's query_log
        rows and its protocol runs."""
        progress.activity(test.name, "setup done, waiting for background merges")
        settle_for = self.clock.cap(SETTLE_TIMEOUT_S).seconds
        for warning in settle_all(measurer.sets, test, settle_for):
            self._warn(warning)
        out_of_time = None
        for q in queries:
            why = self.clock.out_of_time()
            if why is not None:
                out_of_time = why
                self.writers.errors.write(ErrorRow(test.name, q.index, BOTH, STAGE_NOT_RUN, 0, why))
                progress.skip_queries(1)
                self.accounts.ended.add((test.name, q.index))
                continue
            progress.start_query(test.name, q.index, q.name)
            measurer.measure(test, q, sides)
            self.accounts.ended.add((test.name, q.index))
            progress.end_query()
        measurer.collect_query_log(test.name)
        if test.protocols is not None:
            activity = functools.partial(progress.activity, test.name)
            ProtocolRuns(measurer, activity).measure(test, queries, sides)
        if not any(all(t.values()) for t in measurer.samples.values()):
            why = next(iter(measurer.first_failures.values()), out_of_time or "no runs")
            print(
                f"chperf: {console_text(test.name)}: no query was measured on both sides: "
                f"{console_text(why)}",
                file=sys.stderr,
            )

    def _warn(self, message: str) -> None:
        print(f"chperf: warning: {console_text(message, 1000)}", file=sys.stderr)
        self.manifest.warn(message)


def _forecast(profiler: Profiler | None) -> ProfileForecast | None:
    """What the profile runs may add to the ETA; None when there will be none."""
    if profiler is None or not profiler.can_profile():
        return None
    options = profiler.options
    return ProfileForecast(2 * options.seconds, options.budget_seconds, options.mode == "all")


def _failure(error: BaseException | None) -> str | None:
    """Why the run failed, for run.json; None for an interrupt (SIGINT/SIGTERM)."""
    if error is None or isinstance(error, (KeyboardInterrupt, Terminated)):
        return None
    if isinstance(error, ChperfError):
        return error.message
    return f"internal error: {type(error).__name__}: {error}"


def _other(sides: tuple[str, ...]) -> str:
    return next(side for side in SIDES if side not in sides)


def pinned(options: RunOptions, loaded: LoadedTests) -> RunOptions:
    """Resolve --pin-cpu against the selected tests (runner/pinning.py) into both sides'
    server specs, and say what was decided."""
    pinning = resolve_pinning(options.pin, loaded.tests, os.sched_getaffinity(0))
    print(f"chperf: servers {console_text(pinning.reason, 1000)}", file=sys.stderr)
    return dataclasses.replace(
        options,
        reference=dataclasses.replace(options.reference, cpus=pinning.cpus),
        patched=dataclasses.replace(options.patched, cpus=pinning.cpus),
        pinning=pinning,
    )


def run(options: RunOptions, on_loaded: Callable[[LoadedTests], None] | None = None) -> Run:
    """Validate everything that can be validated, then prepare the output directory and run:
    a ChperfError leaves --out as it was."""
    loaded = load_tests(options)
    for test in loaded.tests:
        for warning in test.warnings:
            print(f"chperf: warning: {console_text(str(warning), 1000)}", file=sys.stderr)
    for _, _, error in loaded.problems:
        print(
            f"chperf: error: {console_text(str(error), 1000)} (the test is recorded as an error)",
            file=sys.stderr,
        )
    if on_loaded:
        on_loaded(loaded)
    if not loaded.tests and not loaded.problems:
        raise ChperfError(
            "no tests selected",
            hint="check --tests and --test; test files are *.xml in ClickHouse's format",
        )
    options = pinned(options, loaded)
    prepare_out_dir(options.out, options.force)
    current = Run(options, loaded)
    current.execute()
    return current
