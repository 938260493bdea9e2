"""Fuzzing the artifact readers (artifacts/): whatever a run directory's files hold, a reader
gives rows and problems, or a ChperfError naming the file (exit 2); never another exception,
never unbounded memory. The report and the CI summary go on from what they read."""

from __future__ import annotations

import functools
import json
import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifacts.calibration import CALIBRATION_FILE, CalibrationRow, read_calibration
from artifacts.calibration import write_calibration as write_calibration_file
from artifacts.errors import ChperfError
from artifacts.loadblocks import LOAD_BLOCKS, LoadBlockRow
from artifacts.manifest import MANIFEST, load_manifest, read_manifest
from artifacts.protocols import (
    PROTOCOL_PROBLEMS,
    PROTOCOL_RUNS,
    ProtocolProblemRow,
    ProtocolRunRow,
    read_protocol_summary,
)
from artifacts.results import RESULTS, ResultRow
from artifacts.summary import SUMMARY_FILE, read_summary
from artifacts.tables import (
    ALL_TABLES,
    MONITOR,
    STOPS,
    MonitorRow,
    StopRow,
    read_run_times,
    read_server_times,
)
from artifacts.tsv import Table, read_table, write_table
from artifacts.verdicts import METRICS_FILE, VERDICTS_FILE, read_metrics, read_verdicts
from ci import summary as ci_summary
from ci.links import ReportLinks
from report import render_report, synthetic
from tests.conftest import REPO, run_chperf
from tests.fuzz import FUZZ, memory_cap, mutated, tokens
from tests.runs import STEADY_7, write_artifacts


@dataclass(frozen=True)
class Reader:
    name: str
    file: str
    read: Callable[[Path], object]  # of the run directory


def _table_reader(table: Table[Any]) -> Reader:
    return Reader(f"read_table({table.file})", table.file, lambda d: read_table(d, table))


READERS = (
    *(_table_reader(t) for t in ALL_TABLES),
    Reader("read_run_times", "runs.tsv", read_run_times),
    Reader("read_server_times", "query_log.tsv", read_server_times),
    Reader("read_verdicts", VERDICTS_FILE, read_verdicts),
    Reader("read_metrics", METRICS_FILE, read_metrics),
    Reader("read_manifest", MANIFEST, read_manifest),
    Reader("load_manifest", MANIFEST, load_manifest),
    Reader("read_summary", SUMMARY_FILE, read_summary),
    Reader("read_protocol_summary", SUMMARY_FILE, read_protocol_summary),
    Reader("read_calibration", CALIBRATION_FILE, lambda d: read_calibration(d / CALIBRATION_FILE)),
)
JSON_READERS = tuple(r for r in READERS if r.file.endswith(".json"))
TSV_READERS = tuple(r for r in READERS if r.file.endswith(".tsv"))


