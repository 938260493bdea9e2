"""argv, parsed once, into the frozen options of each stage. Nothing below the CLI sees an
argparse namespace or the environment; every default lives on the option class it belongs to."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from artifacts.calibration import read_calibration
from artifacts.errors import ChperfError
from chperf.binaries import check_server_binary
from ci.history.target import HistoryTarget, resolve_target
from ci.shard import read_weights, select_paths
from compare.blocked import critical_rank, structure_of
from compare.compare import CompareOptions
from compare.paired import PAIRED
from compare.stopping import StopRule
from compare.verdict import MIN_RUNS, Thresholds
from runner.budget import Limits
from runner.options import RunOptions, ShardSelection
from runner.profiler import ProfileOptions
from runner.server import ServerSpec, default_server_binary
from runner.serverconfig import validate_overlay
from runner.testdef import discover

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_tests_dir() -> Path:
    local = Path("perf_tests").absolute()
    return local if local.is_dir() else REPO_ROOT / "perf_tests"


def compare_options(args: argparse.Namespace) -> CompareOptions:
    if args.calibration is not None:
        read_calibration(args.calibration)  # a bad file: exit 2 now, not after a whole run
    defaults = Thresholds()
    return CompareOptions(
        thresholds=Thresholds(
            defaults.min_effect if args.min_effect is None else args.min_effect,
            defaults.unstable_threshold
            if args.unstable_threshold is None
            else args.unstable_threshold,
        ),
        fail_on_unstable=args.fail_on_unstable,
        method=args.method,
        fdr=args.fdr or None,
        calibration=args.calibration,
        aa=args.aa,
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    """Every argument of `chperf run` checked, binaries and directories included: nothing is
    written before this returns."""
    reference, patched = server_specs(args)
    check_servers_dir(args.servers_dir)
    compare = compare_options(args)
    if args.runs:
        check_run_count("--runs", args.runs, compare.method)
    tests = tuple(args.tests or [default_tests_dir()])
    return RunOptions(
        reference=reference,
        patched=patched,
        tests=tests,
        out=args.out,
        test_names=frozenset(args.test),
        query_indices=frozenset(args.query_index),
        runs=args.runs or RunOptions.runs,
        processes=args.processes,
        renew_set=args.renew_set,
        stop_rule=None if args.runs else stop_rule(args, compare),
        profile=ProfileOptions(
            mode="none" if args.no_profile else "all" if args.profile_all else "changed",
            seconds=args.profile_seconds,
            budget_seconds=args.profile_budget,
        ),
        thresholds=compare.thresholds,
        method=compare.method,
        long=args.long,
        limits=Limits(
            prewarm_seconds=args.prewarm_seconds,
            run_seconds=args.max_query_seconds,
            query_seconds=args.query_budget,
            test_seconds=args.test_budget,
            suite_seconds=args.budget,
        ),
        keep_servers_dir=args.keep_servers_dir,
        servers_dir=args.servers_dir,
        force=args.force,
        shard=shard_selection(args, tests),
        pin=args.pin_cpu,
        redraw_progress=sys.stderr.isatty() and "NO_COLOR" not in os.environ,
        check_results=not args.no_result_check,
    )


def server_specs(args: argparse.Namespace) -> tuple[ServerSpec, ServerSpec]:
    """Both sides' binaries and config overlays, checked."""
    # Absolute, not resolved: servers start in their own directory, and a symlink's name
    # (clickhouse-server vs clickhouse) decides how the binary is called.
    reference = args.reference or Path(default_server_binary()).absolute()
    patched = args.patched or Path(default_server_binary()).absolute()
    patched_config = list(args.patched_config)
    if args.aa:
        if args.patched or args.patched_config:
            raise ChperfError(
                "--aa runs the reference against itself: drop --patched/--patched-config"
            )
        patched, patched_config = reference, list(args.reference_config)
    for overlay in [*args.reference_config, *patched_config]:
        validate_overlay(overlay)
    installed = "the installed server"  # no --reference/--patched: default_server_binary()
    check_server_binary("--reference" if args.reference else installed, reference)
    if patched != reference:
        check_server_binary("--patched" if args.patched else installed, patched)
    return (
        ServerSpec("reference", reference, tuple(args.reference_config)),
        ServerSpec("patched", patched, tuple(patched_config)),
    )


def shard_selection(args: argparse.Namespace, tests: tuple[Path, ...]) -> ShardSelection | None:
    if args.shard_weights is not None and args.shard is None:
        raise ChperfError("--shard-weights without --shard", hint="add --shard K/N")
    if args.shard is None:
        return None
    weights = read_weights(args.shard_weights) if args.shard_weights is not None else None
    files = select_paths(discover(list(tests)), args.shard, weights)
    return ShardSelection(
        label=str(args.shard),
        count=args.shard.count,
        files=tuple(files),
        weights_source=weights.source if weights else None,
    )


def stop_rule(args: argparse.Namespace, compare: CompareOptions) -> StopRule:
    defaults = StopRule()
    rule = StopRule(
        min_runs=args.min_runs or defaults.min_runs,
        max_runs=args.max_runs or defaults.max_runs,
        target=compare.thresholds.min_effect,
        min_effect=compare.thresholds.min_effect,
        fdr_q=compare.fdr,
        budget_seconds=args.query_budget,
        unstable_threshold=compare.thresholds.unstable_threshold,
    )
    if rule.min_runs > rule.max_runs:
        raise ChperfError(f"--min-runs {rule.min_runs} is above --max-runs {rule.max_runs}")
    check_run_count("--max-runs", rule.max_runs, compare.method)
    return rule


def check_servers_dir(servers_dir: Path | None) -> None:
    if servers_dir is not None and not servers_dir.is_dir():
        what = "not a directory" if servers_dir.exists() else "no such directory"
        raise ChperfError(
            f"--servers-dir {servers_dir}: {what}",
            hint="create it first, or leave --servers-dir out (the system's temp dir)",
        )


def decidable_pairs(method: str) -> int:
    """The fewest runs a side with which a query can get a verdict other than inconclusive:
    the paired statistic needs as many pairs for an interval at its level
    (compare/blocked.py); the pooled one decides from verdict.MIN_RUNS on."""
    if method != PAIRED:
        return MIN_RUNS
    return next(n for n in itertools.count(1) if critical_rank(structure_of(n)) > 0)


def check_run_count(option: str, runs: int, method: str) -> None:
    """Refuse a run count with which no query can get a verdict at all; warn, loudly, about
    one whose verdicts can only be inconclusive: fine for a smoke run, useless for a check."""
    needed = decidable_pairs(method)
    if runs < MIN_RUNS:
        raise ChperfError(
            f"{option} {runs}: below {MIN_RUNS} runs a side no query gets a verdict "
            "(each is an error: too few runs)",
            hint=f"{option} {MIN_RUNS} for a smoke run, {option} {needed} or more for verdicts",
        )
    if runs < needed:
        print(
            f"chperf: warning: {option} {runs}: the {method} test needs at least {needed} runs "
            f"a side to reach its level; every measured query will be 'inconclusive' and the "
            f"check incomplete, exit 4 (a smoke run, not a check); pass {option} {needed} or "
            f"more for verdicts",
            file=sys.stderr,
        )


def history_target(args: argparse.Namespace, environ: Mapping[str, str]) -> HistoryTarget:
    return resolve_target(
        args.history_url, args.history_config, args.history_password_file, environ
    )


def labels(texts: list[str]) -> dict[str, str]:
    found = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise ChperfError(f"--label {text!r}: expected KEY=VALUE, e.g. pr=123")
        found[key] = value
    return found
