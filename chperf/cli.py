"""The command line: parse argv once into frozen options, one error boundary, exit codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from chperf import cli_scaleout
from chperf.errors import ChperfError, ExitCode
from compare.compare import CompareOptions, compare_directory
from compare.fdr import FDR_Q
from compare.paired import METHODS, PAIRED
from compare.verdict import Thresholds
from runner import pinning
from runner.profiler import ProfileOptions
from runner.run import RunOptions, run
from runner.server import ServerSpec
from runner.serverconfig import validate_overlay
from runner.stopping import StopRule

REPO_ROOT = Path(__file__).resolve().parents[1]
MAX_PRINTED_FAILURES = 20
FIXED_RUNS_DEFAULT = 15  # unused in adaptive mode; the fixed mode's conventional count
DEFAULT_MAX_QUERY_SECONDS = 30.0


class Terminated(BaseException):
    """SIGTERM, turned into an exception so every `finally` runs (servers stop)."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """First SIGINT/SIGTERM: unwind (every `finally` stops what it started). Later ones are
    ignored, so a second Ctrl-C cannot cut the cleanup short and leave servers behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Say so at once: stopping four servers can take seconds. os.write, not print: the
    # handler may run while the main thread is inside a write to sys.stderr.
    with contextlib.suppress(OSError):
        name = signal.Signals(signum).name
        os.write(2, f"chperf: {name} received: stopping the servers\n".encode())
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def default_server_binary() -> str:
    for candidate in ("clickhouse-server", "/usr/sbin/clickhouse-server", "clickhouse"):
        found = shutil.which(candidate)
        if found:
            return found
    return "clickhouse-server"


def default_tests_dir() -> Path:
    local = Path("perf_tests")
    return local if local.is_dir() else REPO_ROOT / "perf_tests"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive integer")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"{text}: expected a fraction such as 0.05 for 5%")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chperf",
        description="Side-by-side performance regression check for ClickHouse.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_run(commands.add_parser("run", help="run the tests on both servers"))
    _add_compare(commands.add_parser("compare", help="compute verdicts from artifacts"))
    report = commands.add_parser("report", help="render OUT/report.html from artifacts")
    report.add_argument("out", type=Path)
    lint = commands.add_parser("lint", help="check test files for designed-in instability")
    lint.add_argument("paths", type=Path, nargs="*", default=[])
    lint.add_argument("--measure", action="store_true", help="also measure on the server")
    cli_scaleout.add_parsers(commands)
    return parser


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference", default=None, help="reference server binary")
    p.add_argument("--patched", default=None, help="patched server binary")
    p.add_argument("--reference-config", type=Path, action="append", default=[])
    p.add_argument("--patched-config", type=Path, action="append", default=[])
    p.add_argument("--tests", type=Path, nargs="+", default=None, help="files or directories")
    p.add_argument("--test", action="append", default=[], help="run only this test")
    p.add_argument("--query-index", type=int, action="append", default=[])
    p.add_argument(
        "--runs",
        type=_positive_int,
        default=None,
        help="fixed number of measured runs per side (default: adaptive run counts)",
    )
    p.add_argument(
        "--processes",
        type=_positive_int,
        default=RunOptions.processes,
        help="server processes per side; runs alternate between them in blocks of two, and a "
        f"change must show on each (default {RunOptions.processes}; 1: one process a side)",
    )
    p.add_argument(
        "--pin-cpu",
        type=_pin_request,
        default=pinning.AUTO,
        metavar="CPUS",
        help="auto (default): when every test runs with max_threads 1, all servers share the "
        "highest CPU, so both servers of a pair go through whatever that vCPU does; none: any "
        "CPU; or CPU numbers, e.g. 1 or 0,1 (runner/pinning.py)",
    )
    p.add_argument("--min-runs", type=_positive_int, default=None, help="adaptive: minimum")
    p.add_argument("--max-runs", type=_positive_int, default=None, help="adaptive: maximum")
    profile = p.add_mutually_exclusive_group()
    profile.add_argument("--profile-all", action="store_true", help="profile every query")
    profile.add_argument("--no-profile", action="store_true", help="no profile runs")
    p.add_argument("--profile-seconds", type=float, default=ProfileOptions.seconds)
    p.add_argument("--profile-budget", type=float, default=ProfileOptions.budget_seconds)
    p.add_argument("--long", action="store_true", help="also run tests tagged long")
    p.add_argument("--out", type=Path, default=Path("chperf-out"))
    p.add_argument("--force", action="store_true", help="overwrite an existing run in --out")
    p.add_argument("--max-query-seconds", type=float, default=DEFAULT_MAX_QUERY_SECONDS)
    p.add_argument("--keep-servers-dir", action="store_true")
    p.add_argument("--servers-dir", type=Path, default=None, help="parent of server dirs")
    p.add_argument("--shard", type=cli_scaleout.shard_arg, default=None, help="K/N: run shard K")
    p.add_argument("--shard-weights", type=Path, default=None, help="tests.tsv of a past run")
    _add_compare_options(p)


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", type=Path)
    _add_compare_options(p)


