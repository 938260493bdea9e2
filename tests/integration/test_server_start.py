"""A server that cannot start says why at once, in its own words; a port another program
takes between chperf's choice and the server's bind is retried on fresh ports. Real servers."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner.server
from artifacts.errors import InfrastructureError
from runner.server import PORT_ATTEMPTS, READY_TIMEOUT_S, ServerProcess, ServerSpec
from runner.serverconfig import LISTEN_HOST, Ports, ServerLayout
from tests.conftest import DATA, process_exists, run_chperf

pytestmark = pytest.mark.integration
OVERLAYS = DATA / "overlays"
# What each engine says about each bad overlay, in its own log or on its stderr.
SERVER_SAYS = {
    "bad_xml": "No element found",
    "unknown_setting": "no_such_setting_chperf",
}


def chperf_run(tmp_path: Path, binary: Path, *extra: str) -> tuple[int, str, float]:
    started = time.monotonic()
    result = run_chperf(
        ["run", "--tests", str(DATA / "reliability" / "several.xml"), "--runs", "3",
         "--no-profile", "--out", str(tmp_path / "out"), "--servers-dir", str(tmp_path),
         "--reference", str(binary), "--patched", str(binary), *extra]
    )  # fmt: skip
    return result.returncode, result.stderr, time.monotonic() - started


def failed_pid(stderr: str) -> int:
    found = re.search(r"patched server \(pid (\d+), port \d+", stderr)
    assert found, stderr
    return int(found.group(1))


@pytest.mark.parametrize("overlay", sorted(SERVER_SAYS))
def test_a_bad_overlay_fails_the_run_at_once_with_the_servers_own_message(
    tmp_path: Path, server_binary: Path, overlay: str
) -> None:
    code, stderr, seconds = chperf_run(
        tmp_path, server_binary, "--patched-config", str(OVERLAYS / overlay)
    )
    assert code == 3, stderr
    assert "exited with code" in stderr and "before it was ready" in stderr
    assert SERVER_SAYS[overlay] in stderr
    assert "Traceback" not in stderr
    assert seconds < READY_TIMEOUT_S / 2  # not the readiness timeout: the exit ended the wait
    manifest = json.loads((tmp_path / "out" / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert "patched server" in manifest["failure"] and SERVER_SAYS[overlay] in manifest["failure"]
    assert not process_exists(failed_pid(stderr))


def test_a_server_that_logs_a_fatal_error_and_lingers_is_failed_without_the_timeout(
    tmp_path: Path, server_binary: Path
) -> None:
    """A wrapper (a supervisor, say) that outlives the server it started: the server's fatal
    error is in the log, the process chperf watches neither exits nor answers."""
    wrapper = tmp_path / "bin" / server_binary.name  # same name: the same command line form
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\n"{server_binary}" "$@"\nexec sleep 600\n')
    wrapper.chmod(0o755)
    code, stderr, seconds = chperf_run(
        tmp_path, wrapper, "--patched-config", str(OVERLAYS / "unknown_setting")
    )
    assert code == 3, stderr
    assert "logged a fatal error and neither exited nor answered within" in stderr
    assert "no_such_setting_chperf" in stderr
    assert seconds < READY_TIMEOUT_S / 2
    assert not process_exists(failed_pid(stderr))  # the lingering process group was stopped


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind((LISTEN_HOST, 0))
        held.listen()
        yield held.getsockname()[1]


def server_on(tmp_path: Path, binary: Path, ports: Ports) -> ServerProcess:
    server = ServerProcess(ServerSpec("patched", binary), ServerLayout(tmp_path / "patched"))
    server.ports = ports
    return server


@pytest.mark.parametrize("taken", ["tcp", "http"])
def test_a_port_taken_before_the_server_binds_it_is_retried_on_other_ports(
    tmp_path: Path,
    server_binary: Path,
    held_port: int,
    taken: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    free = runner.server.pick_free_ports()  # the held port is bound: never picked
    ports = Ports(held_port, free.http) if taken == "tcp" else Ports(free.tcp, held_port)
    server = server_on(tmp_path, server_binary, ports)
    try:
        server.start()
        assert server.ping()
        assert held_port not in (server.ports.tcp, server.ports.http)
        assert server.restarts == 0 and not server.incidents
    finally:
        server.stop()
    warning = capsys.readouterr().err
    assert f"port {ports.tcp} or {ports.http} was taken by another program" in warning
    assert f"again on ports {server.ports.tcp} and {server.ports.http}" in warning


def test_a_port_taken_on_every_attempt_fails_with_the_servers_message(
    tmp_path: Path, server_binary: Path, held_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = Ports(held_port, runner.server.pick_free_ports().http)
    picked: list[Ports] = []

    def always_taken(avoid: frozenset[int] = frozenset()) -> Ports:
        picked.append(ports)
        return ports

    server = server_on(tmp_path, server_binary, ports)
    monkeypatch.setattr(runner.server, "pick_free_ports", always_taken)
    with pytest.raises(InfrastructureError) as failure:
        server.start()
    assert len(picked) == PORT_ATTEMPTS - 1  # bounded: the first start and its retries
    assert "before it was ready" in failure.value.message
    assert "Address already in use" in failure.value.message
    assert not server.is_alive()
