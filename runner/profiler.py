"""Profile runs, after the measured runs: folded stacks of each server running one query, from
`system.trace_log` (query profiler on for these runs only) or, on servers whose profiler does
not sample (18.16 has no trace_log; the chdb engine never samples), `perf record` on its PID
folded with `inferno-collapse-perf`. ABBA order, as measured."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from artifacts.tables import SIDES
from runner.executor import HttpExecutor
from runner.schedule import abba_pair, query_id
from runner.servers import ServerPair
from runner.testdef import TestDef, TestQuery

REPO_ROOT = Path(__file__).resolve().parents[1]
PROFILES_DIR = "profiles"
PERF_FREQUENCY_HZ = 499  # prime, so sampling does not lock onto periodic work
TRACE_LOG_PERIOD_NS = 10_000_000  # 100 samples/s of CPU time per thread
MAX_PROFILE_RUNS = 200  # per side and query: very short queries stop here, not at the time
PERF_ATTACH_S = 0.2  # perf needs a moment to attach before the first profile run
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

# Modern servers: stacks of one query from trace_log, root first, symbolized and demangled.
TRACE_LOG_STACKS_SQL = """
SELECT arrayStringConcat(arrayMap(a -> demangle(addressToSymbol(a)), arrayReverse(trace)), ';')
       AS stack, count() AS samples
FROM system.trace_log
WHERE query_id IN %(ids)s
GROUP BY stack
"""


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
            ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_FREQUENCY_HZ), "-g",
             "-p", str(pid), "-o", str(data_file)],
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
                ["perf", "script", "-i", str(self.data_file)],
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
                ids = self._profile_runs(test, query)
                for session in recorders.values():
                    session.stop()
                for side in SIDES:
                    self._save(test, query, side, recorders.get(side), ids[side])
        except (OSError, subprocess.SubprocessError) as e:
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

    def _profile_runs(self, test: TestDef, query: TestQuery) -> dict[str, list[str]]:
        executors = {
            s: HttpExecutor(self.pair.side(s).process.ports.http, self.timeout) for s in SIDES
        }
        spent = dict.fromkeys(SIDES, 0.0)
        ids: dict[str, list[str]] = {s: [] for s in SIDES}
        try:
            for run in range(MAX_PROFILE_RUNS):
                active = [s for s in SIDES if spent[s] < self.options.seconds]
                if not active:
                    break
                for slot in abba_pair(run, active):
                    qid = query_id(test.name, query.index, f"profile{run}")
                    settings = {**dict(test.settings), **self._profiler_settings(slot.side)}
                    outcome = executors[slot.side].execute(query.sql, qid, settings)
                    if not outcome.ok:
                        spent[slot.side] = self.options.seconds  # stop profiling that side
                        continue
                    spent[slot.side] += outcome.elapsed
                    ids[slot.side].append(qid)
        finally:
            for executor in executors.values():
                executor.close()
        return ids

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
        ids: list[str],
    ) -> None:
        if not ids:
            return
        target = self.out / PROFILES_DIR / folded_name(test.name, query.index, side)
        if session is not None:
            samples, kind = session.fold(target), "perf"
        else:
            samples, kind = self._trace_log_stacks(side, ids, target), "trace_log"
        relative = str(target.relative_to(self.out))
        self.records.append(ProfileRecord(test.name, query.index, side, relative, kind, samples))

    def _trace_log_stacks(self, side: str, ids: list[str], target: Path) -> int:
        control = self.pair.side(side).control
        control.flush_logs()
        rows = control.execute(
            TRACE_LOG_STACKS_SQL, {"ids": tuple(ids)}, {"allow_introspection_functions": 1}
        )
        target.write_text("".join(f"{stack} {int(samples)}\n" for stack, samples in rows))
        return sum(int(r[1]) for r in rows)