def _pin_request(text: str) -> pinning.PinRequest:
    """auto, none, or comma-separated CPU numbers, each one this process may run on."""
    if text in (pinning.AUTO, pinning.NONE):
        return text
    allowed = os.sched_getaffinity(0)
    try:
        cpus = tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text}: expected auto, none or CPU numbers, e.g. 1 or 0,1"
        ) from None
    if not set(cpus) <= allowed:
        raise argparse.ArgumentTypeError(
            f"{text}: CPU {min(set(cpus) - allowed)} is not available here "
            f"(available: {','.join(map(str, sorted(allowed)))})"
        )
    return cpus


def _fdr_level(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a q in [0, 1], e.g. 0.05; 0 is off")
    return value


def _add_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-effect", type=_fraction, default=None)
    p.add_argument("--unstable-threshold", type=_fraction, default=None)
    p.add_argument("--fail-on-unstable", action="store_true")
    p.add_argument(
        "--method",
        choices=METHODS,
        default=PAIRED,
        help="paired: within ABBA pairs (default); pooled: ClickHouse's pooled runs",
    )
    p.add_argument(
        "--fdr",
        type=_fdr_level,
        default=FDR_Q,
        metavar="Q",
        help=f"Benjamini-Hochberg false-discovery rate over all queries (default {FDR_Q}; 0: off)",
    )
    p.add_argument(
        "--calibration",
        type=Path,
        default=None,
        metavar="FILE",
        help="calibration.tsv of an A/A run",
    )
    p.add_argument(
        "--aa",
        action="store_true",
        help="A/A calibration: patched = the reference server (run); write OUT/calibration.tsv",
    )


def _run_options(args: argparse.Namespace) -> RunOptions:
    reference = Path(args.reference or default_server_binary())
    patched = Path(args.patched or default_server_binary())
    if args.aa:
        # A/A: the reference against itself, same binary and overlays (issue 8 item 2).
        if args.patched or args.patched_config:
            raise ChperfError(
                "--aa runs the reference against itself: drop --patched/--patched-config"
            )
        patched, args.patched_config = reference, list(args.reference_config)
    for overlay in [*args.reference_config, *args.patched_config]:
        validate_overlay(overlay)
    compare = _compare_options(args)
    return RunOptions(
        reference=ServerSpec("reference", reference, tuple(args.reference_config)),
        patched=ServerSpec("patched", patched, tuple(args.patched_config)),
        tests=tuple(args.tests or [default_tests_dir()]),
        out=args.out,
        test_names=frozenset(args.test),
        query_indices=frozenset(args.query_index),
        runs=args.runs or FIXED_RUNS_DEFAULT,
        processes=args.processes,
        stop_rule=None if args.runs else _stop_rule(args, compare),
        profile=ProfileOptions(
            mode="none" if args.no_profile else "all" if args.profile_all else "changed",
            seconds=args.profile_seconds,
            budget_seconds=args.profile_budget,
        ),
        thresholds=Thresholds(compare.min_effect, compare.unstable_threshold),
        method=compare.method,
        long=args.long,
        max_query_seconds=args.max_query_seconds,
        keep_servers_dir=args.keep_servers_dir,
        servers_dir=args.servers_dir,
        force=args.force,
        shard=args.shard,
        shard_weights=cli_scaleout.shard_weights(args.shard, args.shard_weights),
        pin=args.pin_cpu,
    )


def _stop_rule(args: argparse.Namespace, compare: CompareOptions) -> StopRule:
    defaults = StopRule()
    rule = StopRule(
        min_runs=args.min_runs or defaults.min_runs,
        max_runs=args.max_runs or defaults.max_runs,
        target=compare.min_effect,
        min_effect=compare.min_effect,
        fdr_q=compare.fdr,
        unstable_threshold=compare.unstable_threshold,
    )
    if rule.min_runs > rule.max_runs:
        raise ChperfError(f"--min-runs {rule.min_runs} is above --max-runs {rule.max_runs}")
    return rule


def cmd_run(args: argparse.Namespace) -> int:
    options = _run_options(args)
    run(options)
    print(f"chperf: artifacts in {options.out}", file=sys.stderr)
    return analyze(options.out, _compare_options(args))


def _compare_options(args: argparse.Namespace) -> CompareOptions:
    defaults = CompareOptions()
    return CompareOptions(
        min_effect=defaults.min_effect if args.min_effect is None else args.min_effect,
        unstable_threshold=(
            defaults.unstable_threshold
            if args.unstable_threshold is None
            else args.unstable_threshold
        ),
        fail_on_unstable=args.fail_on_unstable,
        method=args.method,
        fdr=args.fdr or None,
        calibration=args.calibration,
        aa=args.aa,
    )


def analyze(out: Path, options: CompareOptions) -> int:
    """compare, then report. Errors while building the report fail the check too (the
    report's status line says so): a report that may be missing something is not green."""
    compared = _compare(out, options)
    reported = _report(out)
    return int(max(compared, reported))


def _compare(out: Path, options: CompareOptions) -> ExitCode:
    result = compare_directory(out, options)
    print(f"chperf: {result.status}: {result.message}", file=sys.stderr)
    for failure in result.failures[:MAX_PRINTED_FAILURES]:
        print(f"chperf:   {failure}", file=sys.stderr)
    if len(result.failures) > MAX_PRINTED_FAILURES:
        print(
            f"chperf:   ... and {len(result.failures) - MAX_PRINTED_FAILURES} more", file=sys.stderr
        )
    return result.exit_code


def _report(out: Path) -> ExitCode:
    from chperf.report import render_report

    rendered = render_report(out)
    for problem in rendered.problems:
        print(f"chperf: report: {problem}", file=sys.stderr)
    print(f"chperf: report in {rendered.path}", file=sys.stderr)
    return ExitCode.CHECK_FAILED if rendered.problems else ExitCode.OK


def cmd_compare(args: argparse.Namespace) -> int:
    return int(_compare(args.out, _compare_options(args)))


def cmd_report(args: argparse.Namespace) -> int:
    return int(_report(args.out))


def cmd_lint(args: argparse.Namespace) -> int:
    from runner.lint import lint_main

    return lint_main(list(args.paths) or [default_tests_dir()], measure=args.measure)


COMMANDS = {"run": cmd_run, "compare": cmd_compare, "report": cmd_report, "lint": cmd_lint}
COMMANDS.update(cli_scaleout.COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    # A signal mask is inherited through exec: a parent that blocked SIGTERM (some job
    # runners do) would leave chperf deaf to it, and the run would go on to the end.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        return COMMANDS[args.command](args)
    except ChperfError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"chperf: error: {e}", file=sys.stderr)
        return int(e.exit_code)
    except KeyboardInterrupt:
        print("chperf: interrupted; servers stopped, artifacts kept", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Terminated:
        print("chperf: terminated; servers stopped, artifacts kept", file=sys.stderr)
        return int(ExitCode.TERMINATED)
    except Exception as e:  # a bug in chperf: say so plainly; the traceback is for -v
        if args.verbose:
            traceback.print_exc()
        print(f"chperf: internal error: {type(e).__name__}: {e} (rerun with -v)", file=sys.stderr)
        return int(ExitCode.INFRASTRUCTURE)


if __name__ == "__main__":
    sys.exit(main())
