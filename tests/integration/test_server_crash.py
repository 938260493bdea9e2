"""A server killed in the middle of a query, on real servers: the reference's death is the
reference's problem (the query is partial, the check passes); the patched server's fails
the check, with its log tail and the query."""

from __future__ import annotations

import json
import os
import signal
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from artifacts.tables import ERRORS
from artifacts.tsv import read_table
from artifacts.verdicts import read_verdicts
from tests.integration.test_reliability import (
    _no_run_outlives_its_test,  # noqa: F401 -- autouse here too
    manifest,
    processes_under,
    run_rows,
    servers_started,
    start_run,
    wait_for,
)

pytestmark = pytest.mark.integration
SLEEPY_SQL = "SELECT sleep(0.3), count() FROM numbers(1000)"  # sleepy.xml, query 0
RUNNING_SLEEPY = (
    "SELECT count() FROM system.processes "
    "WHERE query LIKE '%sleep(0.3)%' AND query NOT LIKE '%system.processes%'"
)


def running_a_query(http_port: int) -> bool:
    url = f"http://127.0.0.1:{http_port}/?query={urllib.parse.quote(RUNNING_SLEEPY)}"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return int(response.read().strip() or 0) > 0
    except OSError:
        return False


@pytest.mark.parametrize("side", ["reference", "patched"])
def test_a_server_killed_during_a_query_fails_the_check_only_on_the_patched_side(
    tmp_path: Path, server_binary: Path, side: str
) -> None:
    process, out, servers_dir = start_run(
        tmp_path, server_binary, "sleepy.xml", "--runs", "12", "--no-profile"
    )
    wait_for(lambda: servers_started(out) and run_rows(out) >= 2)
    server = manifest(out)["servers"][side]  # type: ignore[index]
    wait_for(lambda: running_a_query(server["http_port"]), timeout=30)
    os.kill(server["pid"], signal.SIGKILL)
    _, stderr = process.communicate(timeout=180)

    deaths = [e for e in read_table(out, ERRORS).rows if e.stage == "server"]
    assert len(deaths) == 1 and deaths[0].server == side
    death = deaths[0].message
    assert f"{side} server (pid {server['pid']}" in death and "exited with code -9" in death
    assert f"query: {SLEEPY_SQL}" in death  # the query it died on
    assert "--- stderr.log" in death  # and its log tail
    verdicts = {v.query_index: v for v in read_verdicts(out).rows}
    assert verdicts[0].verdict == "partial" and f"fails on {side} only" in verdicts[0].reason
    assert verdicts[1].verdict != "partial"  # the next query measured on both sides
    summary = json.loads((out / "summary.json").read_text())
    if side == "reference":
        assert process.returncode == 0, stderr  # the reference's problem
        assert summary["status"] == "success"
    else:
        assert process.returncode == 1, stderr
        assert summary["status"] == "failure"
        assert f"fails on patched only: server on patched: patched server (pid {server['pid']}" in (
            stderr
        )
    assert manifest(out)["status"] == "complete"
    assert not processes_under(servers_dir)
