"""Every subcommand and flag of `chperf`. docs/cli.md is generated from this parser."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from ci.history.target import PASSWORD_ENV, URL_FORM
from ci.shard import Shard
from compare.compare import CompareOptions
from compare.paired import METHODS
from compare.stopping import StopRule
from compare.verdict import MIN_EFFECT, UNSTABLE_THRESHOLD
from runner import pinning
from runner.budget import Limits, parse_duration
from runner.options import RunOptions
from runner.profiler import ProfileOptions

DESCRIPTION = "Side-by-side performance regression check for ClickHouse."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chperf", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_run(commands.add_parser("run", help="run the tests on both servers"))
    compare = commands.add_parser("compare", help="compute verdicts from artifacts")
    compare.add_argument("out", type=_path, help="a run's output directory")
    _add_compare_options(compare)
    report = commands.add_parser("report", help="render OUT/report.html from artifacts")
    report.add_argument("out", type=_path, help="a run's output directory")
    lint = commands.add_parser("lint", help="check test files for designed-in instability")
    lint.add_argument("paths", type=_path, nargs="*", default=[], help="test files or directories")
    lint.add_argument("--measure", action="store_true", help="also measure on the server")
    lint.add_argument(
        "--timings",
        type=_path,
        default=None,
        metavar="DIR",
        help="an earlier run's --out directory: flag queries over their time limit and tests "
        "over the test budget there",
    )
    _add_merge(commands.add_parser("merge", help="merge shard runs, recompute verdicts, report"))
    upload = commands.add_parser("upload", help="store a run in the history database")
    upload.add_argument("out", type=_path, help="a run's output directory")
    upload.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="e.g. pr=123"
    )
    _add_history_target(upload)
    history = commands.add_parser("history", help="a test's past medians and verdicts")
    history.add_argument("--test", required=True, metavar="NAME", help="the test")
    history.add_argument(
        "--query-index", type=int, default=None, metavar="N", help="one query (default: all)"
    )
    history.add_argument("--limit", type=int, default=None, help="newest runs shown")
    _add_history_target(history)
    return parser


def _add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference",
        type=_path,
        default=None,
        metavar="BINARY",
        help="reference server binary (default: the installed clickhouse-server)",
    )
    p.add_argument(
        "--patched",
        type=_path,
        default=None,
        metavar="BINARY",
        help="patched server binary (default: the installed clickhouse-server)",
    )
    p.add_argument(
        "--reference-config",
        type=_path,
        action="append",
        default=[],
        metavar="DIR",
        help="config overlay of the reference server: a directory with config.d/ or users.d/",
    )
    p.add_argument(
        "--patched-config",
        type=_path,
        action="append",
        default=[],
        metavar="DIR",
        help="config overlay of the patched server: a directory with config.d/ or users.d/",
    )
    p.add_argument(
        "--tests",
        type=_path,
        nargs="+",
        default=None,
        metavar="PATH",
        help="test files or directories (default: perf_tests)",
    )
    p.add_argument("--test", action="append", default=[], metavar="NAME", help="run only this test")
    p.add_argument(
        "--query-index",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="run only this query of each selected test",
    )
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
        "--renew-set",
        action="store_true",
        help="start the last process set of each side afresh before each test but the first, so "
        "the sets' histories differ (a study option: docs/method.md)",
    )
    p.add_argument(
        "--pin-cpu",
        type=_pin_request,
        default=pinning.AUTO,
        metavar="CPUS",
        help="auto (default): when every test runs with max_threads 1, all servers share the "
        "highest CPU, so both servers of a pair go through whatever that vCPU does; none: any "
        "CPU; or CPU numbers, e.g. 1 or 0,1",
    )
    p.add_argument(
        "--min-runs",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"adaptive: fewest runs per side (default {StopRule.min_runs})",
    )
    p.add_argument(
        "--max-runs",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"adaptive: most runs per side before an extension (default {StopRule.max_runs})",
    )
    p.add_argument(
        "--no-result-check",
        action="store_true",
        help="do not hash the prewarm results to compare them between the servers",
    )
    profile = p.add_mutually_exclusive_group()
    profile.add_argument("--profile-all", action="store_true", help="profile every query")
    profile.add_argument("--no-profile", action="store_true", help="no profile runs")
    p.add_argument(
        "--profile-seconds",
        type=float,
        default=ProfileOptions.seconds,
        metavar="S",
        help="profile runs of one query, per side",
    )
    p.add_argument(
        "--profile-budget",
        type=float,
        default=ProfileOptions.budget_seconds,
        metavar="S",
        help="profile runs of the whole run",
    )
    p.add_argument("--long", action="store_true", help="also run tests tagged long")
    p.add_argument(
        "--out", type=_path, default="chperf-out", metavar="DIR", help="output directory"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the contents of --out, if chperf wrote it (it holds .chperf-out)",
    )
    p.add_argument(
        "--max-query-seconds",
        type=_seconds,
        default=Limits.run_seconds,
        metavar="S",
        help="limit of one measured run (server max_execution_time, then the client cancels); "
        "a query over it keeps its runs and is 'too long'; a test's max_query_seconds "
        "attribute replaces it and --prewarm-seconds",
    )
    p.add_argument(
        "--prewarm-seconds",
        type=_seconds,
        default=Limits.prewarm_seconds,
        metavar="S",
        help="limit of one prewarm run; a prewarm over --max-query-seconds makes the query "
        "'too long' without measured runs",
    )
    p.add_argument(
        "--query-budget",
        type=_seconds,
        default=Limits.query_seconds,
        metavar="S",
        help="measured time of one query, both sides, after which it stops (once it has the "
        "runs a verdict needs)",
    )
    p.add_argument(
        "--test-budget",
        type=_duration,
        default=Limits.test_seconds,
        metavar="TIME",
        help="time of one test, setup included, e.g. 10m; the queries it does not reach are "
        "'not run'",
    )
    p.add_argument(
        "--budget",
        type=_duration,
        default=None,
        metavar="TIME",
        help="time of the whole run, e.g. 30m or 1h30m (default: none); what it does not "
        "reach is 'not run' and the check is incomplete (exit 4); compare and report follow",
    )
    p.add_argument(
        "--keep-servers-dir",
        action="store_true",
        help="keep the servers' data, configs and logs after the run",
    )
    p.add_argument(
        "--servers-dir",
        type=_path,
        default=None,
        metavar="DIR",
        help="parent of the servers' temporary directories (default: the system's temp dir)",
    )
    p.add_argument("--shard", type=_shard, default=None, metavar="K/N", help="run shard K of N")
    p.add_argument(
        "--shard-weights",
        type=_path,
        default=None,
        metavar="FILE",
        help="tests.tsv of a past run, to balance the shards by test duration",
    )
    _add_compare_options(p)


def _add_merge(p: argparse.ArgumentParser) -> None:
    p.add_argument("shards", type=_path, nargs="+", help="output directories of the shards")
    p.add_argument("--out", type=_path, required=True, help="the merged run's directory")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the contents of --out, if chperf wrote it (it holds .chperf-out)",
    )
    _add_compare_options(p)


def _add_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-effect",
        type=_change,
        default=None,
        metavar="F",
        help=f"smallest change that matters, e.g. 5%% or 0.05 (default {MIN_EFFECT:.0%}%)",
    )
    p.add_argument(
        "--unstable-threshold",
        type=_change,
        default=None,
        metavar="F",
        help=f"T at or above it is unstable, e.g. 10%% or 0.1 (default {UNSTABLE_THRESHOLD:.0%}%)",
    )
    p.add_argument(
        "--fail-on-unstable", action="store_true", help="unstable queries fail the check"
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default=CompareOptions.method,
        help="paired: within blocks of two pairs (default); pooled: ClickHouse's pooled runs",
    )
    p.add_argument(
        "--fdr",
        type=_rate,
        default=CompareOptions.fdr,
        metavar="Q",
        help="Benjamini-Hochberg false-discovery rate over all queries, e.g. 5%% or 0.05 "
        f"(default {CompareOptions.fdr}; 0: off)",
    )
    p.add_argument(
        "--calibration",
        type=_path,
        default=None,
        metavar="FILE",
        help="calibration.tsv of an A/A run",
    )
    p.add_argument(
        "--aa",
        action="store_true",
        help="A/A calibration: patched = the reference server (run); write OUT/calibration.tsv",
    )


def _add_history_target(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--history-url", default=None, help=URL_FORM)
    where.add_argument("--history-config", type=_path, default=None, help="TOML: url, ...")
    p.add_argument(
        "--history-password-file",
        type=_path,
        default=None,
        help=f"file holding the password (default: ${PASSWORD_ENV})",
    )


def _path(text: str) -> Path:
    """Made absolute against the directory chperf was started in, once, here: nothing later
    depends on the working directory (servers run in directories of their own). Absolute,
    not resolved: a binary's name (clickhouse-server or clickhouse) decides how it is called."""
    return Path(text).absolute()


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive integer")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: expected a positive number of seconds")
    return value


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _change(text: str) -> float:
    """A relative change: 5% or 0.05, from 0 to below 100%."""
    return _fraction(text, "+")


def _rate(text: str) -> float:
    """A rate: 5% or 0.05, from 0 to below 100%."""
    return _fraction(text, "")


def _fraction(text: str, sign: str) -> float:
    """5% and 0.05 are the same; a bare 5 would mean 500%, which nobody means: refused."""
    number = text.strip()
    percent = number.endswith("%")
    try:
        value = float(number.removesuffix("%"))
    except ValueError:
        value = math.nan
    if math.isfinite(value) and not percent and value >= 1:
        raise argparse.ArgumentTypeError(
            f"{text} means {sign}{value:.0%}; did you mean {number}% or {value / 100:g}?"
        )
    value = value / 100 if percent else value
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"{text}: expected a percentage from 0% to below 100%, e.g. 5% or 0.05"
        )
    return value


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


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
