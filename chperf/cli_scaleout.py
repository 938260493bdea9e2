"""The scale-out subcommands: `merge` (shards back into one run), `upload` and `history`
(the history database). Registered by chperf.cli; parsed here into explicit arguments."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from chperf.errors import ChperfError, ExitCode
from chperf.history.target import PASSWORD_ENV, URL_FORM, HistoryTarget, resolve_target
from runner.shard import Shard, ShardWeights, read_weights

Command = Callable[[argparse.Namespace], int]


def shard_arg(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def shard_weights(shard: Shard | None, path: Path | None) -> ShardWeights | None:
    if path is None:
        return None
    if shard is None:
        raise ChperfError("--shard-weights without --shard", hint="add --shard K/N")
    return read_weights(path)


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from chperf.cli import _add_compare_options

    merge = commands.add_parser("merge", help="merge shard runs, recompute verdicts and report")
    merge.add_argument("shards", type=Path, nargs="+", help="output directories of the shards")
    merge.add_argument("--out", type=Path, required=True, help="the merged run's directory")
    merge.add_argument("--force", action="store_true", help="overwrite a run in --out")
    _add_compare_options(merge)
    upload = commands.add_parser("upload", help="store a run in the history database")
    upload.add_argument("out", type=Path)
    upload.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="e.g. pr=123"
    )
    _add_history_target(upload)
    history = commands.add_parser("history", help="a test's past medians and verdicts")
    history.add_argument("--test", required=True)
    history.add_argument("--query-index", type=int, default=None)
    history.add_argument("--limit", type=int, default=None, help="newest runs shown")
    _add_history_target(history)


def _add_history_target(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--history-url", default=None, help=URL_FORM)
    where.add_argument("--history-config", type=Path, default=None, help="TOML: url, ...")
    p.add_argument(
        "--history-password-file",
        type=Path,
        default=None,
        help=f"file holding the password (default: ${PASSWORD_ENV})",
    )


def _target(args: argparse.Namespace) -> HistoryTarget:
    return resolve_target(
        args.history_url, args.history_config, args.history_password_file, os.environ
    )


def cmd_merge(args: argparse.Namespace) -> int:
    from chperf.cli import _compare_options, analyze
    from runner.merge import load_shards, merge
    from runner.run import prepare_out_dir

    shards = load_shards(args.shards)
    if any(args.out.resolve() == s.directory.resolve() for s in shards):
        raise ChperfError(f"--out {args.out} is one of the shards", hint="merge into a new dir")
    prepare_out_dir(args.out, args.force)
    merge(shards, args.out)
    print(f"chperf: merged {len(shards)} shards into {args.out}", file=sys.stderr)
    return analyze(args.out, _compare_options(args))


def cmd_upload(args: argparse.Namespace) -> int:
    from chperf.history.records import build_batch
    from chperf.history.store import HistoryStore

    labels = dict(_label(text) for text in args.label)
    batch = build_batch(args.out, labels, datetime.now(UTC))  # bad input: before connecting
    store = HistoryStore(_target(args))
    try:
        store.ensure_schema()
        uploads = store.upload(batch)
    finally:
        store.close()
    for u in uploads:
        state = "already uploaded, skipped" if u.skipped else f"{u.rows} rows inserted"
        print(f"chperf: history {u.table}: {state}", file=sys.stderr)
    print(f"chperf: run {batch.run_id} is in the {store.target.describe()}", file=sys.stderr)
    return int(ExitCode.OK)


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ChperfError(f"--label {text!r}: expected KEY=VALUE, e.g. pr=123")
    return key, value


def cmd_history(args: argparse.Namespace) -> int:
    from chperf.history.show import DEFAULT_LIMIT, history_lines, render_table
    from chperf.history.store import HistoryStore

    store = HistoryStore(_target(args))
    every = args.query_index is None
    params = {"test": args.test, "every": int(every), "query_index": args.query_index or 0}
    try:
        store.ensure_schema()
        times = store.fetch("select_times.sql", params)
        verdicts = store.fetch("select_verdicts.sql", params)
        ids = tuple(sorted({str(r[0]) for r in times})) or ("",)
        runs = store.fetch("select_runs.sql", {"ids": ids})
    finally:
        store.close()
    lines = history_lines(times, verdicts, runs, args.limit or DEFAULT_LIMIT)
    sys.stdout.write(render_table(args.test, lines))
    return int(ExitCode.OK)


COMMANDS: dict[str, Command] = {
    "merge": cmd_merge,
    "upload": cmd_upload,
    "history": cmd_history,
}
