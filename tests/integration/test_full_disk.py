"""A run on real servers whose --out fills up mid-run (a tmpfs of 192 KB): the run stops with
exit 3 and one error line naming the file, run.json records the failure and its cause, the
servers are stopped, and what was measured before is whole and judged by `chperf compare`."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts.files import RESERVE_FILE
from artifacts.tables import RUNS
from artifacts.tsv import read_table
from tests.conftest import DATA, run_chperf
from tests.integration.test_reliability import processes_under
from tests.unit.test_full_disk import Tmpfs, assert_whole_files

pytestmark = pytest.mark.integration
NO_SPACE = os.strerror(errno.ENOSPC)


@pytest.fixture()
def full_soon(tmp_path: Path) -> Iterator[Tmpfs]:
    """Room for the run's first files and its reserve, and ~90 KB of rows and monitor samples:
    ~1,000 runs. The first query's 300 runs a side (~49 KB) fit even when a slow machine's
    monitor samples take a third of the room; the second query's do not."""
    fs = Tmpfs(tmp_path / "fs", "192k")
    try:
        yield fs
    finally:
        fs.unmount()


def test_a_run_whose_out_fills_up_fails_with_the_cause_and_keeps_what_it_measured(
    tmp_path: Path, server_binary: Path, full_soon: Tmpfs
) -> None:
    out, servers_dir = full_soon.path / "out", tmp_path / "servers"
    servers_dir.mkdir()
    done = run_chperf(
        ["run", "--tests", str(DATA / "reliability" / "several.xml"), "--runs", "300",
         "--no-profile", "--out", str(out), "--servers-dir", str(servers_dir),
         "--reference", str(server_binary), "--patched", str(server_binary)],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("chperf: error:")]
    assert error.startswith(f"chperf: error: cannot write {out}/"), error
    assert error.endswith(f".tsv: {NO_SPACE}"), error
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["failure"] == error.removeprefix("chperf: error: ")
    assert manifest["servers"]["reference"]["pid"]
    assert not processes_under(servers_dir)
    assert_whole_files(out)
    assert not (out / RESERVE_FILE).exists()
    runs = read_table(out, RUNS)
    assert not runs.problems and len(runs.rows) > 100
    # With room again, compare judges what was measured and fails the check on the failure.
    full_soon.remount("size=64m")
    compared = run_chperf(["compare", str(out)])
    assert compared.returncode == 1, compared.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert "the run failed: cannot write" in summary["message"]
    first = [q for q in summary["queries"] if q["query_index"] == 0]
    assert first and first[0]["runs"] == 300, first
    assert first[0]["reference_median"] is not None
