"""argv, parsed once, into the frozen options of each stage. Nothing below the CLI sees an
argparse namespace or the environment; every default lives on the option class it belongs to."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from artifacts.errors import ChperfError
from ci.history.target import HistoryTarget, resolve_target
from ci.shard import read_weights, select_paths
from compare.compare import CompareOptions
from compare.stopping import StopRule
from compare.verdict import Thresholds
from runner.budget import Limits
from runner.options import RunOptions, ShardSelection
from runner.profiler import ProfileOptions
from runner.server import ServerSpec, default_server_binary
from runner.serverconfig import validate_overlay
from runner.testdef import discover

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_tests_dir() -> Path:
    local = Path("perf_tests")
    return local if local.is_dir() else REPO_ROOT / "perf_tests"


def compare_options(args: argparse.Namespace) -> CompareOptions:
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
    # Absolute, not resolved: servers start in their own directory, and a symlink's name
    # (clickhouse-server vs clickhouse) decides how the binary is called.
    reference = Path(args.reference or default_server_binary()).absolute()
    patched = Path(args.patched or default_server_binary()).absolute()
    patched_config = list(args.patched_config)
    if args.aa:
        if args.patched or args.patched_config:
            raise ChperfError(
                "--aa runs the reference against itself: drop --patched/--patched-config"
            )
        patched, patched_config = reference, list(args.reference_config)
    for overlay in [*args.reference_config, *patched_config]:
        validate_overlay(overlay)
    compare = compare_options(args)
    tests = tuple(args.tests or [default_tests_dir()])
    return RunOptions(
        reference=ServerSpec("reference", reference, tuple(args.reference_config)),
        patched=ServerSpec("patched", patched, tuple(patched_config)),
        tests=tests,
        out=args.out,
        test_names=frozenset(args.test),
        query_indices=frozenset(args.query_index),
        runs=args.runs or RunOptions.runs,
        processes=args.processes,
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
    return rule


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
