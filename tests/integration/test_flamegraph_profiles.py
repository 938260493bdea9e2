"""Profiles on the real servers: trace_log's symbolizing query on the modern engine (which
refuses or allows introspection functions as its users' profile says), and a profile run of
one short query on the 18.16 package, from perf to the per-run flame graphs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts.tables import PATCHED, REFERENCE
from runner.profiler import NAMED_STACK, PERF_SAMPLE_NS, ProfileOptions, Profiler
from runner.server import ServerSpec
from runner.servers import ServerPair, started_servers
from tests.conftest import DATA, engine_binary, installed_server, run_chperf

pytestmark = pytest.mark.integration

FORBID_INTROSPECTION = """<?xml version="1.0"?>
<clickhouse>
    <profiles><default>
        <allow_introspection_functions>0</allow_introspection_functions>
        <constraints><allow_introspection_functions><readonly/></allow_introspection_functions>
        </constraints>
    </default></profiles>
</clickhouse>
"""


@pytest.fixture(scope="module")
def modern(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPair]:
    """The 26.9 engine; the patched side's users may not use introspection functions."""
    overlay = tmp_path_factory.mktemp("forbid") / "users.d"
    overlay.mkdir()
    (overlay / "forbid.xml").write_text(FORBID_INTROSPECTION)
    binary = engine_binary("26.9")
    with started_servers(
        ServerSpec(REFERENCE, binary), ServerSpec(PATCHED, binary, (overlay.parent,))
    ) as pair:
        yield pair


def test_trace_log_frames_get_a_name_or_their_module_on_the_modern_engine(
    modern: ServerPair,
) -> None:
    # system.stack_trace holds real stacks of the engine's threads, in trace_log's form.
    rows = modern.reference.control.execute(
        f"SELECT {NAMED_STACK} FROM system.stack_trace WHERE notEmpty(trace)",
        None,
        {"allow_introspection_functions": 1},
    )
    frames = [frame for (stack,) in rows for frame in stack.split(";")]
    assert frames and all(frames)
    # The engine library is stripped: its frames carry the module's name, not ''.
    assert "[_chdb.abi3.so]" in frames


def test_a_server_refusing_introspection_gets_unnamed_frames_and_the_reason(
    modern: ServerPair, tmp_path: Path
) -> None:
    profiler = Profiler(modern, tmp_path, ProfileOptions(), timeout=30)
    for side in (REFERENCE, PATCHED):
        target = tmp_path / f"{side}.folded"
        # A query_id without samples: the stacks query runs, and finds nothing.
        assert profiler._trace_log_stacks(side, ["chperf-no-such-query"], target) == 0
        assert target.read_text() == ""
    assert REFERENCE not in profiler._unnamed_reason
    reason = profiler._unnamed_reason[PATCHED]
    assert reason.startswith("the patched server does not name trace_log frames")
    assert "allow_introspection_functions" in reason


def test_a_profile_of_one_short_query_on_the_1816_server_is_drawn_per_run(
    tmp_path: Path,
) -> None:
    server = installed_server()
    if server is None:
        pytest.skip("clickhouse-server 18.16 is not installed")
    out = tmp_path / "out"
    done = run_chperf(
        ["run", "--reference", str(server), "--patched", str(server),
         "--tests", str(DATA / "modern" / "both_sides.xml"), "--runs", "6",
         "--profile-all", "--profile-seconds", "1", "--out", str(out)]
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    manifest = json.loads((out / "run.json").read_text())
    if manifest["profiling_unavailable"]:
        pytest.skip(f"perf: {manifest['profiling_unavailable']}")
    records = {p["side"]: p for p in manifest["profiles"]}
    assert set(records) == {REFERENCE, PATCHED}
    for record in records.values():
        assert record["kind"] == "perf" and record["sample_ns"] == PERF_SAMPLE_NS
        assert record["runs"] >= 1 and record["seconds"] > 0 and record["failure"] == ""
        assert record["samples"] > 0
        assert any("libclickhouse.so.18.16.1" in u and "stripped" in u for u in record["unnamed"])
    svgs = {p.name.split(".")[-2]: p for p in (out / "flamegraphs").glob("*.svg")}
    assert set(svgs) == {"reference", "patched", "diff", "diff-reverse"}
    for side in (REFERENCE, PATCHED):
        text = svgs[side].read_text()
        ET.fromstring(text)  # valid XML
        assert f"over {records[side]['runs']} profile runs (perf" in text
        assert "µs of CPU per run" in text and "DB::" in text
