"""Failures become recorded, explained outcomes, never orphans, on real servers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from artifacts.tables import ERRORS, RUNS, TESTS
from artifacts.tsv import read_table
from artifacts.verdicts import read_verdicts
from tests.conftest import DATA, REPO, process_exists, run_chperf

pytestmark = pytest.mark.integration
LOW_MAX_ROWS = DATA / "overlays" / "low_max_rows"


def processes_under(directory: Path) -> list[int]:
    """PIDs whose command line mentions `directory` (our servers' private parent dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(directory) in cmdline and process_exists(int(entry.name)):
            found.append(int(entry.name))
    return found


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test() -> Iterator[None]:
    """A failed assertion must not leave a run (and its servers) going: kill it by PID; the
    kernel then kills its servers (PR_SET_PDEATHSIG)."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def start_chperf(args: list[str], blocked: set[int] | None = None) -> subprocess.Popen[str]:
    """`blocked`: signals chperf inherits blocked, as from a parent that blocks them."""

    def block() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked or set())

    process = subprocess.Popen(
        [sys.executable, "-m", "chperf", "run", *args],
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=block if blocked else None,
    )
    STARTED.append(process)
    return process


def start_run(
    tmp_path: Path, binary: Path, test: str, *extra: str, blocked: set[int] | None = None
) -> tuple[subprocess.Popen[str], Path, Path]:
    """`chperf run` of one reliability test with private out and servers directories."""
    out, servers_dir = tmp_path / "out", tmp_path / "servers"
    servers_dir.mkdir()
    process = start_chperf(
        ["--tests", str(DATA / "reliability" / test), *extra, "--out", str(out),
         "--servers-dir", str(servers_dir), "--reference", str(binary), "--patched", str(binary)],
        blocked,
    )  # fmt: skip
    return process, out, servers_dir


def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for the run to get there")


def run_rows(out: Path) -> int:
    path = out / "runs.tsv"
    return len(path.read_text().splitlines()) - 1 if path.exists() else 0


def manifest(out: Path) -> dict[str, object]:
    data = json.loads((out / "run.json").read_text())
    assert isinstance(data, dict)
    return data


def patched_pid(out: Path) -> int:
    servers = manifest(out).get("servers")
    assert isinstance(servers, dict) and servers, "servers not started yet"
    return int(servers["patched"]["pid"])


def servers_started(out: Path) -> bool:
    return (out / "run.json").exists() and bool(manifest(out).get("servers"))


def test_patched_server_killed_mid_run_is_restarted_and_recorded(
    tmp_path: Path, server_binary: Path
) -> None:
    process, out, servers_dir = start_run(tmp_path, server_binary, "several.xml", "--runs", "25")
    wait_for(lambda: servers_started(out) and run_rows(out) >= 60)
    first_pid = patched_pid(out)
    os.kill(first_pid, signal.SIGKILL)
    measured_before = run_rows(out)
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 1, stderr  # a crashing patch fails the check

    errors = read_table(out, ERRORS).rows
    deaths = [e for e in errors if e.stage == "server"]
    assert len(deaths) == 1 and deaths[0].server == "patched"
    assert f"pid {first_pid}" in deaths[0].message and "exited with code -9" in deaths[0].message
    runs = read_table(out, RUNS)
    assert not runs.problems and len(runs.rows) >= measured_before
    last = max(r.query_index for r in runs.rows)
    assert {r.server for r in runs.rows if r.query_index == last} == {"reference", "patched"}
    patched = manifest(out)["servers"]["patched"]  # type: ignore[index]
    assert patched["restarts"] == 1 and patched["pid"] != first_pid
    assert patched["incidents"] and f"pid {first_pid}" in patched["incidents"][0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failure"
    assert not processes_under(servers_dir)


def test_a_killed_run_leaves_its_servers_directory_and_the_next_run_removes_it(
    tmp_path: Path, server_binary: Path
) -> None:
    # SIGKILL gives chperf no chance to clean up: its servers die with it (PR_SET_PDEATHSIG),
    # their data stays; the next run under the same parent removes it (artifacts/scratch.py).
    process, out, servers_dir = start_run(tmp_path, server_binary, "several.xml", "--runs", "25")
    wait_for(lambda: servers_started(out) and run_rows(out) >= 4)
    process.kill()
    process.communicate(timeout=30)
    wait_for(lambda: not processes_under(servers_dir))
    (left,) = list(servers_dir.iterdir())
    assert (left / ".chperf-owner").is_file() and (left / "reference").is_dir()

    second = start_chperf(
        ["--tests", str(DATA / "reliability" / "several.xml"), "--query-index", "0",
         "--runs", "6", "--no-profile", "--out", str(tmp_path / "out2"),
         "--servers-dir", str(servers_dir), "--reference", str(server_binary),
         "--patched", str(server_binary)]
    )  # fmt: skip
    _, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    assert f"chperf: removed {left}, the servers' directory of a chperf that was killed" in stderr
    assert list(servers_dir.iterdir()) == []


def test_server_that_stops_answering_is_restarted_and_the_query_recorded(
    tmp_path: Path, server_binary: Path
) -> None:
    process, out, servers_dir = start_run(
        tmp_path, server_binary, "hang.xml", "--runs", "40", "--max-query-seconds", "2"
    )
    wait_for(lambda: servers_started(out) and run_rows(out) >= 4)
    os.kill(patched_pid(out), signal.SIGSTOP)  # alive but silent: a hang
    _, stderr = process.communicate(timeout=180)
    assert process.returncode == 1, stderr
    errors = read_table(out, ERRORS).rows
    hangs = [e for e in errors if e.stage == "server" and e.server == "patched"]
    assert len(hangs) == 1 and "stopped answering" in hangs[0].message
    recorded = [e for e in errors if e.stage == "run" and e.server == "patched"]
    assert recorded and "timed out" in recorded[0].message
    runs = read_table(out, RUNS).rows
    assert {r.server for r in runs if r.query_index == 1} == {"reference", "patched"}
    assert not processes_under(servers_dir)


@pytest.mark.parametrize(
    "sig, code, inherited_blocked",
    [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, False), (signal.SIGTERM, 143, True)],
    ids=["SIGTERM", "SIGINT", "SIGTERM-inherited-blocked"],
)
def test_signal_stops_servers_and_keeps_consistent_artifacts(
    tmp_path: Path, server_binary: Path, sig: signal.Signals, code: int, inherited_blocked: bool
) -> None:
    started = time.monotonic()
    process, out, servers_dir = start_run(
        tmp_path, server_binary, "several.xml", "--runs", "500",
        blocked={sig} if inherited_blocked else None,
    )  # fmt: skip
    wait_for(lambda: servers_started(out) and run_rows(out) >= 10)
    signalled = time.monotonic() - started
    assert process.poll() is None, f"the run ended before the signal ({signalled:.1f} s)"
    process.send_signal(sig)
    if sig == signal.SIGINT:
        time.sleep(0.05)
        process.send_signal(sig)  # an impatient second Ctrl-C
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, (
        f"signalled after {signalled:.1f} s, {run_rows(out)} rows\n{stderr}"
    )
    assert f"chperf: {sig.name} received: stopping the servers" in stderr
    assert manifest(out)["status"] == "interrupted"
    runs = read_table(out, RUNS)
    assert not runs.problems and len(runs.rows) >= 10
    assert not processes_under(servers_dir)
    assert list(servers_dir.iterdir()) == []  # temporary directories removed


def test_server_that_cannot_start_is_an_infrastructure_failure(
    tmp_path: Path, server_binary: Path
) -> None:
    # A missing or unrunnable binary is bad input, refused before anything is written
    # (tests/unit/test_cli_validation.py); a directory the servers cannot live in is not.
    servers_dir = Path("/proc")
    result = run_chperf(
        ["run", "--tests", str(DATA / "reliability" / "several.xml"), "--out",
         str(tmp_path / "out"), "--servers-dir", str(servers_dir),
         "--reference", str(server_binary), "--patched", str(server_binary)]
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "cannot create the servers' directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert not processes_under(tmp_path)


def test_output_directory_holding_another_run_is_refused_before_servers_start(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text('{"schema_version": 1}')
    result = run_chperf(["run", "--tests", str(DATA / "reliability"), "--out", str(out)])
    assert result.returncode == 2
    assert "already holds a run" in result.stderr and "--force" in result.stderr
    unwritable = run_chperf(["run", "--out", "/proc/chperf-out"])
    assert unwritable.returncode == 2 and "/proc/chperf-out" in unwritable.stderr
    assert "Traceback" not in unwritable.stderr


def test_bad_tests_are_recorded_with_file_and_line_while_the_rest_runs(
    tmp_path: Path, server_binary: Path
) -> None:
    out = tmp_path / "out"
    result = run_chperf(
        ["run", "--tests", str(DATA / "bad_tests"), str(DATA / "bad_tests" / "dup"),
         "--runs", "3", "--out", str(out), "--patched-config", str(LOW_MAX_ROWS),
         "--reference", str(server_binary), "--patched", str(server_binary)]
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    errors = {(e.test, e.stage, e.server): e.message for e in read_table(out, ERRORS).rows}
    bad = DATA / "bad_tests"
    assert errors[("malformed", "parse", "both")].startswith(f"{bad}/malformed.xml:4:")
    assert f"{bad}/unknown_placeholder.xml:8:" in errors[("unknown_placeholder", "parse", "both")]
    assert f"{bad}/empty_values.xml:5:" in errors[("empty_values", "parse", "both")]
    assert "duplicate test name 'good'" in errors[("good", "parse", "both")]
    setup = errors[("setup_fails_on_patched", "setup", "patched")]
    assert f"{bad}/setup_fails_on_patched.xml:5: <fill_query>" in setup
    assert ("setup_fails_on_patched", "setup", "reference") not in errors
    # A setup failing on one side only: the test runs on the other, its queries are partial.
    tests = {t.test: (t.status, t.reason) for t in read_table(out, TESTS).rows}
    assert tests["setup_fails_on_patched"] == (
        "ran",
        "setup failed on the patched side: measured on reference only",
    )
    verdicts = {(v.test, v.query_index): v for v in read_verdicts(out).rows}
    partial = verdicts[("setup_fails_on_patched", 0)]
    assert partial.verdict == "partial" and "fails on patched only" in partial.reason
    runs = read_table(out, RUNS).rows
    assert {r.server for r in runs if r.test == "good"} == {"reference", "patched"}
    problems = (out / "report.html").read_text()
    problems = problems[problems.index('id="problems"') : problems.index('id="unstable"')]
    for where in ("malformed.xml:4:", "unknown_placeholder.xml:8:", "empty_values.xml:5:",
                  "duplicate test name", "setup_fails_on_patched.xml:5:"):  # fmt: skip
        assert where in problems, where


ALL_CPUS = frozenset(os.sched_getaffinity(0))
LAST_CPU = max(ALL_CPUS)


@pytest.mark.parametrize(
    ("test", "extra", "cpus", "reason"),
    [
        ("several.xml", ["--pin-cpu", str(LAST_CPU)], {LAST_CPU}, f"--pin-cpu {LAST_CPU}"),
        ("single_threaded.xml", [], {LAST_CPU}, "every test runs with max_threads 1"),
        ("several.xml", [], ALL_CPUS, "does not set max_threads 1"),
        ("single_threaded.xml", ["--pin-cpu", "none"], ALL_CPUS, "--pin-cpu none"),
    ],
    ids=["explicit", "auto-single-threaded", "auto-max-threads-unset", "none"],
)
def test_servers_and_every_thread_they_start_run_only_on_the_pinned_cpus(
    tmp_path: Path, server_binary: Path, test: str, extra: list[str], cpus: set[int], reason: str
) -> None:
    if len(ALL_CPUS) < 2:
        pytest.skip("pinning needs a machine that gives chperf two CPUs")
    # Enough runs to outlast the checks below; SIGTERM ends the run.
    process, out, _ = start_run(tmp_path, server_binary, test, "--runs", "5000", *extra)
    wait_for(lambda: servers_started(out) and run_rows(out) >= 10)
    processes = manifest(out)["processes"]
    assert isinstance(processes, list) and len(processes) == 2
    pids = [int(info["pid"]) for pair in processes for info in pair.values()]
    threads = {pid: list(Path(f"/proc/{pid}/task").iterdir()) for pid in pids}
    assert all(len(tasks) > 5 for tasks in threads.values())  # a server's thread pools
    for pid, tasks in threads.items():
        assert os.sched_getaffinity(pid) == cpus  # the placement chperf gave the process
        placed = []
        for task in tasks:
            with contextlib.suppress(FileNotFoundError):  # a thread may end meanwhile
                affinity = os.sched_getaffinity(int(task.name))
                assert affinity <= cpus, task
                placed.append(affinity == cpus)
        # A modern engine's allocator binds a few background threads to one CPU each, within
        # the placement; every other thread has the placement itself.
        assert sum(placed) >= 0.8 * len(placed), pid
    options = manifest(out)["options"]
    assert isinstance(options, dict)
    pinned = sorted(cpus) if cpus != ALL_CPUS else []
    assert options["pin_cpus"] == pinned
    assert reason in str(options["pin"])
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143
    assert f"chperf: servers {options['pin']}" in stderr


def test_a_cpu_this_machine_lacks_is_a_usage_error(tmp_path: Path) -> None:
    missing = max(os.sched_getaffinity(0)) + 1
    result = run_chperf(["run", "--pin-cpu", f"0,{missing}", "--out", str(tmp_path / "out")])
    assert result.returncode == 2
    assert f"CPU {missing} is not available here" in result.stderr
    unknown = run_chperf(["run", "--pin-cpu", "one"])
    assert unknown.returncode == 2
    assert "expected auto, none or CPU numbers" in unknown.stderr
