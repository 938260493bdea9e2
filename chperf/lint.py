"""`chperf lint`: the static checks of runner/lint.py and, with --measure, an A/A run of the
tests on the installed server judged by the measured limits."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from artifacts.console import console_block, console_text
from artifacts.errors import ChperfError, ExitCode
from artifacts.verdicts import read_verdicts
from compare.compare import CompareOptions, compare_directory
from runner.lint import LintProblem
from runner.lintruns import (
    MeasuredQuery,
    lint_paths,
    measured_problems,
    result_problems,
)
from runner.options import RunOptions
from runner.profiler import ProfileOptions
from runner.run import run
from runner.server import ServerSpec, default_server_binary
from runner.testdef import discover, load_test


def measure_problems(paths: Sequence[Path]) -> list[LintProblem]:
    """Run the tests A/A on the installed server (the runner's defaults) and judge them."""
    binary = Path(default_server_binary())
    tests = [load_test(p) for p in discover(paths)]
    locations = {(t.name, q.index): q.location for t in tests for q in t.queries}
    with tempfile.TemporaryDirectory(prefix="chperf-lint-") as tmp:
        out = Path(tmp) / "out"
        options = RunOptions(
            reference=ServerSpec("reference", binary),
            patched=ServerSpec("patched", binary),
            tests=tuple(paths),
            out=out,
            profile=ProfileOptions(mode="none"),
        )
        run(options)
        compare_directory(out, CompareOptions())
        measured = [
            MeasuredQuery(
                test=v.test,
                query_index=v.query_index,
                verdict=v.verdict,
                reason=v.reason,
                reference_median=v.reference_median,
                threshold=v.threshold,
            )
            for v in read_verdicts(out).rows
        ]
        return measured_problems(measured, locations) + result_problems(tests, out)


def lint_main(paths: list[Path], measure: bool, timings: Path | None = None) -> int:
    """Print problems to stderr; exit 0 clean, 1 problems, 2 unreadable input."""
    try:
        problems = lint_paths(paths, timings)
        if measure:
            problems += measure_problems(paths)
    except ChperfError as e:
        print(f"chperf lint: {console_block(str(e))}", file=sys.stderr)
        return int(e.exit_code)
    for problem in problems:
        print(console_text(str(problem), 1000), file=sys.stderr)
    count = len(problems)
    print(f"chperf lint: {count} problem{'s' if count != 1 else ''}", file=sys.stderr)
    return int(ExitCode.CHECK_FAILED if problems else ExitCode.OK)
