"""One chperf run: start both servers, run every test in ABBA order, write the artifacts."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from artifacts.errors import ChperfError
from artifacts.manifest import CHPERF_VERSION, write_manifest
from artifacts.outdir import prepare_out_dir
from artifacts.tables import (
    BOTH,
    SIDES,
    STAGE_PARSE,
    STAGE_SETUP,
    STAGE_TEARDOWN,
    WHOLE_TEST,
    ErrorRow,
    QueryRow,
    TestRow,
)
from compare.interim import InterimJudge
from compare.paired import PAIRED
from compare.stopping import StopRule
from compare.verdict import Thresholds, Verdict
from runner.environment import environment_warnings
from runner.executor import HttpExecutor, QueryOutcome
from runner.machine import machine_facts
from runner.measure import Measurer, Writers, samples_of
from runner.pinning import AUTO, Pinning, PinRequest
from runner.pinning import resolve as resolve_pinning
from runner.profiler import ProfileOptions, Profiler
from runner.progress import Progress
from runner.server import ServerSpec
from runner.servers import ServerPair, Side, started_server_sets
from runner.settle import (
    CANNOT_ASSIGN_OPTIMIZE,
    OPTIMIZE_ATTEMPTS,
    SETTLE_TIMEOUT_S,
    THROW_IF_NOOP,
    Settled,
    is_optimize,
    layout_differences,
    running_merges,
    settle,
    wait_for_merges,
)
from runner.testdef import (
    Location,
    Statement,
    TestDef,
    TestDefError,
    TestQuery,
    discover,
    load_test,
)

# Create/fill queries may load a lot of data: they get more time than a measured query.
SETUP_TIMEOUT_S = 600.0
SETUP_KINDS = ("create_query", "fill_query")  # run in document order, as written
# Interim verdicts that get profile runs by default: what a developer will want explained.
PROFILED_VERDICTS = frozenset({Verdict.FASTER, Verdict.SLOWER, Verdict.UNSTABLE})


@dataclass(frozen=True)
class ShardSelection:
    """The test files of one shard of a check, chosen before the run (ci/shard.py)."""

    label: str  # K/N, e.g. 2/4
    count: int  # N: the merged run has about N times this shard's queries
    files: tuple[Path, ...]
    weights_source: str | None = None  # the weights file that balanced the shards


@dataclass(frozen=True)
class RunOptions:
    reference: ServerSpec
    patched: ServerSpec
    tests: tuple[Path, ...]
    out: Path
    test_names: frozenset[str] = frozenset()  # empty: every test
    query_indices: frozenset[int] = frozenset()  # empty: every query
    runs: int = 15
    processes: int = 2  # server processes per side (runner/servers.started_server_sets)
    long: bool = False
    max_query_seconds: float = 30.0
    stop_rule: StopRule | None = None  # adaptive run counts; None: exactly `runs` runs
    profile: ProfileOptions = dataclasses.field(default_factory=ProfileOptions)
    thresholds: Thresholds = dataclasses.field(default_factory=Thresholds)
    method: str = PAIRED  # compare/statistics.py: the interim verdicts' method
    keep_servers_dir: bool = False
    servers_dir: Path | None = None  # where the servers' temporary directories go
    force: bool = False
    shard: ShardSelection | None = None  # None: every test
    pin: PinRequest = AUTO  # --pin-cpu; `run` resolves it into the server specs' cpus
    pinning: Pinning | None = None  # how `pin` was resolved (set by `run`)
    redraw_progress: bool = False  # redraw the progress line in place (a terminal)

    def manifest_options(self) -> dict[str, object]:
        return {
            "tests": [str(p) for p in self.tests],
            "test_names": sorted(self.test_names),
            "query_indices": sorted(self.query_indices),
            "runs": self.runs if self.stop_rule is None else "adaptive",
            "processes": self.processes,
            "pin_cpus": list(self.reference.cpus),
            "pin": self.pinning.reason if self.pinning else None,
            "long": self.long,
            "max_query_seconds": self.max_query_seconds,
            "adaptive": (
                {
                    **dataclasses.asdict(self.stop_rule),
                    "extended_runs": self.stop_rule.extended_runs,
                }
                if self.stop_rule
                else None
            ),
            "profile": dataclasses.asdict(self.profile),
            "min_effect": self.thresholds.min_effect,
            "unstable_threshold": self.thresholds.unstable_threshold,
            "method": self.method,
            "shard": self.shard.label if self.shard else None,
            "shard_weights": self.shard.weights_source if self.shard else None,
        }


@dataclass(frozen=True)
class LoadedTests:
    tests: tuple[TestDef, ...]
    problems: tuple[tuple[str, Path, TestDefError], ...]  # (test name, file, error)


def load_tests(options: RunOptions) -> LoadedTests:
    tests: list[TestDef] = []
    problems: list[tuple[str, Path, TestDefError]] = []
    seen: dict[str, Path] = {}
    paths = discover(list(options.tests))
    if options.shard is not None:
        chosen = set(options.shard.files)
        paths = [p for p in paths if p in chosen]
    for path in paths:
        name = path.stem
        if options.test_names and name not in options.test_names:
            continue
        try:
            test = load_test(path)
        except TestDefError as e:
            problems.append((name, path, e))
            continue
        if test.name in seen:
            problems.append((test.name, path, _duplicate(test, seen[test.name])))
            continue
        seen[test.name] = path
        tests.append(test)
    return LoadedTests(tuple(tests), tuple(problems))


def _duplicate(test: TestDef, first: Path) -> TestDefError:
    return TestDefError(
        Location(test.path, 1),
        f"duplicate test name {test.name!r} (also {first})",
        hint="test names are file names; rename one of the files",
    )


def selected_queries(test: TestDef, options: RunOptions) -> tuple[TestQuery, ...]:
    if not options.query_indices:
        return test.queries
    return tuple(q for q in test.queries if q.index in options.query_indices)


class Run:
    """Drives the tests through both servers and writes the artifacts as it goes."""

    def __init__(self, options: RunOptions, loaded: LoadedTests) -> None:
        self.options = options
        self.loaded = loaded
        self.writers = Writers(options.out)
        self.manifest: dict[str, object] = {
            "chperf_version": CHPERF_VERSION,
            "run_id": str(uuid.uuid4()),
            "status": "running",
            "start_time": datetime.now(UTC).isoformat(timespec="seconds"),
            "end_time": None,
            "duration_seconds": None,
            "servers": {},
            "machine": machine_facts(),
            "options": options.manifest_options(),
            "warnings": [str(w) for t in loaded.tests for w in t.warnings],
        }
        self._start = time.monotonic()
        machine = self.manifest["machine"]
        assert isinstance(machine, dict)
        for warning in environment_warnings(machine):
            print(f"chperf: warning: {warning}", file=sys.stderr)
            machine["warning"] = warning

    def execute(self) -> None:
        try:
            self._record_parse_problems()
            write_manifest(self.options.out, self.manifest)
            with started_server_sets(
                self.options.reference,
                self.options.patched,
                self.options.processes,
                keep_dir=self.options.keep_servers_dir,
                parent_dir=self.options.servers_dir,
            ) as sets:
                self._write_servers(sets)
                self._run_tests(sets)
                self._set_servers(sets)
            self.manifest["status"] = "complete"
        except BaseException:
            self.manifest["status"] = "interrupted"
            raise
        finally:
            self.writers.close()
            self.manifest["end_time"] = datetime.now(UTC).isoformat(timespec="seconds")
            self.manifest["duration_seconds"] = round(time.monotonic() - self._start, 3)
            write_manifest(self.options.out, self.manifest)

    def _record_parse_problems(self) -> None:
        for name, path, error in self.loaded.problems:
            self.writers.errors.write(ErrorRow(name, WHOLE_TEST, BOTH, STAGE_PARSE, 0, str(error)))
            self.writers.tests.write(TestRow(name, str(path), "error", error.reason, 0.0))

    def _run_tests(self, sets: tuple[ServerPair, ...]) -> None:
        tests = self.loaded.tests
        total = sum(
            len(selected_queries(t, self.options))
            for t in tests
            if self.options.long or not t.is_long
        )
        progress = Progress(total, self.options.runs, redraw=self.options.redraw_progress)
        stop_rule = self.options.stop_rule
        if stop_rule is not None:
            # m of compare's BH step; a shard's merged run has about N times its queries.
            shards = self.options.shard.count if self.options.shard else 1
            stop_rule = dataclasses.replace(stop_rule, queries=total * shards)
        judge = InterimJudge(self.options.thresholds, self.options.method)
        measurer = Measurer(
            sets,
            self.writers,
            self.options.runs,
            self.options.max_query_seconds,
            stop_rule,
            judge,
        )
        measurer.on_restart = lambda: self._write_servers(sets)
        profiler = None
        if self.options.profile.mode != "none":
            timeout = self.options.max_query_seconds
            profiler = Profiler(sets[0], self.options.out, self.options.profile, timeout)
        try:
            if stop_rule is not None:
                # every pair count the stop rule looks at (runner/stopping.py is_checkpoint)
                judge.prepare(range(stop_rule.min_runs, stop_rule.max_runs + 1))
            for test in tests:
                if self._run_test(measurer, progress, test) and profiler is not None:
                    self._profile(profiler, judge, measurer, test, progress)
                self._teardown(measurer, test)
                measurer.samples.clear()
        finally:
            self.manifest["measured_runs_seconds"] = round(measurer.run_seconds, 6)
            self.manifest["wake_queries"] = measurer.wakes
            if profiler is not None:
                self.manifest["profiles"] = profiler.records
                self.manifest["profiling_unavailable"] = profiler.unavailable
                self.manifest["profile_problems"] = profiler.problems
            judge.close()
            measurer.close()
            progress.finish()

    def _set_servers(self, sets: tuple[ServerPair, ...]) -> None:
        """`servers`: the first process of each side (profile runs use these); `processes`:
        every process, the first included, as {side: info} per process set."""
        self.manifest["servers"] = sets[0].infos()
        self.manifest["processes"] = [pair.infos() for pair in sets]

    def _write_servers(self, sets: tuple[ServerPair, ...]) -> None:
        self._set_servers(sets)
        write_manifest(self.options.out, self.manifest)

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
        for query in selected_queries(test, self.options):
            verdict = verdicts.get(query.index)
            wanted = self.options.profile.mode == "all" or verdict in PROFILED_VERDICTS
            if verdict is not None and wanted and profiler.can_profile():
                progress.activity(
                    f"{test.name} query {query.index}",
                    f"profiling ({verdict.value}, up to {profiler.options.seconds:g} s a side)",
                )
                profiler.profile(test, query)

    def _run_test(self, measurer: Measurer, progress: Progress, test: TestDef) -> bool:
        """Set up and measure one test; True when its queries were measured."""
        start = time.monotonic()
        queries = selected_queries(test, self.options)
        for q in queries:
            self.writers.queries.write(
                QueryRow(test.name, q.index, q.sql, test.max_ignored_relative_change)
            )
        if test.is_long and not self.options.long:
            reason = "tagged long; pass --long to run it"
            self.writers.tests.write(TestRow(test.name, str(test.path), "skipped", reason, 0.0))
            return False
        if not queries:
            return False
        status, reason = "ran", ""
        self._on_every_server(measurer, test, _statements(test, ("drop_query",)), stage=None)
        if self._on_every_server(measurer, test, _statements(test, SETUP_KINDS), STAGE_SETUP):
            self._settle(measurer, test, progress)
            for q in queries:
                progress.start_query(test.name, q.index)
                measurer.measure(test, q)
                progress.end_query()
            measurer.collect_query_log(test.name)
        else:
            status, reason = "error", "setup failed; see errors.tsv"
            progress.skip_queries(len(queries))
        wall = time.monotonic() - start
        self.writers.tests.write(TestRow(test.name, str(test.path), status, reason, wall))
        return status == "ran"

    def _settle(self, measurer: Measurer, test: TestDef, progress: Progress) -> None:
        """Wait until no server is merging, then warn if the tables differ in layout."""
        progress.activity(test.name, "setup done, waiting for background merges")
        servers = _every_server(measurer)

        def on(server: tuple[int, str]) -> Settled | Exception:
            process, side = server
            try:
                return settle(measurer.sets[process].side(side).control)
            except Exception as e:  # a dead server shows in the measured runs; say why here
                return e

        with ThreadPoolExecutor(max_workers=len(servers)) as pool:
            results = list(pool.map(on, servers))
        parts: dict[str, dict[str, int]] = {}
        for (process, side), result in zip(servers, results, strict=True):
            name = side if process == 0 else f"{side} #{process + 1}"
            if isinstance(result, Exception):
                self._warn(f"{test.name}: could not check merges on the {name} server: {result}")
                continue
            if not result.merges_done:
                self._warn(
                    f"{test.name}: the {name} server was still merging {SETTLE_TIMEOUT_S:.0f} s "
                    "after the setup; its queries are measured anyway"
                )
            parts[name] = result.parts
        for line in layout_differences(parts):
            self._warn(
                f"{test.name}: {line}. The servers' data differ in layout, which can make "
                "queries differ where the patch did not; fill the tables deterministically "
                "(OPTIMIZE TABLE ... FINAL after the inserts)"
            )

    def _warn(self, message: str) -> None:
        print(f"chperf: warning: {message}", file=sys.stderr)
        warnings = self.manifest["warnings"]
        assert isinstance(warnings, list)
        warnings.append(message)

    def _teardown(self, measurer: Measurer, test: TestDef) -> None:
        if self.options.long or not test.is_long:
            self._on_every_server(
                measurer, test, _statements(test, ("drop_query",)), STAGE_TEARDOWN
            )

    def _on_every_server(
        self, measurer: Measurer, test: TestDef, queries: tuple[Statement, ...], stage: str | None
    ) -> bool:
        """Run setup/teardown queries on every server in parallel; record failures.

        With stage None, failures are ignored (drops before setup may find nothing).
        """
        if not queries:
            return True
        servers = _every_server(measurer)

        def run_on(server: tuple[int, str]) -> tuple[ErrorRow | None, QueryOutcome | None]:
            process, side = server
            return _run_statements(measurer.sets[process], side, test, queries, stage)

        with ThreadPoolExecutor(max_workers=len(servers)) as pool:
            results = dict(zip(servers, pool.map(run_on, servers), strict=True))
        ok = True
        for (process, side), (error, gone) in results.items():
            if error is not None:
                self.writers.errors.write(error)
                ok = False
            if gone is not None:
                where = f"during {test.name} {stage or 'drop'} queries"
                measurer.recover(side, test.name, WHOLE_TEST, where, gone.message, process)
        return ok


def _every_server(measurer: Measurer) -> list[tuple[int, str]]:
    """(process set, side) of every server of the run."""
    return [(process, side) for process in range(len(measurer.sets)) for side in SIDES]


def _statements(test: TestDef, kinds: tuple[str, ...]) -> tuple[Statement, ...]:
    return tuple(s for s in test.statements if s.kind in kinds)


def _run_statements(
    pair: ServerPair, side: str, test: TestDef, queries: tuple[Statement, ...], stage: str | None
) -> tuple[ErrorRow | None, QueryOutcome | None]:
    """The first failure (recorded unless stage is None) and, if the server did not answer,
    the outcome that says so: the main thread restarts the server."""
    executor = HttpExecutor(pair.side(side).process.ports.http, SETUP_TIMEOUT_S)
    settings = dict(test.settings)
    try:
        for number, statement in enumerate(queries):
            qid = f"{test.name}.{stage or 'drop'}{number}"
            if stage == STAGE_SETUP and is_optimize(statement.sql):
                outcome = _optimize(executor, pair.side(side), statement.sql, qid, settings)
            else:
                outcome = executor.execute(statement.sql, qid, settings)
            if outcome.ok:
                continue
            gone = outcome if outcome.server_gone else None
            if stage is None:
                if gone:
                    return None, gone
                continue
            where = f"{statement.location}: <{statement.kind}>"
            number = pair.side(side).process.process
            name = side if number == 0 else f"{side} #{number + 1}"
            message = f"{where} failed on the {name} server: {outcome.message}"
            return ErrorRow(test.name, WHOLE_TEST, side, stage, outcome.error_code, message), gone
    finally:
        executor.close()
    return None, None


def _optimize(
    executor: HttpExecutor, server: Side, sql: str, qid: str, settings: dict[str, str]
) -> QueryOutcome:
    """A setup OPTIMIZE that merges, not one that a running background merge turned into a
    silent no-op (runner/settle.py): wait for merges, run it with optimize_throw_if_noop, and
    try again while "can't OPTIMIZE" coincides with merges. When nothing was merging, the
    OPTIMIZE had nothing to do: it runs once more as written, as ClickHouse itself would."""
    wait_for_merges(server.control)
    if not server.capabilities.optimize_throw_if_noop:
        return executor.execute(sql, qid, settings)
    strict = {**settings, THROW_IF_NOOP: "1"}
    for attempt in range(OPTIMIZE_ATTEMPTS):
        outcome = executor.execute(sql, f"{qid}.try{attempt}", strict)
        if outcome.error_code != CANNOT_ASSIGN_OPTIMIZE or running_merges(server.control) == 0:
            break
        wait_for_merges(server.control)
    if outcome.error_code != CANNOT_ASSIGN_OPTIMIZE:
        return outcome
    return executor.execute(sql, qid, settings)


def pinned(options: RunOptions, loaded: LoadedTests) -> RunOptions:
    """Resolve --pin-cpu against the selected tests (runner/pinning.py) into both sides'
    server specs, and say what was decided."""
    pinning = resolve_pinning(options.pin, loaded.tests, os.sched_getaffinity(0))
    print(f"chperf: servers {pinning.reason}", file=sys.stderr)
    return dataclasses.replace(
        options,
        reference=dataclasses.replace(options.reference, cpus=pinning.cpus),
        patched=dataclasses.replace(options.patched, cpus=pinning.cpus),
        pinning=pinning,
    )


def run(options: RunOptions, on_loaded: Callable[[LoadedTests], None] | None = None) -> Run:
    """Validate everything that can be validated, then run. Raises ChperfError early."""
    prepare_out_dir(options.out, options.force)
    loaded = load_tests(options)
    for test in loaded.tests:
        for warning in test.warnings:
            print(f"chperf: warning: {warning}", file=sys.stderr)
    for _, _, error in loaded.problems:
        print(f"chperf: error: {error} (the test is recorded as an error)", file=sys.stderr)
    if on_loaded:
        on_loaded(loaded)
    if not loaded.tests and not loaded.problems:
        raise ChperfError(
            "no tests selected",
            hint="check --tests and --test; test files are *.xml in ClickHouse's format",
        )
    options = pinned(options, loaded)
    current = Run(options, loaded)
    current.execute()
    return current
