"""chperf started in some directory with relative paths: every one of them means what it
meant there, also where the servers run in directories of their own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from artifacts.tables import ERRORS, RUNS
from artifacts.tsv import read_table
from runner.serverconfig import overlays_digest
from tests.conftest import DATA, engine_binary

pytestmark = pytest.mark.integration


def test_relative_paths_are_taken_from_the_directory_chperf_was_started_in(
    tmp_path: Path,
) -> None:
    start = tmp_path / "start"
    (start / "bin").mkdir(parents=True)
    (start / "bin" / "clickhouse-server").symlink_to(engine_binary("18.16"))
    shutil.copytree(DATA / "overlays" / "low_max_rows", start / "overlay")
    (start / "perf").mkdir()
    shutil.copy(DATA / "runner_small" / "reads_many_rows.xml", start / "perf")
    (start / "servers").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "chperf", "run", "--reference", "bin/clickhouse-server",
         "--patched", "./bin/../bin/clickhouse-server", "--patched-config", "overlay",
         "--tests", "perf", "--servers-dir", "servers", "--keep-servers-dir", "--out", "out",
         "--runs", "3", "--no-profile", "--processes", "1"],
        cwd=start, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    # The overlay's max_rows_to_read (2.5M) stops the patched side's 3M-row query: partial.
    assert done.returncode == 1, done.stderr
    out = start / "out"
    servers = json.loads((out / "run.json").read_text())["servers"]
    assert servers["reference"]["binary"] == str(start / "bin" / "clickhouse-server")
    assert servers["patched"]["overlays"] == [str(start / "overlay")]
    # the overlay's content, wherever it lies: the digest of the repository's own copy
    assert servers["patched"]["overlays_sha256"] == overlays_digest(
        (DATA / "overlays" / "low_max_rows",)
    )
    assert servers["reference"]["overlays_sha256"] == ""
    assert {(r.server, r.query_index) for r in read_table(out, RUNS).rows} == {("reference", 0)}
    errors = read_table(out, ERRORS).rows
    assert any(e.server == "patched" and "maximum: 2500000" in e.message for e in errors), errors
    assert list((start / "servers").glob("chperf-servers-*/reference*"))
