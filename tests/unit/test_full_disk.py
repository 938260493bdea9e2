"""A full disk or a read-only directory, for real (a tmpfs of a few hundred KB, mounted for the
test; skipped where mounting is not permitted) and injected at the OS-write level: every
artifact is whole or absent, run.json records the failure and its cause, the stage exits 3
with one error line naming the file, and what was written before stays readable."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts import tables
from artifacts.errors import ExitCode
from artifacts.files import RESERVE_FILE, WriteFailed, write_atomically
from artifacts.tables import ALL_TABLES, QUERIES, TESTS, QueryRow
from artifacts.tsv import TableWriter, read_table
from tests.conftest import DATA
from tests.conftest import chperf_main as chperf

NO_SPACE = os.strerror(errno.ENOSPC)  # "No space left on device"
READ_ONLY = os.strerror(errno.EROFS)  # "Read-only file system"
TRUE = "/bin/true"  # a binary that passes the checks; no test here starts a server
# A long query text: each queries.tsv row takes ~4 KB, so a few fill a small file system.
LONG_TEST = """<test>
    <tags><tag>long</tag></tags>
    <query>SELECT {n} /* {padding} */</query>
</test>
"""


class Tmpfs:
    """A tmpfs of `size` mounted on `path` for one test."""

    def __init__(self, path: Path, size: str) -> None:
        path.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        self.path = path

    def remount(self, options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(self.path)], check=True)

    def unmount(self) -> None:
        # Lazily: a file a failed test left open must not keep the mount behind.
        subprocess.run(["umount", "--lazy", str(self.path)], check=True)


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Tmpfs]:
    fs = Tmpfs(tmp_path / "fs", "160k")
    try:
        yield fs
    finally:
        fs.unmount()


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("chperf: error:")]


def assert_whole_files(out: Path) -> None:
    """Every table ends with a whole line, and no temporary file is left."""
    for path in out.iterdir():
        assert not path.name.endswith(".tmp"), path
        if path.suffix == ".tsv":
            text = path.read_text()
            assert text.endswith("\n"), f"{path.name} ends mid-line: {text[-40:]!r}"


def long_tests(directory: Path, count: int) -> Path:
    directory.mkdir()
    for n in range(count):
        text = LONG_TEST.format(n=n, padding="x" * 4000)
        (directory / f"t{n:02}.xml").write_text(text)
    return directory


# --- the table writer ------------------------------------------------------------------------


def test_a_table_that_fills_the_disk_keeps_whole_rows_and_names_the_file(
    small_fs: Tmpfs,
) -> None:
    writer = TableWriter(small_fs.path, QUERIES)
    written = 0
    with pytest.raises(WriteFailed) as failed:
        for n in range(1000):
            writer.write(QueryRow("t", n, "SELECT 1 /* " + "x" * 1000 + " */", None))
            written += 1
    writer.close()
    assert str(failed.value).splitlines()[0] == (
        f"cannot write {small_fs.path / 'queries.tsv'}: {NO_SPACE}"
    )
    assert failed.value.exit_code is ExitCode.INFRASTRUCTURE
    contents = read_table(small_fs.path, QUERIES)
    assert not contents.problems
    assert [r.query_index for r in contents.rows] == list(range(written))
    assert 10 < written < 1000


def test_a_short_write_then_a_failure_is_cut_back_to_the_last_whole_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a disk that fills mid-write does: part of the row lands, then ENOSPC."""
    writer = TableWriter(tmp_path, TESTS)
    first = tables.TestRow("a", "a.xml", "ran", "", 1.0)
    writer.write(first)
    real_write = os.write
    calls = 0

    def filling(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[:7]))  # a short write: half a row
        raise OSError(errno.ENOSPC, NO_SPACE)

    monkeypatch.setattr(os, "write", filling)
    with pytest.raises(WriteFailed, match=f"tests.tsv: {NO_SPACE}"):
        writer.write(tables.TestRow("b", "b.xml", "ran", "", 2.0))
    monkeypatch.undo()
    writer.close()
    contents = read_table(tmp_path, TESTS)
    assert contents.rows == (first,) and not contents.problems


def test_a_whole_file_that_does_not_fit_leaves_the_old_one_and_no_temporary(
    small_fs: Tmpfs,
) -> None:
    path = write_atomically(small_fs.path / "summary.json", '{"old": true}\n')
    with pytest.raises(WriteFailed, match=f"summary.json: {NO_SPACE}"):
        write_atomically(path, "x" * 400_000)
    assert path.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in small_fs.path.iterdir()) == ["summary.json"]


