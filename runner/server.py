"""A ClickHouse server process that chperf starts, watches, restarts and stops by its PID."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from artifacts.errors import InfrastructureError
from runner.serverconfig import LISTEN_HOST, Ports, ServerLayout, write_server_files
from runner.serverlog import (
    ADDRESS_IN_USE,
    LOG_TAIL_LINES,
    LogMark,
    fatal_lines,
    port_taken,
    tail,
)

READY_TIMEOUT_S = 60.0  # an 18.16 server with an empty data dir is ready in ~1 s
STOP_TIMEOUT_S = 20.0  # SIGTERM grace period before SIGKILL
# A server that logged a fatal error exits within ~1 s (18.16 and the 26.9 engine both); one
# still there and silent after this long is not going to become ready.
FATAL_EXIT_GRACE_S = 10.0
# Starts on fresh ports after a port was taken between chperf's choice and the server's bind:
# a race with another program, so one retry nearly always does; three make a loop impossible.
PORT_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1


def default_server_binary() -> str:
    """The installed server: Debian's clickhouse-server, or a single-binary `clickhouse`."""
    for candidate in ("clickhouse-server", "/usr/sbin/clickhouse-server", "clickhouse"):
        found = shutil.which(candidate)
        if found:
            return found
    return "clickhouse-server"


@dataclass(frozen=True)
class ServerSpec:
    side: str  # reference or patched
    binary: Path
    overlays: tuple[Path, ...] = ()
    cpus: tuple[int, ...] = ()  # the CPUs the server may run on (--pin-cpu); (): any


@dataclass(frozen=True)
class Capabilities:
    """What the server can do, probed from its system tables and a sample query, never
    assumed from its version."""

    trace_log: bool  # system.trace_log exists
    profile_events: str  # "map" (the ProfileEvents Map) or "arrays" (ProfileEvents.Names/Values)
    optimize_throw_if_noop: bool = False  # the setting exists (runner/settle.py)
    query_profiler: bool = False  # a probe query left samples in trace_log
    asynchronous_metrics: bool = False  # system.asynchronous_metrics exists
    # What chperf reads or sets that this server lacks: query_log columns, settings.
    missing_query_log_columns: tuple[str, ...] = ()
    unknown_settings: tuple[str, ...] = ()


@dataclass
class ServerInfo:
    side: str
    binary: str
    sha256: str
    version: str
    overlays: list[str]
    capabilities: Capabilities
    tcp_port: int
    http_port: int
    pid: int
    directory: str
    restarts: int = 0
    process: int = 0  # which process of its side (--processes)
    incidents: list[str] = field(default_factory=list)  # deaths and hangs, with restarts
    overlays_sha256: str = ""  # runner/serverconfig.py overlays_digest: "" without overlays


def server_command(binary: Path, config_file: Path) -> list[str]:
    """clickhouse-server takes the config directly; the multi-call binary needs `server`."""
    args = [f"--config-file={config_file}"]
    if "server" in binary.name:
        return [str(binary), *args]
    return [str(binary), "server", *args]


