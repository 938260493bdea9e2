"""A time no measurement gives (inf, nan, negative, over 1e6 s) in runs.tsv, query_log.tsv or
metrics.tsv is refused by every reader with file:line and exit 2, never read as a measurement;
a torn last line, which a crash leaves, is still read past with a problem recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from artifacts.errors import ChperfError, ExitCode
from artifacts.tables import RUNS, read_run_times
from artifacts.tsv import read_table
from artifacts.verdicts import METRIC_COLUMNS, read_metrics
from compare.engine import SqlEngine
from compare.evidence import gather
from tests.conftest import DATA
from tests.conftest import chperf_main as chperf
from tests.runs import STEADY_7, write_artifacts

IMPOSSIBLE_TIMES = ["inf", "-inf", "nan", "-0.5", "1e308", "2000000.0"]


def run_dir(tmp_path: Path) -> Path:
    """A measured run: compare_small, whose runs.tsv line 4 is sum query 0 reference run 2."""
    out = tmp_path / "out"
    shutil.copytree(DATA / "compare_small", out)
    return out


def set_field(path: Path, line: int, column: int, value: str) -> None:
    lines = path.read_text().split("\n")
    fields = lines[line - 1].split("\t")
    fields[column] = value
    lines[line - 1] = "\t".join(fields)
    path.write_text("\n".join(lines))


def error_line(err: str) -> str:
    [line] = [line for line in err.splitlines() if line.startswith("chperf: error:")]
    return line


@pytest.mark.parametrize("value", IMPOSSIBLE_TIMES)
@pytest.mark.parametrize("stage", ["compare", "report"])
def test_an_impossible_client_time_in_runs_tsv_is_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, stage: str
) -> None:
    out = run_dir(tmp_path)
    set_field(out / "runs.tsv", 4, 5, value)
    assert chperf(stage, str(out)) == ExitCode.BAD_INPUT
    assert error_line(capsys.readouterr().err) == (
        f"chperf: error: {out / 'runs.tsv'}:4: client_time {value} is not a time in seconds "
        "(0 to 1e+06)"
    )


# The report takes server times from compare's metrics.tsv, not from query_log.tsv: compare is
# query_log.tsv's reader (metrics.tsv below is the report's).
@pytest.mark.parametrize("value", IMPOSSIBLE_TIMES)
@pytest.mark.parametrize("stage", ["compare"])
def test_an_impossible_server_time_in_query_log_tsv_is_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, stage: str
) -> None:
    out = run_dir(tmp_path)
    set_field(out / "query_log.tsv", 3, 5, value)
    assert chperf(stage, str(out)) == ExitCode.BAD_INPUT
    assert error_line(capsys.readouterr().err) == (
        f"chperf: error: {out / 'query_log.tsv'}:3: server_time {value} is not a time in "
        "seconds (0 to 1e+06)"
    )


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        (3, "inf", "reference_median of server_time inf is not a finite number >= 0"),
        (4, "nan", "patched_median of server_time nan is not a finite number >= 0"),
        (3, "-0.1", "reference_median of server_time -0.1 is not a finite number >= 0"),
        (3, "1e308", "reference_median of server_time 1e308 is not a time in seconds"),
        (5, "inf", "diff inf is not a finite number"),
        (6, "-0.2", "threshold -0.2 is not a finite number >= 0"),
    ],
)
def test_an_impossible_value_in_metrics_tsv_is_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: int, value: str, said: str
) -> None:
    out = run_dir(tmp_path)
    row = ["sum", "0", "server_time", "0.098", "0.1", "0.02", "0.01"]
    row[column] = value
    lines = ["\t".join(METRIC_COLUMNS), "sum\t0\tReadBytes\t80.0\t80.0\t0.0\t0.0", "\t".join(row)]
    (out / "metrics.tsv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ChperfError, match=f"metrics.tsv:3: {said}"):
        read_metrics(out)
    assert chperf("report", str(out)) == ExitCode.BAD_INPUT
    assert f"metrics.tsv:3: {said}" in error_line(capsys.readouterr().err)


@pytest.mark.parametrize("value", ["1e308", "2000000.0", "inf", "nan", "-0.5"])
def test_runs_grouped_in_chdb_refuse_an_impossible_time_like_the_careful_reader(
    tmp_path: Path, value: str
) -> None:
    out = write_artifacts(tmp_path / "run", {0: (STEADY_7, STEADY_7[::-1])})
    set_field(out / "runs.tsv", 5, 5, value)
    where = f"runs.tsv:5: client_time {value} is not a time"
    with pytest.raises(ChperfError, match=where):
        gather(out)
    with SqlEngine() as engine, pytest.raises(ChperfError, match=where):
        gather(out, engine, grouped_from=0)


def test_the_longest_possible_time_and_a_torn_last_line_are_still_read(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "run", {0: (STEADY_7, STEADY_7)})
    set_field(out / "runs.tsv", 2, 5, "1000000.0")
    with (out / "runs.tsv").open("a") as f:
        f.write("t\t0\tpatched\t7\tt-0-7\t0.1")  # what a crash mid-write leaves
    runs = read_table(out, RUNS)
    assert runs.rows[0].client_time == 1e6 and len(runs.rows) == 14
    assert [str(p) for p in runs.problems] == ["runs.tsv:16: truncated line (no end of line)"]
    times = read_run_times(out)
    assert len(times.rows) == 14 and len(times.problems) == 1


pytestmark = pytest.mark.usefixtures("signal_handlers_restored")