# --- chperf run ------------------------------------------------------------------------------


def test_a_run_that_fills_the_disk_records_the_failure_and_exits_3_naming_the_file(
    tmp_path: Path, small_fs: Tmpfs, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = long_tests(tmp_path / "tests", 60)  # ~240 KB of queries.tsv for ~50 KB free
    out = small_fs.path / "out"
    code = chperf("run", "--tests", str(tests), "--out", str(out), "--reference", TRUE,
                  "--patched", TRUE, "--no-profile")  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.INFRASTRUCTURE, err
    assert error_lines(err) == [f"chperf: error: cannot write {out / 'queries.tsv'}: {NO_SPACE}"]
    assert "internal error" not in err
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["failure"] == f"cannot write {out / 'queries.tsv'}: {NO_SPACE}"
    assert_whole_files(out)
    assert not (out / RESERVE_FILE).exists()
    listed = read_table(out, QUERIES)
    assert not listed.problems and 0 < len(listed.rows) < 60
    # With room again, compare reads what was written and fails the check on the failed run.
    small_fs.remount("size=4m")
    assert chperf("compare", str(out)) == ExitCode.CHECK_FAILED
    summary = json.loads((out / "summary.json").read_text())
    assert f"the run failed: cannot write {out / 'queries.tsv'}" in summary["message"]
    assert chperf("report", str(out)) == ExitCode.OK  # summary.json says failure already
    report = (out / "report.html").read_text()
    assert f"the run is failed (cannot write {out / 'queries.tsv'}: {NO_SPACE})" in report


def test_a_table_write_refused_mid_run_fails_the_run_with_the_cause_in_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory that turns read-only mid-run (injected: root writes through chmod): the
    tables' writes fail after a few rows; run.json, written otherwise, says why."""
    tests = long_tests(tmp_path / "tests", 5)
    out = tmp_path / "out"
    real_write = os.write
    calls = 0

    def turning_read_only(fd: int, data: bytes) -> int:
        nonlocal calls
        calls += 1
        if calls > len(ALL_TABLES) + 3:  # every table's header and the first rows got through
            raise OSError(errno.EROFS, READ_ONLY)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", turning_read_only)
    code = chperf("run", "--tests", str(tests), "--out", str(out), "--reference", TRUE,
                  "--patched", TRUE, "--no-profile")  # fmt: skip
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == ExitCode.INFRASTRUCTURE, err
    [line] = error_lines(err)
    assert line.startswith(f"chperf: error: cannot write {out}/") and line.endswith(READ_ONLY)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "failed" and manifest["failure"].endswith(READ_ONLY)
    assert_whole_files(out)


# --- chperf compare and report ---------------------------------------------------------------


def test_compare_on_a_full_disk_exits_3_naming_the_file_and_leaves_nothing_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = Tmpfs(tmp_path / "fs", "36k")  # the run's tables and run.json, and 4 KB more
    try:
        out = fs.path / "out"
        shutil.copytree(DATA / "compare_small", out)
        (out / "summary.json").write_text('{"status": "success"}')  # an earlier compare's
        code = chperf("compare", str(out))
        err = capsys.readouterr().err
        assert code == ExitCode.INFRASTRUCTURE, err
        [line] = error_lines(err)
        assert line.startswith(f"chperf: error: cannot write {out}/") and line.endswith(NO_SPACE)
        assert not (out / "summary.json").exists()
        assert_whole_files(out)
        fs.remount("size=4m")
        assert chperf("compare", str(out)) == ExitCode.CHECK_FAILED  # the data's own verdicts
        assert json.loads((out / "summary.json").read_text())["status"] == "failure"
    finally:
        fs.unmount()


def test_compare_and_report_in_a_read_only_directory_exit_3_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = Tmpfs(tmp_path / "fs", "4m")
    try:
        out = fs.path / "out"
        shutil.copytree(DATA / "compare_small", out)
        assert chperf("compare", str(out)) == ExitCode.CHECK_FAILED
        capsys.readouterr()
        fs.remount("ro")
        assert chperf("compare", str(out)) == ExitCode.INFRASTRUCTURE
        assert error_lines(capsys.readouterr().err) == [
            f"chperf: error: cannot remove {out / 'verdicts.tsv'}: {READ_ONLY}"
        ]
        assert chperf("report", str(out)) == ExitCode.INFRASTRUCTURE
        [line] = error_lines(capsys.readouterr().err)
        assert line.startswith(f"chperf: error: cannot write {out}/") and line.endswith(READ_ONLY)
        fs.remount("rw")
    finally:
        fs.unmount()


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")
