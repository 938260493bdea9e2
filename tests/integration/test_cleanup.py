"""Every way a run ends (done, failed, SIGINT, SIGTERM) leaves no perf data files and no
temporary directories behind: TMPDIR is private to each test and must end empty."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO
from tests.integration.test_reliability import (
    STARTED,
    _no_run_outlives_its_test,  # noqa: F401 -- autouse here too
    processes_under,
    wait_for,
)

pytestmark = pytest.mark.integration
SEVERAL = DATA / "reliability" / "several.xml"


def start(tmp_path: Path, binary: Path, *extra: str) -> tuple[subprocess.Popen[str], Path, Path]:
    """`chperf run` with TMPDIR private to the test (its servers' directories go there too)."""
    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "chperf", "run", "--tests", str(SEVERAL), "--out", str(out),
         "--reference", str(binary), "--patched", str(binary), *extra],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )  # fmt: skip
    STARTED.append(process)
    return process, out, tmpdir


def perf_data(out: Path) -> list[Path]:
    return sorted((out / "profiles").glob("*.data*")) if (out / "profiles").exists() else []


def assert_nothing_left(out: Path, tmpdir: Path) -> None:
    assert perf_data(out) == []
    assert sorted(tmpdir.iterdir()) == []
    assert not processes_under(tmpdir) and not processes_under(out)  # servers, perf


def test_a_run_that_ends_leaves_its_profiles_and_nothing_else(
    tmp_path: Path, server_binary: Path
) -> None:
    process, out, tmpdir = start(
        tmp_path, server_binary, "--runs", "5", "--profile-all", "--profile-seconds", "0.5"
    )
    _, stderr = process.communicate(timeout=300)
    assert process.returncode in (1, 4), stderr
    assert sorted((out / "profiles").glob("*.folded"))  # perf was there and was folded
    assert_nothing_left(out, tmpdir)


def test_a_run_that_fails_leaves_nothing_behind(tmp_path: Path, server_binary: Path) -> None:
    process, out, tmpdir = start(
        tmp_path, server_binary, "--patched-config", str(DATA / "overlays" / "bad_xml")
    )
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 3, stderr
    assert_nothing_left(out, tmpdir)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_stopped_while_perf_records_leaves_nothing_behind(
    tmp_path: Path, server_binary: Path, sig: signal.Signals, code: int
) -> None:
    process, out, tmpdir = start(
        tmp_path, server_binary, "--runs", "5", "--profile-all", "--profile-seconds", "60"
    )
    wait_for(lambda: bool(perf_data(out)), timeout=120)  # perf is recording
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert_nothing_left(out, tmpdir)
