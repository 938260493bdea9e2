"""Profile runs, after the measured runs: folded stacks of each server running one query, from
`system.trace_log` (query profiler on for these runs only) or, on servers whose profiler does
not sample (18.16 has no trace_log; the chdb engine never samples), `perf record` on its PID
folded with `inferno-collapse-perf`. In the run order of runner/schedule.py, as measured.

Each side's record says how many runs were profiled and what CPU time a sample stands for, so
the report draws both sides per run; why frames have no names (a stripped module) is read from
the modules while the server still runs (runner/symbols.py)."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clickhouse_driver.errors import Error as DriverError
from clickhouse_driver.errors import ServerException

from artifacts.folded import UNKNOWN_FRAME, frame_names
from artifacts.tables import SIDES
from runner.executor import HttpExecutor
from runner.schedule import query_id, run_pair
from runner.servers import ServerPair
from runner.symbols import module_paths, read_module_symbols, why_unnamed
from runner.testdef import TestDef, TestQuery

REPO_ROOT = Path(__file__).resolve().parents[1]
PROFILES_DIR = "profiles"
PERF_FREQUENCY_HZ = 499  # prime, so sampling does not lock onto periodic work
TRACE_LOG_PERIOD_NS = 10_000_000  # 100 samples/s of CPU time per thread
MAX_PROFILE_RUNS = 200  # per side and query: very short queries stop here, not at the time
PERF_ATTACH_S = 0.2  # perf needs a moment to attach before the first profile run
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

PERF_SAMPLE_NS = round(1e9 / PERF_FREQUENCY_HZ)  # cpu-clock: CPU time between two samples
# Without the period field inferno-collapse-perf counts samples, not nanoseconds of period.
PERF_SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
UNNAMED_NOTE_SHARE = 0.01  # a module with fewer of a profile's unnamed frames goes unmentioned
# Frames of no module, seen with perf: return addresses that point nowhere. DWARF unwinding
# (--call-graph dwarf) would follow them, at 30 times the cost of folding (docs/flamegraphs.md).
NO_MODULE_NOTE = (
    "frames in no module are left out: perf follows frame pointers (-g), and code built "
    "without them leaves return addresses that point nowhere"
)
MAX_FAILURE_CHARS = 300  # a server's error message, as recorded in run.json

# Stacks of the profile runs from trace_log, root first. A frame is its demangled symbol, else
# `[module]` (addressToLine gives the object's path when it has no debug info), else
# [unknown]. The introspection functions need allow_introspection_functions, passed with the
# query; a server that refuses them (an older one, a profile forbidding the setting) gets
# UNNAMED_STACK and a note saying why. CPU_ONLY: modern servers also log memory allocations.
TRACE_LOG_STACKS_SQL = """
SELECT {stack} AS stack, count() AS samples
FROM system.trace_log
WHERE query_id IN %(ids)s {cpu_only}
GROUP BY stack
"""
NAMED_STACK = (
    "arrayStringConcat(arrayMap((a, s) -> if(s != '', demangle(s), concat('[', ifNull(nullIf("
    r"replaceRegexpOne(addressToLine(a), '^(?:.*/)?([^/:]*)(?::\\d+)?$', '\\1'), ''), "
    "'unknown'), ']')), arrayReverse(trace), arrayMap(a -> addressToSymbol(a), "
    "arrayReverse(trace))), ';')"
)
UNNAMED_STACK = "arrayStringConcat(arrayMap(a -> '[unknown]', trace), ';')"
CPU_ONLY = "AND toString(trace_type) = 'CPU'"


@dataclass(frozen=True)
class ProfileOptions:
    mode: str = "changed"  # changed (changed and unstable queries), all, none
    seconds: float = 10.0  # per query and side
    budget_seconds: float = 600.0  # all profile runs of the whole run together


@dataclass(frozen=True)
class ProfileRecord:
    test: str
    query_index: int
    side: str
    folded: str  # path relative to OUT
    kind: str  # trace_log or perf
    samples: int
    runs: int = 0  # profile runs that finished on this side: the report draws per run
    seconds: float = 0.0  # their wall time in all
    sample_ns: int = 0  # CPU time one sample stands for
    failure: str = ""  # the server's error when the query failed in a profile run
    unnamed: tuple[str, ...] = ()  # why some sampled frames have no names, per module


@dataclass
class _SideRuns:
    ids: list[str] = field(default_factory=list)
    seconds: float = 0.0
    failure: str = ""

    def done(self, seconds: float) -> bool:
        return bool(self.failure) or self.seconds >= seconds


def tool(name: str) -> str | None:
    local = REPO_ROOT / "tools" / "bin" / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def perf_unavailable_reason() -> str | None:
    """None when `perf record` works here; otherwise why not, in words for the report."""
    perf = shutil.which("perf")
    if perf is None:
        return "perf is not installed (Debian package linux-perf; `make setup` installs it)"
    if tool("inferno-collapse-perf") is None:
        return "inferno-collapse-perf is missing (`make setup` installs inferno into tools/bin)"
    probe = subprocess.run(
        [perf, "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"perf record is not permitted here: {probe.stderr.strip()[-300:]}"
    return None


def folded_name(test: str, query_index: int, side: str) -> str:
    """A file name safe for any test name (hostile ones included), unique by a hash."""
    digest = hashlib.sha256(test.encode()).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', test)[:60]}-{digest}.{query_index}.{side}.folded"


class PerfSession:
    """`perf record` attached to one server PID until stopped. Its data file is chperf's
    until folded: `discard` removes it on every way out (profiler.Profiler._recorders)."""

    def __init__(self, pid: int, data_file: Path) -> None:
        self.data_file = data_file
        self._process = subprocess.Popen(
            # --no-buildid-cache: perf would copy every module it sampled (the engine's 530 MB
            # library) into ~/.debug on each recording; symbols are resolved from the files
            # themselves, which stay in place until folded.
            ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_FREQUENCY_HZ), "-g",
             "--no-buildid-cache", "-p", str(pid), "-o", str(data_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # never read: a pipe could fill and stall perf
        )  # fmt: skip

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def discard(self) -> None:
        """Stop perf (it writes until it exits) and remove what it wrote."""
        self.stop()
        for leftover in (self.data_file, self.data_file.with_name(self.data_file.name + ".old")):
            leftover.unlink(missing_ok=True)

    def fold(self, target: Path) -> int:
        """perf script | inferno-collapse-perf > target; returns the number of samples."""
        collapse = tool("inferno-collapse-perf")
        assert collapse is not None
        with target.open("w") as out:
            script = subprocess.Popen(
                ["perf", "script", "-F", PERF_SCRIPT_FIELDS, "-i", str(self.data_file)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            subprocess.run([collapse], stdin=script.stdout, stdout=out, check=False)
            assert script.stdout is not None
            script.stdout.close()
            script.wait()
        return count_samples(target)


def count_samples(folded: Path) -> int:
    total = 0
    for line in folded.read_text(errors="replace").splitlines():
        _, _, count = line.rpartition(" ")
        if count.isdigit():
            total += int(count)
    return total


def unnamed_notes(folded: Path, kind: str, paths: dict[str, Path]) -> tuple[str, ...]:
    """Why frames of the modules holding more than UNNAMED_NOTE_SHARE of a profile's sampled
    frames have no names, one sentence a module (`paths`: the server's modules by name)."""
    with folded.open(errors="replace") as lines:
        names = frame_names(lines, thread_first=kind == "perf")
    notes = []
    for module, frames in names.unnamed_by_module:
        if frames < UNNAMED_NOTE_SHARE * names.frames:
            continue
        if not module and kind == "perf":
            notes.append(NO_MODULE_NOTE)
        path = paths.get(module)
        if path is None:
            continue
        symbols = read_module_symbols(path)
        if symbols is not None:
            notes.append(why_unnamed(symbols))
    return tuple(notes)


class Profiler:
    def __init__(self, pair: ServerPair, out: Path, options: ProfileOptions, timeout: float):
        self.pair = pair
        self.out = out
        self.options = options
        self.timeout = timeout
        self.spent = 0.0
        self.records: list[ProfileRecord] = []
        self.problems: list[str] = []
        self.unavailable: str | None = None
        # Per side, probed at its first profile: how trace_log is read, and why not symbolized.
        self._trace_log_sql: dict[str, str] = {}
        self._unnamed_reason: dict[str, str] = {}
        uses_perf = not all(pair.side(s).capabilities.query_profiler for s in SIDES)
        if uses_perf:
            self.unavailable = perf_unavailable_reason()
        (out / PROFILES_DIR).mkdir(exist_ok=True)

    def budget_left(self) -> bool:
        return self.spent < self.options.budget_seconds

    def can_profile(self) -> bool:
        return not self.unavailable and self.budget_left()

    def profile(self, test: TestDef, query: TestQuery) -> None:
        if not self.can_profile():
            return
        start = time.monotonic()
        try:
            with self._recorders(test, query) as recorders:
                runs = self._profile_runs(test, query)
                for session in recorders.values():
                    session.stop()
                for side in SIDES:
                    self._save(test, query, side, recorders.get(side), runs[side])
        except (OSError, subprocess.SubprocessError, DriverError) as e:
            self.problems.append(f"profiling {test.name} query {query.index} failed: {e}")
        finally:
            self.spent += time.monotonic() - start

    @contextlib.contextmanager
    def _recorders(self, test: TestDef, query: TestQuery) -> Iterator[dict[str, PerfSession]]:
        """perf on each server whose profiler does not sample; its data files are removed
        however the block ends (folded, failed, or a signal mid-way)."""
        sessions: dict[str, PerfSession] = {}
        try:
            for side in SIDES:
                server = self.pair.side(side)
                if not server.capabilities.query_profiler:
                    data = (
                        self.out
                        / PROFILES_DIR
                        / (folded_name(test.name, query.index, side) + ".data")
                    )
                    sessions[side] = PerfSession(server.process.pid, data)
            if sessions:
                time.sleep(PERF_ATTACH_S)
            yield sessions
        finally:
            for session in sessions.values():
                session.discard()

    def _profile_runs(self, test: TestDef, query: TestQuery) -> dict[str, _SideRuns]:
        executors = {
            s: HttpExecutor(self.pair.side(s).process.ports.http, self.timeout) for s in SIDES
        }
        runs = {s: _SideRuns() for s in SIDES}
        try:
            for run in range(MAX_PROFILE_RUNS):
                active = [s for s in SIDES if not runs[s].done(self.options.seconds)]
                if not active:
                    break
                for slot in run_pair(run, active):
                    qid = query_id(test.name, query.index, f"profile{run}")
                    settings = {**dict(test.settings), **self._profiler_settings(slot.side)}
                    outcome = executors[slot.side].execute(query.sql, qid, settings)
                    side = runs[slot.side]
                    if not outcome.ok:  # stop profiling that side
                        side.failure = outcome.message or "the server did not answer"
                        continue
                    side.seconds += outcome.elapsed
                    side.ids.append(qid)
        finally:
            for executor in executors.values():
                executor.close()
        return runs

    def _profiler_settings(self, side: str) -> dict[str, str]:
        if not self.pair.side(side).capabilities.query_profiler:
            return {}
        return {
            "query_profiler_cpu_time_period_ns": str(TRACE_LOG_PERIOD_NS),
            "query_profiler_real_time_period_ns": "0",
        }

    def _save(
        self,
        test: TestDef,
        query: TestQuery,
        side: str,
        session: PerfSession | None,
        runs: _SideRuns,
    ) -> None:
        target = self.out / PROFILES_DIR / folded_name(test.name, query.index, side)
        unnamed: tuple[str, ...] = ()
        if not runs.ids:  # the query failed in its first profile run: nothing to fold
            target.write_text("")
            samples, kind = 0, "perf" if session is not None else "trace_log"
        elif session is not None:
            samples, kind = session.fold(target), "perf"
        else:
            samples, kind = self._trace_log_stacks(side, runs.ids, target), "trace_log"
            unnamed = tuple(filter(None, [self._unnamed_reason.get(side, "")]))
        if samples:
            paths = module_paths(self.pair.side(side).process.pid)
            unnamed += unnamed_notes(target, kind, paths)
        sample_ns = PERF_SAMPLE_NS if kind == "perf" else TRACE_LOG_PERIOD_NS
        relative = str(target.relative_to(self.out))
        self.records.append(
            ProfileRecord(
                test.name, query.index, side, relative, kind, samples,
                runs=len(runs.ids), seconds=round(runs.seconds, 6), sample_ns=sample_ns,
                failure=runs.failure[:MAX_FAILURE_CHARS], unnamed=unnamed,
            )
        )  # fmt: skip

    def _trace_log_stacks(self, side: str, ids: list[str], target: Path) -> int:
        control = self.pair.side(side).control
        control.flush_logs()
        sql = self._trace_log_sql.get(side) or self._probe_trace_log_sql(side, ids)
        settings = {"allow_introspection_functions": 1} if NAMED_STACK in sql else None
        rows = control.execute(sql, {"ids": tuple(ids)}, settings)
        # A sample without a trace took time all the same.
        lines = (f"{stack or UNKNOWN_FRAME} {int(samples)}\n" for stack, samples in rows)
        target.write_text("".join(lines))
        return sum(int(r[1]) for r in rows)

    def _probe_trace_log_sql(self, side: str, ids: list[str]) -> str:
        """The stacks query this server runs: named frames if it lets chperf symbolize them
        (tried on the profile's own query_ids), else unnamed with the server's reason."""
        control = self.pair.side(side).control
        columns = control.execute(
            "SELECT name FROM system.columns WHERE database = 'system' AND table = 'trace_log'"
        )
        cpu_only = CPU_ONLY if ("trace_type",) in columns else ""
        named = TRACE_LOG_STACKS_SQL.format(stack=NAMED_STACK, cpu_only=cpu_only)
        try:
            control.execute(
                named + " LIMIT 1", {"ids": tuple(ids)}, {"allow_introspection_functions": 1}
            )
            sql = named
        except ServerException as e:
            sql = TRACE_LOG_STACKS_SQL.format(stack=UNNAMED_STACK, cpu_only=cpu_only)
            reason = str(e).strip().splitlines()[0][:MAX_FAILURE_CHARS] if str(e) else repr(e)
            self._unnamed_reason[side] = (
                f"the {side} server does not name trace_log frames, drawn as [unknown] "
                f"(addressToSymbol with allow_introspection_functions failed: {reason})"
            )
        self._trace_log_sql[side] = sql
        return sql
