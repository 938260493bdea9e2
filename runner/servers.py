"""The reference and patched servers of one run, started together and always stopped."""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from artifacts.console import console_text
from artifacts.errors import InfrastructureError
from artifacts.scratch import disown, make_scratch, sweep
from artifacts.tables import PATCHED, REFERENCE
from runner.control import ControlClient
from runner.schedule import first_run, run_pair
from runner.server import (
    READY_TIMEOUT_S,
    Capabilities,
    ServerInfo,
    ServerProcess,
    ServerSpec,
    pick_free_ports,
    sha256_of,
)
from runner.serverconfig import ServerLayout, overlays_digest

# The servers' data directories: under --servers-dir or TMPDIR (artifacts/scratch.py).
SERVERS_PREFIX = "chperf-servers-"


@dataclass
class Side:
    process: ServerProcess
    control: ControlClient
    version: str
    capabilities: Capabilities
    sha256: str
    overlays_sha256: str  # read once at the start, as the binary's sha256

    def info(self) -> ServerInfo:
        p = self.process
        return ServerInfo(
            side=p.side,
            binary=str(p.spec.binary),
            sha256=self.sha256,
            version=self.version,
            overlays=[str(o) for o in p.spec.overlays],
            capabilities=self.capabilities,
            tcp_port=p.ports.tcp,
            http_port=p.ports.http,
            pid=p.pid,
            directory=str(p.layout.root),
            restarts=p.restarts,
            incidents=list(p.incidents),
            process=p.process,
            overlays_sha256=self.overlays_sha256,
        )


@dataclass
class ServerPair:
    reference: Side
    patched: Side
    root: Path

    def side(self, name: str) -> Side:
        return self.reference if name == REFERENCE else self.patched

    def infos(self) -> dict[str, ServerInfo]:
        return {REFERENCE: self.reference.info(), PATCHED: self.patched.info()}


def _connect(process: ServerProcess) -> Side:
    control = ControlClient(process.ports.tcp)
    try:
        version = control.version()
        capabilities = control.detect_capabilities()
    except Exception as e:  # any driver error here means the server is not usable
        control.close()
        raise InfrastructureError(
            f"{process.describe()} started but does not answer control queries: {e}\n"
            f"last lines of its logs:\n{process.log_tail()}"
        ) from e
    return Side(
        process, control, version, capabilities, sha256_of(process.spec.binary),
        overlays_digest(process.spec.overlays),
    )  # fmt: skip


@contextlib.contextmanager
def started_servers(
    reference: ServerSpec,
    patched: ServerSpec,
    *,
    keep_dir: bool = False,
    parent_dir: Path | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[ServerPair]:
    with started_server_sets(
        reference,
        patched,
        1,
        keep_dir=keep_dir,
        parent_dir=parent_dir,
        ready_timeout=ready_timeout,
    ) as sets:
        yield sets[0]


def process_directory(side: str, process: int) -> str:
    return side if process == 0 else f"{side}-{process + 1}"


def renew_set(pair: ServerPair, ready_timeout: float = READY_TIMEOUT_S) -> float:
    """Both servers of `pair` as fresh processes after a clean shutdown, with their data
    directories, ports and tables: a process whose history is only what comes next. The seconds
    it took (`--renew-set`; why it is a study option: docs/method.md "Two server processes a
    side")."""
    start = time.monotonic()
    sides = (pair.reference, pair.patched)
    for side in sides:
        side.control.close()
        side.process.terminate()
    for side in sides:
        side.process.stop()
    for side in sides:
        side.process.relaunch()
    for side in sides:
        side.process.wait_ready(ready_timeout, new_ports=False)
    return time.monotonic() - start


@contextlib.contextmanager
def started_server_sets(
    reference: ServerSpec,
    patched: ServerSpec,
    count: int,
    *,
    keep_dir: bool = False,
    parent_dir: Path | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[tuple[ServerPair, ...]]:
    """Start `count` sets of a reference and a patched server, each a process of its own in a
    private directory; stop them all by PID whatever happens (a second Ctrl-C meanwhile is
    ignored). Processes of one binary can differ by 5-25% for minutes; a second set tells that
    from a change (bench/bench_aa.py, docs/method.md "Two server processes a side")."""
    for stale in sweep(SERVERS_PREFIX, parent_dir):
        print(
            f"chperf: removed {console_text(str(stale), 1000)}, the servers' directory of a "
            "chperf that was killed",
            file=sys.stderr,
        )
    try:
        root = make_scratch(SERVERS_PREFIX, parent_dir)  # mode 0700
    except OSError as e:
        raise InfrastructureError(
            f"cannot create the servers' directory under {parent_dir or tempfile.gettempdir()}:"
            f" {e.strerror}",
            hint="point --servers-dir (or TMPDIR) at a writable directory",
        ) from e
    processes: list[ServerProcess] = []
    sides: list[Side] = []
    try:  # from here on the directory is removed whatever happens (a signal included)
        # Set k starts its sides in the order its first measured run uses them.
        processes.extend(
            ServerProcess(spec, ServerLayout(root / process_directory(spec.side, number)), number)
            for number in range(count)
            for spec in _in_run_order((reference, patched), number)
        )
        _distinct_ports(processes)
        for process in processes:
            process.launch()
        for process in processes:
            process.wait_ready(ready_timeout)
        for process in processes:
            sides.append(_connect(process))
        by_server = {(s.process.process, s.process.side): s for s in sides}
        yield tuple(
            ServerPair(by_server[number, REFERENCE], by_server[number, PATCHED], root)
            for number in range(count)
        )
    finally:
        previous = _ignore_interrupts()
        try:
            for side in sides:
                side.control.close()
            for process in processes:
                process.terminate()
            for process in processes:
                process.stop()
            if keep_dir:
                with contextlib.suppress(OSError):
                    disown(root)
                print(
                    f"chperf: server directories kept in {console_text(str(root), 1000)}",
                    file=sys.stderr,
                )
            else:
                shutil.rmtree(root, ignore_errors=True)
        finally:
            _restore_interrupts(previous)


def _in_run_order(specs: tuple[ServerSpec, ServerSpec], number: int) -> list[ServerSpec]:
    first = run_pair(first_run(number))[0].side
    return sorted(specs, key=lambda spec: spec.side != first)


def _distinct_ports(processes: list[ServerProcess]) -> None:
    """Each process picked free ports on its own; the OS may hand a just-released port out
    again, so pick again for a process whose ports another one already has. A process that
    must move to fresh ports later (wait_ready) avoids the others' ports."""
    taken: set[int] = set()
    for process in processes:
        while {process.ports.tcp, process.ports.http} & taken:
            process.ports = pick_free_ports(frozenset(taken))
        taken |= {process.ports.tcp, process.ports.http}
    for process in processes:  # a server started again on fresh ports keeps clear of them
        process.avoid_ports = frozenset(taken - {process.ports.tcp, process.ports.http})


Handlers = tuple[object, object]


def _ignore_interrupts() -> Handlers:
    return (
        signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )


def _restore_interrupts(previous: Handlers) -> None:
    signal.signal(signal.SIGINT, previous[0])  # type: ignore[arg-type]
    signal.signal(signal.SIGTERM, previous[1])  # type: ignore[arg-type]
