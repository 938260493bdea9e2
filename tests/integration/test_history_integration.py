"""History: a third real ClickHouse server as the history database."""

from __future__ import annotations

import hashlib
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts.tables import RUNS
from artifacts.tsv import read_table
from ci.history.store import HistoryStore
from ci.history.target import parse_url
from runner.server import ServerProcess, ServerSpec, pick_free_ports
from runner.serverconfig import ServerLayout
from tests.conftest import DATA, process_exists, run_chperf

pytestmark = pytest.mark.integration
TABLES = ("runs", "verdicts", "run_times", "metrics", "load_levels")


@pytest.fixture(scope="module")
def history_server(
    tmp_path_factory: pytest.TempPathFactory, server_binary: Path
) -> Iterator[ServerProcess]:
    server = ServerProcess(
        ServerSpec("history", server_binary),
        ServerLayout(tmp_path_factory.mktemp("history") / "server"),
    )
    try:
        server.start()
        yield server
    finally:
        pid = server.pid
        server.stop()  # by its own PID and process group
        assert not process_exists(pid)


@pytest.fixture(scope="module")
def history_url(history_server: ServerProcess) -> str:
    return f"clickhouse://default@127.0.0.1:{history_server.ports.tcp}/chperf_test"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, server_binary: Path) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    result = run_chperf(
        ["run", "--tests", str(DATA / "runner_small"), "--runs", "3", "--out", str(out),
         "--reference", str(server_binary), "--patched", str(server_binary),
         "--patched-config", str(DATA / "overlays" / "low_max_rows")]
    )  # fmt: skip
    assert result.returncode in (1, 4), result.stderr
    return out


def _counts(url: str, run_id: str) -> dict[str, int]:
    store = HistoryStore(parse_url(url))
    try:
        return {t: store.count_rows(t, run_id) for t in TABLES}
    finally:
        store.close()


def _digests(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in out.rglob("*")
        if p.is_file()
    }


def _run_id(out: Path) -> str:
    import json

    return str(json.loads((out / "run.json").read_text())["run_id"])


def test_uploading_the_same_run_twice_does_not_duplicate_rows(
    history_url: str, real_run: Path
) -> None:
    first = run_chperf(["upload", str(real_run), "--history-url", history_url, "--label", "pr=7"])
    assert first.returncode == 0, first.stderr
    counts = _counts(history_url, _run_id(real_run))
    assert counts["runs"] == 1
    assert counts["run_times"] == len(read_table(real_run, RUNS).rows)
    assert counts["verdicts"] == 4  # small: 3 queries, reads_many_rows: 1
    assert counts["metrics"] > 0
    second = run_chperf(["upload", str(real_run), "--history-url", history_url])
    assert second.returncode == 0, second.stderr
    assert "already uploaded, skipped" in second.stderr
    assert _counts(history_url, _run_id(real_run)) == counts


def test_history_prints_the_medians_of_the_uploaded_runs(history_url: str, real_run: Path) -> None:
    run_chperf(["upload", str(real_run), "--history-url", history_url])
    # query 0 reads 2M rows: under the patched side's 2.5M limit on every engine
    result = run_chperf(["history", "--test", "small", "--query-index", "0",
                         "--history-url", history_url])  # fmt: skip
    assert result.returncode == 0, result.stderr
    times: dict[str, list[float]] = defaultdict(list)
    for row in read_table(real_run, RUNS).rows:
        if (row.test, row.query_index) == ("small", 0):
            times[row.server].append(row.client_time)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["start_time", "run_id", "query", "reference", "patched",
                                "runs", "diff", "verdict"]  # fmt: skip
    line_of_run = next(line for line in lines if _run_id(real_run) in line)
    for side in ("reference", "patched"):
        assert f"{statistics.median(times[side]) * 1000:.3f} ms" in line_of_run


def test_unreachable_history_is_exit_3_and_changes_nothing(real_run: Path) -> None:
    before = _digests(real_run)
    port = pick_free_ports().tcp  # nothing listens there
    result = run_chperf(
        ["upload", str(real_run), "--history-url", f"clickhouse://default@127.0.0.1:{port}/x"]
    )
    assert result.returncode == 3
    assert f"history database x at 127.0.0.1:{port}" in result.stderr
    assert _digests(real_run) == before


def test_the_password_is_read_from_a_file_and_never_printed(
    history_url: str, real_run: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "password"
    secret.write_text("not-the-password-s3cret\n")
    result = run_chperf(["upload", str(real_run), "--history-url", history_url,
                         "--history-password-file", str(secret)])  # fmt: skip
    assert result.returncode == 3  # the default user has an empty password
    assert "s3cret" not in result.stdout + result.stderr
    files = [p for p in real_run.rglob("*") if p.is_file()]
    assert not any(b"s3cret" in p.read_bytes() for p in files)


def test_a_password_in_the_url_is_refused(real_run: Path) -> None:
    result = run_chperf(["upload", str(real_run), "--history-url", "clickhouse://u:pw@h/db"])
    assert result.returncode == 2
    assert "holds a password" in result.stderr and "pw" not in result.stderr.replace("pwd", "")
