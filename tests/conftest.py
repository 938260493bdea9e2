"""Shared fixtures: the installed ClickHouse server and a way to run the chperf CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from chperf.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


def installed_server() -> Path | None:
    for candidate in ("clickhouse-server", "/usr/sbin/clickhouse-server"):
        found = shutil.which(candidate)
        if found:
            return Path(found)
    return None


# The server binaries the end-to-end tests run against: Debian's 18.16 package and the 26.9
# engine fixture (fixtures/chdb_server.py, installed by `make setup` as tools/bin/...).
MODERN_26_9 = REPO / "tools" / "bin" / "clickhouse-chdb-26.9"
MODERN_26_7 = REPO / "tools" / "bin" / "clickhouse-chdb-26.7"
ENGINES = ("18.16", "26.9")


def engine_binary(engine: str) -> Path:
    if engine == "18.16":
        binary = installed_server()
        if binary is None:  # `make setup` installs it; a test run without it is a broken setup
            pytest.fail("clickhouse-server is not installed; run `make setup`")
        return binary
    modern = {"26.9": MODERN_26_9, "26.7": MODERN_26_7}[engine]
    if not modern.is_file():
        pytest.fail(f"{modern} is missing; run `make setup`")
    return modern


@pytest.fixture(scope="session", params=ENGINES)
def server_binary(request: pytest.FixtureRequest) -> Path:
    """Each end-to-end test runs on both engines."""
    return engine_binary(str(request.param))


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_chperf(args: Sequence[str], timeout: float = 600) -> Completed:
    done = subprocess.run(
        [sys.executable, "-m", "chperf", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


def server_pids(out: Path) -> list[int]:
    manifest = json.loads((out / "run.json").read_text())
    sets = manifest.get("processes") or [manifest.get("servers", {})]
    return [int(s["pid"]) for pair in sets for s in pair.values()]


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration starts real servers (or a real browser)."""
    integration = REPO / "tests" / "integration"
    for item in items:
        if integration in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def signal_handlers_restored() -> Iterator[None]:
    """chperf's main() installs its SIGINT/SIGTERM handlers; pytest gets its own back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


def chperf_main(*argv: str) -> int:
    """chperf's main() in this process: its exit code."""
    try:
        return main(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
