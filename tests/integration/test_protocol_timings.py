"""Protocol timings on real servers (docs/protocols.md): the example test
perf_tests/protocols_large_result.xml run A/A by the CLI on each engine, and an interface that
does not answer recorded as `unavailable` for the side that lacks it."""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path

import pytest

from artifacts.protocols import PROTOCOL_PROBLEMS, PROTOCOL_RUNS, UNAVAILABLE
from artifacts.tables import PATCHED, REFERENCE, SIDES
from artifacts.tsv import read_table
from compare.engine import SqlEngine
from compare.protocols import compare_protocols
from compare.verdict import Thresholds
from runner.budget import Clock, Limits
from runner.measure import Measurer
from runner.protocol_clients import execute
from runner.protocol_runs import ProtocolRuns
from runner.server import ServerSpec
from runner.serverconfig import Ports
from runner.servers import started_servers
from runner.testdef import parse_test
from runner.writers import Writers
from tests.conftest import run_chperf

TEST = "protocols_large_result"
ROWS = 1_000_000
MEASURED = {"faster", "slower", "unstable", "unchanged", "inconclusive"}


@pytest.fixture(scope="module")
def timed_run(server_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("protocols") / "out"
    done = run_chperf(
        ["run", "--reference", str(server_binary), "--patched", str(server_binary),
         "--test", TEST, "--no-profile", "--out", str(out)]
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # A/A: a rare noisy "slower" is possible
    return out


def test_every_protocol_runs_its_pairs_on_both_sides_in_the_run_order(timed_run: Path) -> None:
    runs = read_table(timed_run, PROTOCOL_RUNS)
    assert not runs.problems
    counts = Counter((r.protocol, r.server) for r in runs.rows)
    assert counts == {(p, s): 10 for p in ("native", "http") for s in SIDES}
    native = [r for r in runs.rows if r.protocol == "native"]
    first = [r.server for r in sorted(native, key=lambda r: r.start_time)][:8]
    assert first == [REFERENCE, PATCHED, REFERENCE, PATCHED, PATCHED, REFERENCE, PATCHED, REFERENCE]
    assert {r.run: r.process for r in native} == {n: (n // 2) % 2 for n in range(10)}
    assert not read_table(timed_run, PROTOCOL_PROBLEMS).rows


def test_each_run_has_its_phases_in_order_and_the_bytes_of_the_whole_result(
    timed_run: Path,
) -> None:
    rows = read_table(timed_run, PROTOCOL_RUNS).rows
    for r in rows:
        assert 0 < r.connect_time < r.transfer_time and 0 < r.first_byte_time <= r.transfer_time
    native = [r for r in rows if r.protocol == "native"]
    # Two UInt64 columns alone are 16 bytes a row; the native blocks hold at most 65,536 rows.
    assert min(r.bytes for r in native) > 16 * ROWS
    assert {r.blocks for r in native} == {next(iter(native)).blocks}
    assert next(iter(native)).blocks >= ROWS // 65_536
    http = [r for r in rows if r.protocol == "http"]
    assert all(r.blocks == 0 and r.bytes > 1_000_000 for r in http)
    # The same result both sides: the same bytes, up to the framing of chunks.
    for protocol in (native, http):
        sides = {s: [r.bytes for r in protocol if r.server == s] for s in SIDES}
        assert max(sides[REFERENCE]) <= 1.01 * min(sides[PATCHED])


def test_summary_and_report_have_a_verdict_per_protocol_and_phase(timed_run: Path) -> None:
    summary = json.loads((timed_run / "summary.json").read_text())
    found = {(v["protocol"], v["phase"]): v for v in summary["protocols"]}
    assert set(found) == {
        (p, phase) for p in ("native", "http") for phase in ("connect", "first_byte", "transfer")
    }
    for v in found.values():
        assert v["verdict"] in MEASURED and v["runs"] == 10, v
        assert v["reference_median"] > 0 and v["patched_median"] > 0
    html = (timed_run / "report.html").read_text()
    assert 'id="protocols"' in html and "full transfer" in html


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SMALL = b"""<test>
    <protocols runs="6">native http</protocols>
    <query>SELECT number FROM numbers(100000)</query>
</test>"""


def test_an_interface_that_does_not_answer_is_unavailable_on_that_side_only(
    server_binary: Path, tmp_path: Path
) -> None:
    test = parse_test(tmp_path / "small.xml", SMALL)
    writers = Writers(tmp_path)
    with started_servers(
        ServerSpec(REFERENCE, server_binary),
        ServerSpec(PATCHED, server_binary),
        parent_dir=tmp_path,
    ) as pair:
        measurer = Measurer((pair,), writers, 6, Clock(Limits()))
        process = pair.patched.process
        real = process.ports
        closed = _closed_port()
        process.ports = Ports(tcp=real.tcp, http=closed)  # nothing listens there
        try:
            ProtocolRuns(measurer, lambda _: None).measure(test, test.queries, SIDES)
        finally:
            process.ports = real
            measurer.close()
    writers.close()
    problems = read_table(tmp_path, PROTOCOL_PROBLEMS).rows
    assert [(p.protocol, p.server, p.kind) for p in problems] == [("http", PATCHED, UNAVAILABLE)]
    message = problems[0].message
    assert message.startswith(f"the HTTP interface (port {closed}) of patched server (pid ")
    assert "did not answer SELECT 1: ConnectionRefusedError" in message
    with SqlEngine() as engine:
        verdicts = compare_protocols(tmp_path, engine, Thresholds()).verdicts
    by_protocol = {v.protocol: v for v in verdicts if v.phase == "transfer"}
    assert by_protocol["http"].verdict == "unavailable" and by_protocol["http"].fails_check
    assert "not available on the patched server only" in by_protocol["http"].reason
    assert by_protocol["native"].verdict in MEASURED and by_protocol["native"].runs == 6


def test_a_query_failing_after_its_first_rows_fails_over_both_protocols(
    server_binary: Path, tmp_path: Path
) -> None:
    """HTTP has sent the status line and rows by then: the failure is in the body or in a
    connection cut short, never a timing."""
    sql = "SELECT number, throwIf(number = 900000) FROM numbers(1000000)"
    with started_servers(
        ServerSpec(REFERENCE, server_binary),
        ServerSpec(PATCHED, server_binary),
        parent_dir=tmp_path,
    ) as pair:
        ports = pair.reference.process.ports
        native = execute("native", ports.tcp, sql, "late.native", {"max_threads": "1"}, 15)
        http = execute("http", ports.http, sql, "late.http", {"max_threads": "1"}, 15)
    assert native.timing is None and native.error_code == 395 and "throwIf" in native.message
    assert http.timing is None and not http.unreachable
    # The error as the server wrote it, or why it cannot be read: inside a compressed body.
    readable = http.error_code == 395 and "throwIf" in http.message
    assert readable or "inside a compressed result" in http.message, http


def _listening(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_both_interfaces_listen_on_the_loopback_address_only(
    server_binary: Path, tmp_path: Path
) -> None:
    with started_servers(
        ServerSpec(REFERENCE, server_binary),
        ServerSpec(PATCHED, server_binary),
        parent_dir=tmp_path,
    ) as pair:
        ports = pair.patched.process.ports
        found = {port: _listening(port) for port in (ports.tcp, ports.http)}
    assert found == {ports.tcp: {"0100007F"}, ports.http: {"0100007F"}}  # 127.0.0.1