def pick_free_ports(avoid: frozenset[int] = frozenset()) -> Ports:
    """Two ports free now (the OS may give them to another program before the server binds
    them: ServerProcess.wait_ready retries), none of them in `avoid`."""
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < 2:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LISTEN_HOST, 0))
            sockets.append(s)  # held until both are picked: the two differ
            if s.getsockname()[1] in avoid:
                sockets.pop().close()
        tcp, http = (s.getsockname()[1] for s in sockets)
    finally:
        for s in sockets:
            s.close()
    return Ports(tcp=tcp, http=http)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _prepare_child(cpus: tuple[int, ...]) -> None:
    """Runs in the child before exec: the kernel kills the server if chperf itself dies, and
    with --pin-cpu the server and every thread it starts run only on `cpus`."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if cpus:
        os.sched_setaffinity(0, cpus)


class ServerProcess:
    """One running server. Start it with `start()`, always `stop()` it."""

    def __init__(self, spec: ServerSpec, layout: ServerLayout, process: int = 0) -> None:
        self.spec = spec
        self.layout = layout
        self.process = process
        self.ports = pick_free_ports()
        # Ports other servers of the run were given: never taken on a retry.
        self.avoid_ports: frozenset[int] = frozenset()
        self._process: subprocess.Popen[bytes] | None = None
        self._terminated: subprocess.Popen[bytes] | None = None  # the process sent SIGTERM
        self._log_mark = LogMark(())
        self.restarts = 0
        self.incidents: list[str] = []

    @property
    def side(self) -> str:
        return self.spec.side

    @property
    def pid(self) -> int:
        return self._process.pid if self._process else 0

    def describe(self) -> str:
        name = self.side if self.process == 0 else f"{self.side} #{self.process + 1}"
        return f"{name} server (pid {self.pid}, port {self.ports.tcp}, {self.spec.binary})"

    def start(self, ready_timeout: float = READY_TIMEOUT_S) -> None:
        self.launch()
        self.wait_ready(ready_timeout)

    def launch(self) -> None:
        """Write the config and start the process, without waiting for it to answer (several
        servers start in parallel: launch each, then wait_ready each)."""
        self._check_binary()
        write_server_files(self.layout, self.ports, self.spec.overlays)
        self._launch()

    def restart(self, ready_timeout: float = READY_TIMEOUT_S) -> None:
        """Start again from the same data directory and ports (after a death or a hang); a server
        that stopped answering gets SIGKILL: it is not going to shut down cleanly."""
        self.kill()
        self.restarts += 1
        self._launch()
        # Its clients know its ports: a port taken meanwhile fails the restart.
        self.wait_ready(ready_timeout, new_ports=False)

    def relaunch(self) -> None:
        """Start a stopped server again from the same data directory and ports (a planned
        renewal, not an incident: runner/servers.py renew_set); then `wait_ready`."""
        self._launch()

    def _check_binary(self) -> None:
        binary = self.spec.binary
        if not binary.is_file():
            raise InfrastructureError(
                f"{self.side} server binary {binary} does not exist",
                hint="pass --reference/--patched a clickhouse-server or clickhouse binary",
            )
        if not os.access(binary, os.X_OK):
            raise InfrastructureError(
                f"{self.side} server binary {binary} is not executable",
                hint=f"chmod +x {binary}",
            )

    def _launch(self) -> None:
        command = server_command(self.spec.binary, self.layout.config_file)
        self._log_mark = LogMark.at_end_of(self._log_files())
        with self.layout.stderr_file.open("ab") as err:
            # A session of its own: Ctrl-C in the terminal reaches chperf, which then stops
            # the server in order, instead of the server dying mid-write.
            self._process = subprocess.Popen(
                command,
                cwd=self.layout.root,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
                preexec_fn=functools.partial(_prepare_child, self.spec.cpus),  # main thread only
            )

    def is_alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exits_within(self, seconds: float) -> bool:
        """A killed server takes a moment to be reaped after its sockets close."""
        if self._process is None:
            return True
        try:
            self._process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def exit_code(self) -> int | None:
        return self._process.poll() if self._process else None

    def ping(self, timeout: float = 1.0) -> bool:
        url = f"http://{LISTEN_HOST}:{self.ports.http}/?query=SELECT%201"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return bool(response.read().strip() == b"1")
        except (OSError, urllib.error.URLError):
            return False

    def wait_ready(self, timeout: float, new_ports: bool = True) -> None:
        """Until the server answers SELECT 1. It exiting, or logging a fatal error and not
        exiting, ends the wait at once with its own words; a port another program took before
        the server bound it gets fresh ports (`new_ports`, PORT_ATTEMPTS starts in all)."""
        deadline = time.monotonic() + timeout
        attempts, fatal_at = 1, None
        while time.monotonic() < deadline:
            alive = self.is_alive()
            if alive and self.ping():
                return
            since_start = self._log_mark.lines_since()
            fatal = fatal_lines(since_start)
            if fatal and fatal_at is None:
                fatal_at = time.monotonic()
            gave_up = fatal_at is not None and time.monotonic() - fatal_at > FATAL_EXIT_GRACE_S
            if alive and not gave_up:
                time.sleep(0.1)
                continue
            if new_ports and attempts < PORT_ATTEMPTS and port_taken(since_start):
                self._start_on_new_ports()
                attempts, fatal_at = attempts + 1, None
                continue
            if alive:
                self._fail_start(
                    f"logged a fatal error and neither exited nor answered within "
                    f"{FATAL_EXIT_GRACE_S:g} s: {fatal[-1].strip()}"
                )
            self._fail_start(f"exited with code {self.exit_code()} before it was ready")
        self._fail_start(f"did not answer SELECT 1 within {timeout:.0f} s")

    def _start_on_new_ports(self) -> None:
        taken = self.ports
        self.kill()
        self.ports = pick_free_ports(self.avoid_ports | {taken.tcp, taken.http})
        print(
            f"chperf: warning: {self.side} server: port {taken.tcp} or {taken.http} was taken "
            f"by another program before the server bound it ({ADDRESS_IN_USE}); starting it "
            f"again on ports {self.ports.tcp} and {self.ports.http}",
            file=sys.stderr,
        )
        write_server_files(self.layout, self.ports, self.spec.overlays)
        self._launch()

    def _fail_start(self, what: str) -> NoReturn:
        description = self.describe()
        command = " ".join(server_command(self.spec.binary, self.layout.config_file))
        self.stop()
        raise InfrastructureError(
            f"{description} {what}\ncommand: {command}\nlast lines of its logs:\n{self.log_tail()}",
            hint="check the binary and the config overlays; the whole config is in "
            f"{self.layout.root} (rerun with --keep-servers-dir to keep it)",
        )

    def _log_files(self) -> tuple[Path, Path]:
        return (self.layout.error_log_file, self.layout.stderr_file)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        parts = []
        for path in self._log_files():
            text = tail(path, lines)
            if text:
                parts.append(f"--- {path.name}\n{text}")
        return "\n".join(parts) or "(the server wrote no log)"

    def kill(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def terminate(self) -> None:
        """SIGTERM once, without waiting (several servers shut down in parallel: terminate
        each, then stop each). A second SIGTERM would make ClickHouse skip its shutdown."""
        process = self._process
        if process is None or process.poll() is not None or self._terminated is process:
            return
        self._terminated = process
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL after `timeout`; by PID and process group, never by name."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        self.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
