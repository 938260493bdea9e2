"""User-supplied text on the console and in GitHub workflow commands: test names, file names,
query texts and server messages cannot break out of their line, reach the terminal as control
characters, or become a workflow command (a line starting with `::`, or `##[` anywhere)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from artifacts.console import console_block, console_text, escape_controls_keep_lines
from artifacts.tables import STAGE_RUN, ErrorRow
from runner.progress import Progress
from tests.conftest import REPO
from tests.runs import STEADY_7, write_artifacts

ANSI = "\x1b[2J"
HOSTILE_TEST = f"{ANSI}evil\n::error::x"
HOSTILE_MESSAGE = f"Code: 47\n::error file=a::pwned{ANSI}\n##[error]legacy"
SHOWN_TEST = "\\x1b[2Jevil | ::error::x"  # the name as every console line shows it


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text", "plain text"),
        ("::error::x", "\\x3a:error::x"),
        ("  \t::warning file=a::x", "\\x3a:warning file=a::x"),
        ("a ##[error]b", "a #\\x23[error]b"),
        (f"{ANSI}red\x1b[0m", "\\x1b[2Jred\\x1b[0m"),
        ("a\nb\r\n\nc\rd", "a | b | c | d"),
        ("a\n::error::b", "a | ::error::b"),
        ("right\u202eleft\u2028next\x85", "right\\u202eleft | next"),
        ("x" * 500, "x" * 397 + "..."),
    ],
)
def test_console_text_is_one_safe_line(text: str, shown: str) -> None:
    assert console_text(text) == shown


def test_console_block_keeps_lines_and_makes_each_safe() -> None:
    text = f"server exited\nlast log lines:\n  ::error::x\n{ANSI}\n##[group]y"
    assert console_block(text).splitlines() == [
        "server exited",
        "last log lines:",
        "  \\x3a:error::x",
        "\\x1b[2J",
        "#\\x23[group]y",
    ]


def run_module(module: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        env.pop(name, None)
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, check=False)


def assert_safe_lines(output: str) -> list[str]:
    """Every line printable, none a workflow command; the lines."""
    lines = output.splitlines()
    for line in lines:
        assert line.isprintable(), repr(line)
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line
    return lines


def test_lint_prints_hostile_file_names_as_one_safe_line_each(tmp_path: Path) -> None:
    unknown_element = "<test>\n<frobnicate/>\n<query>SELECT 1</query>\n</test>\n"
    for name in ("::error::top.xml", f"{ANSI}red\n::error::evil.xml"):
        (tmp_path / name).write_text(unknown_element)
    done = run_module("chperf", "lint", ".", cwd=tmp_path)
    lines = assert_safe_lines(done.stderr)
    assert done.returncode == 1
    assert lines[-1] == "chperf lint: 2 problems"
    # Relative to . or made absolute: either way one line each, the file:line first.
    top, evil = sorted((line.split(": ")[0] for line in lines[:-1]), key=lambda w: "evil" in w)
    assert evil.endswith("\\x1b[2Jred | ::error::evil.xml:2"), evil
    assert top.endswith("error::top.xml:2"), top


def test_lint_of_a_missing_hostile_path_is_an_error_on_safe_lines(tmp_path: Path) -> None:
    done = run_module("chperf", "lint", f"gone\n::error::{ANSI}x.xml", cwd=tmp_path)
    lines = assert_safe_lines(done.stderr)
    assert done.returncode == 2
    assert lines[0].startswith("chperf lint: ")
    assert lines[0].endswith("gone | ::error::\\x1b[2Jx.xml: no such test file or directory")


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    """A run of a test with a hostile name: query 0 50% slower, query 1 failing on patched
    only with a hostile server message."""
    series = {0: (STEADY_7, tuple(v * 1.5 for v in STEADY_7)), 1: (STEADY_7, ())}
    error = ErrorRow(HOSTILE_TEST, 1, "patched", STAGE_RUN, 47, HOSTILE_MESSAGE)
    return write_artifacts(tmp_path / "out", series, [error], test=HOSTILE_TEST)


def test_compare_prints_hostile_test_names_and_server_messages_on_safe_lines(
    hostile_run: Path,
) -> None:
    done = run_module("chperf", "compare", str(hostile_run))
    lines = assert_safe_lines(done.stderr)
    assert done.returncode == 1
    failures = [line[len("chperf:   ") :] for line in lines if line.startswith("chperf:   ")]
    assert [line.split(": ")[0] for line in failures] == [
        f"{SHOWN_TEST} query 0",
        f"{SHOWN_TEST} query 1",
    ]
    assert failures[1].endswith("Code: 47 | ::error file=a::pwned\\x1b[2J | #\\x23[error]legacy"), (
        failures[1]
    )


def test_ci_annotations_escape_hostile_test_names_within_one_command(hostile_run: Path) -> None:
    assert run_module("chperf", "compare", str(hostile_run)).returncode == 1
    done = run_module("ci", "annotations", str(hostile_run))
    assert done.returncode == 0, done.stderr
    assert_safe_lines(done.stderr)
    slower, partial = done.stdout.splitlines()  # one annotation per changed or broken query
    # GitHub's % escapes of ":" (a space keeps a "::" from forming), the newline shown as " | "
    escaped = "\\x1b[2Jevil | %3A %3Aerror%3A %3Ax"
    for annotation in (slower, partial):
        assert annotation.isprintable(), repr(annotation)
        properties, message = annotation.split(" ", 1)[1].split("::")
        assert [p.split("=")[0] for p in properties.split(",")] == ["file", "title"]
        assert message.isprintable() and "\n" not in message
    assert slower.startswith(f"::error file={escaped}.xml,title={escaped} query 0 is slower")
    assert slower.split("::")[2].startswith("99%25 CI 1.46")
    assert partial.startswith(f"::warning file={escaped}.xml,title={escaped} query 1 is partial")


def test_progress_lines_show_hostile_test_and_query_names_on_one_safe_line() -> None:
    stream = io.StringIO()
    progress = Progress(total_queries=2, runs=7, stream=stream)
    progress.start_query(HOSTILE_TEST, 0, name=f"\n::error::q{ANSI}")
    progress.end_query()
    progress.activity(f"{HOSTILE_TEST} query 1", "profiling")
    lines = assert_safe_lines(stream.getvalue())
    assert len(lines) == 2
    assert lines[0].startswith(f"[1/2] {SHOWN_TEST} query 0 (\\x3a:error::q\\x1b[2J): done")
    assert lines[1].startswith(f"[1/2] {SHOWN_TEST} query 1: profiling")


def test_report_prints_a_hostile_out_path_on_safe_lines(hostile_run: Path) -> None:
    out = hostile_run.rename(hostile_run.with_name(f"out{ANSI}\n::error::x"))
    done = run_module("chperf", "report", str(out))
    lines = assert_safe_lines(done.stderr)
    [where] = [line for line in lines if line.startswith("chperf: report in ")]
    assert where.endswith("out\\x1b[2J | ::error::x/report.html"), where


def test_escape_controls_keep_lines_keeps_line_breaks_and_tabs_only() -> None:
    assert escape_controls_keep_lines("SELECT 1\n\tFROM t\r\n") == "SELECT 1\n\tFROM t\r\n"
    shown = escape_controls_keep_lines("a\x1b[31mb\u202ec\x00\nd")
    assert shown == "a\\x1b[31mb\\u202ec\\x00\nd"