@functools.cache
def samples() -> dict[str, tuple[bytes, ...]]:
    """Valid files of each name: the synthetic golden run, the compare test run, a calibration
    file, a stops.tsv and a monitor.tsv."""
    found: dict[str, list[bytes]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        synthetic.write_small_run(out)
        row = CalibrationRow("t", 0, "SELECT 1", 7, 0.1, 0.01, 0.03, 0.4, False, 0.0, 0.04, 0.03)
        write_calibration_file(out, [row])
        write_table(out, STOPS, [StopRow("t", 0, 7, "settled"), StopRow("t", 1, 25, "fixed")])
        moment = MonitorRow(
            1.7e9, 0.25, 2, 0.5, 0.1, 0.0, 0.01, 0.39, 1.0, 0.02, 0.3, 1.2, 2, 0.1, None, 0.0,
            0.0, 0.0, 9000.0,
        )  # fmt: skip
        write_table(out, MONITOR, [moment])
        digest = "0123456789abcdef" * 2
        write_table(out, RESULTS, [ResultRow("t", 0, "patched", 1, "prewarm", 9, digest, 40, 1e-5)])
        timing = ProtocolRunRow("t", 0, "http", "patched", 3, 3e-4, 0.01, 0.2, 214494, 0, 1, 1.7e9)
        write_table(out, PROTOCOL_RUNS, [timing])
        refused = ProtocolProblemRow("t", 0, "http", "patched", "unavailable", 0, "refused")
        write_table(out, PROTOCOL_PROBLEMS, [refused])
        block = LoadBlockRow(
            "t", 2, "patched", 0, 1.7e9, 0.5, 40, 1, 0.01, 0.02, None, 0, 0, 0.05, "x"
        )
        write_table(out, LOAD_BLOCKS, [block])
        for directory in (out, REPO / "tests" / "data" / "compare_small"):
            for path in sorted(directory.iterdir()):
                found.setdefault(path.name, []).append(path.read_bytes())
    return {name: tuple(files) for name, files in found.items()}


def read_or_error(reader: Reader, data: bytes) -> object:
    """What the reader makes of `data` as its file: a result, or a ChperfError that names the
    file. Any other exception fails the calling test."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / reader.file).write_bytes(data)
        with memory_cap():
            try:
                return reader.read(directory)
            except ChperfError as e:
                assert reader.file in str(e), (reader.name, str(e))
                return e


@FUZZ
@given(st.sampled_from(READERS), st.binary(max_size=4096))
def test_random_bytes_read_as_rows_and_problems_or_an_error_naming_the_file(
    reader: Reader, data: bytes
) -> None:
    read_or_error(reader, data)


@FUZZ
@given(st.data())
def test_mutated_artifacts_read_as_rows_and_problems_or_an_error_naming_the_file(
    data: st.DataObject,
) -> None:
    reader = data.draw(st.sampled_from(READERS))
    read_or_error(reader, data.draw(mutated(samples()[reader.file])))


@FUZZ
@given(st.data())
def test_tables_of_odd_cells_read_as_rows_and_problems_or_an_error_naming_the_file(
    data: st.DataObject,
) -> None:
    """The real header, then lines of cells that stress the value parsers."""
    reader = data.draw(st.sampled_from(TSV_READERS))
    header = samples()[reader.file][0].split(b"\n", 1)[0]
    cell = tokens(max_size=3) | st.sampled_from((b"0", b"1", b"0.5", b"\\N", b"t", b""))
    line = st.lists(cell, min_size=1, max_size=20).map(b"\t".join)
    body = data.draw(st.lists(line, max_size=8).map(b"\n".join))
    read_or_error(reader, header + b"\n" + body + data.draw(st.sampled_from((b"\n", b""))))


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from((math.inf, -math.inf, math.nan, 1e308, -0.0, 0.5))
    | st.text(max_size=10)
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


def _replace_fields(data: st.DataObject, document: dict[str, Any]) -> None:
    """Some fields of the document, and of its first records, take arbitrary JSON values."""
    records = [document] + [
        item for value in document.values() if isinstance(value, list) for item in value[:2]
    ]
    for record in records:
        if not isinstance(record, dict) or not record:
            continue
        keys = data.draw(st.lists(st.sampled_from(sorted(record)), max_size=3, unique=True))
        for key in keys:
            record[key] = data.draw(JSON_VALUES)


@FUZZ
@given(st.data())
def test_json_artifacts_with_fields_of_any_type_read_or_are_an_error_naming_the_file(
    data: st.DataObject,
) -> None:
    reader = data.draw(st.sampled_from(JSON_READERS))
    document = json.loads(data.draw(st.sampled_from(samples()[reader.file])))
    _replace_fields(data, document)
    read_or_error(reader, json.dumps(document).encode())


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run written once for the module, under pytest's own temporary directory."""
    out = tmp_path_factory.mktemp("fuzz") / "run"
    synthetic.write_small_run(out)
    return out


@settings(FUZZ, max_examples=40)
@given(st.data())
def test_report_and_ci_summary_of_damaged_json_artifacts_go_on_or_raise_chperf_errors(
    golden_run: Path, data: st.DataObject
) -> None:
    """The consumers of run.json and summary.json, not only their readers."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        shutil.copytree(golden_run, out)
        name = data.draw(st.sampled_from((MANIFEST, SUMMARY_FILE)))
        document = json.loads((out / name).read_text())
        _replace_fields(data, document)
        (out / name).write_text(json.dumps(document))
        with memory_cap():
            try:
                assert render_report(out).path.exists()
                ci_summary.write(out, ReportLinks(hosted_url="https://ci.example/r/"))
            except ChperfError as e:
                assert name in str(e) or str(out) in str(e), str(e)


@pytest.mark.parametrize("reader", JSON_READERS, ids=lambda r: r.name)
@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"schema_version": 1, "a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"schema_version": 1, "status": "failure", "message": "m", "counts": {}, '
        '"queries": [{"test": "t", "query_index": 1' + "0" * 5000 + "}]}",
    ],
    ids=["unclosed", "deep", "long-integer"],
)
def test_json_nested_too_deep_or_with_huge_numbers_reads_or_is_an_error(
    reader: Reader, text: str
) -> None:
    read_or_error(reader, text.encode())


def test_a_summary_with_a_query_index_of_the_wrong_type_is_a_report_problem_not_a_crash(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out)
    document = json.loads((out / SUMMARY_FILE).read_text())
    document["queries"][0]["query_index"] = "first"
    document["fdr"] = {
        "q": 0.05,
        "tests": 1e400,
        "discoveries": 1,
        "expected_false_discoveries_at_most": 0,
    }
    (out / SUMMARY_FILE).write_text(json.dumps(document))
    done = run_chperf(["report", str(out)])
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert (out / "report.html").exists()


def test_compare_of_a_run_whose_manifest_nests_too_deep_exits_2_naming_the_file(
    tmp_path: Path,
) -> None:
    out = write_artifacts(tmp_path / "out", {0: (STEADY_7, STEADY_7[::-1])})
    (out / MANIFEST).write_text('{"schema_version": 1, "a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = run_chperf(["compare", str(out)])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"chperf: error: {out / MANIFEST}: cannot read the run manifest")
