"""What each subcommand does: the only place that knows every stage."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from artifacts.console import console_text
from artifacts.errors import ChperfError, ExitCode, Terminated
from artifacts.manifest import MANIFEST
from artifacts.outdir import prepare_out_dir
from artifacts.stages import REPORT_FILE
from chperf import lint, options
from ci import merge
from ci.history.jobs import show_history, upload_run
from ci.history.records import build_batch
from compare.compare import CompareOptions, compare_directory
from report import render_report
from runner.run import run

MAX_PRINTED_FAILURES = 20
RUN_HINT = "pass the --out directory of `chperf run` or `chperf merge` (it holds run.json)"


def cmd_run(args: argparse.Namespace) -> int:
    run_options = options.run_options(args)
    try:
        run(run_options)
    except (KeyboardInterrupt, Terminated):
        # The servers are stopped and what was measured is on disk: judge it, so the summary
        # and the report list every test (what was not reached as "not run"), then exit
        # with the signal's code. Further signals are ignored until then (chperf/cli.py).
        if (run_options.out / MANIFEST).exists():
            print("chperf: comparing what was measured before the interrupt", file=sys.stderr)
            try:
                analyze(run_options.out, options.compare_options(args))
            except Exception as e:  # the signal decides the exit code; say what else failed
                failed = console_text(str(e))
                print(f"chperf: comparing after the interrupt failed: {failed}", file=sys.stderr)
        raise
    print(f"chperf: artifacts in {console_text(str(run_options.out), 1000)}", file=sys.stderr)
    return analyze(run_options.out, options.compare_options(args))


def cmd_compare(args: argparse.Namespace) -> int:
    require_run(args.out)
    return int(_compare(args.out, options.compare_options(args)))


def cmd_report(args: argparse.Namespace) -> int:
    require_run(args.out)
    return int(_report(args.out))


def require_run(out: Path) -> None:
    """compare and report write into OUT: only into a run's directory, never just any."""
    if not out.is_dir():
        raise ChperfError(f"{out}: no such directory", hint=RUN_HINT)
    if not (out / MANIFEST).is_file():
        raise ChperfError(f"{out}: holds no run ({MANIFEST} is missing)", hint=RUN_HINT)


def cmd_lint(args: argparse.Namespace) -> int:
    paths = list(args.paths) or [options.default_tests_dir()]
    return lint.lint_main(paths, args.measure, args.timings)


def cmd_merge(args: argparse.Namespace) -> int:
    shards = merge.load_shards(args.shards)
    out = args.out.resolve()
    for shard in shards:
        directory = shard.directory.resolve()
        if out == directory or out in directory.parents:
            what = "is" if out == directory else "holds"
            raise ChperfError(
                f"--out {args.out} {what} the shard {shard.directory}", hint="merge into a new dir"
            )
    prepare_out_dir(args.out, args.force)
    merge.merge(shards, args.out)
    print(
        f"chperf: merged {len(shards)} shards into {console_text(str(args.out), 1000)}",
        file=sys.stderr,
    )
    return analyze(args.out, options.compare_options(args))


def cmd_upload(args: argparse.Namespace) -> int:
    labels = options.labels(args.label)
    batch = build_batch(args.out, labels, datetime.now(UTC))  # bad input: before connecting
    target = options.history_target(args, os.environ)
    for line in upload_run(batch, target):
        print(f"chperf: {console_text(line, 1000)}", file=sys.stderr)
    return int(ExitCode.OK)


def cmd_history(args: argparse.Namespace) -> int:
    target = options.history_target(args, os.environ)
    sys.stdout.write(show_history(target, args.test, args.query_index, args.limit))
    return int(ExitCode.OK)


def analyze(out: Path, compare: CompareOptions) -> int:
    """compare, then report; a report that may be missing something fails the check too."""
    return int(max(_compare(out, compare), _report(out)))


def _compare(out: Path, compare: CompareOptions) -> ExitCode:
    result = compare_directory(out, compare)
    if REPORT_FILE in result.removed:
        again = f"`chperf report {console_text(str(out), 200)}` writes one of these"
        print(f"chperf: removed the report.html of the previous verdicts; {again}", file=sys.stderr)
    print(f"chperf: {result.status}: {console_text(result.message, 2000)}", file=sys.stderr)
    for failure in result.failures[:MAX_PRINTED_FAILURES]:
        print(f"chperf:   {console_text(failure, 1000)}", file=sys.stderr)
    if len(result.failures) > MAX_PRINTED_FAILURES:
        more = len(result.failures) - MAX_PRINTED_FAILURES
        print(f"chperf:   ... and {more} more", file=sys.stderr)
    return result.exit_code


def _report(out: Path) -> ExitCode:
    rendered = render_report(out)
    for problem in rendered.problems:
        print(f"chperf: report: {console_text(problem, 1000)}", file=sys.stderr)
    print(f"chperf: report in {console_text(str(rendered.path), 1000)}", file=sys.stderr)
    return ExitCode.CHECK_FAILED if rendered.problems else ExitCode.OK


COMMANDS = {
    "run": cmd_run,
    "compare": cmd_compare,
    "report": cmd_report,
    "lint": cmd_lint,
    "merge": cmd_merge,
    "upload": cmd_upload,
    "history": cmd_history,
}
