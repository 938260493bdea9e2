"""`python -m ci COMMAND`: the CI side of chperf (used by ci/github/perf-check.yml).

Flags override what ci/env.py reads from the environment, so every command runs outside CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from artifacts.console import console_block, console_text
from artifacts.errors import ChperfError, ExitCode
from artifacts.status import SUMMARY_MD
from ci import comment, summary
from ci.env import CiContext, from_environ


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ci", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    matrix = commands.add_parser("matrix", help="the shard matrix")
    matrix.add_argument("--shards", type=int, required=True)
    s = commands.add_parser("summary", help="status.json, summary.md, step summary")
    s.add_argument("out", type=Path)
    s.add_argument("--exit-code", type=int, default=0, help="of chperf merge/run")
    s.add_argument("--report-url", default="")
    s.add_argument("--run-url", default=None, help="default: this workflow run")
    s.add_argument("--step-summary", type=Path, default=None, help="default: in Actions")
    s.add_argument("--annotations", action="store_true", help="default: in Actions")
    c = commands.add_parser("comment", help="post or update the PR comment")
    c.add_argument("out", type=Path)
    c.add_argument("--repository", default=None)
    c.add_argument("--pr", type=int, default=None)
    u = commands.add_parser("upload", help="chperf upload to $CHPERF_HISTORY_URL")
    u.add_argument("out", type=Path)
    return parser


def cmd_matrix(args: argparse.Namespace, ctx: CiContext) -> int:
    if args.shards < 1:
        raise ChperfError(f"--shards {args.shards}: expected a positive number of shards")
    shards = json.dumps(list(range(1, args.shards + 1)))
    print(shards)
    if ctx.output is not None:
        with ctx.output.open("a", encoding="utf-8") as f:
            f.write(f"shards={shards}\n")
    return 0


def cmd_summary(args: argparse.Namespace, ctx: CiContext) -> int:
    options = summary.SummaryOptions(
        report_url=args.report_url,
        run_url=ctx.run_url if args.run_url is None else args.run_url,
        exit_code=args.exit_code,
    )
    result = summary.write(args.out, options)
    step_summary = args.step_summary or (ctx.step_summary if ctx.in_actions else None)
    if step_summary is not None:
        with step_summary.open("a", encoding="utf-8") as f:
            f.write((args.out / SUMMARY_MD).read_text(encoding="utf-8"))
    if args.annotations or ctx.in_actions:
        for line in summary.error_annotations(result):
            print(line)  # workflow commands are read from stdout
    line = console_text(summary.status_line(result), 2000)  # summary.json's message
    print(f"ci: {line} (exit code {result.exit_code})", file=sys.stderr)
    return result.exit_code


def cmd_comment(args: argparse.Namespace, ctx: CiContext) -> int:
    repository = args.repository or ctx.repository
    pr = args.pr if args.pr is not None else ctx.pr_number
    if not repository or pr is None:
        print("ci: not a pull request: no comment posted", file=sys.stderr)
        return 0
    if not ctx.token:
        raise ChperfError("GITHUB_TOKEN is not set", hint="pass it to the step's env")
    body = (args.out / SUMMARY_MD).read_text(encoding="utf-8")
    api = comment.UrllibGitHub(ctx.api_url, ctx.token)
    done = comment.upsert_comment(api, repository, pr, body, summary.MARKER)
    print(f"ci: PR #{pr} comment {done}", file=sys.stderr)
    return 0


def upload_argv(out: Path, ctx: CiContext) -> list[str]:
    if not ctx.history_url:
        raise ChperfError("CHPERF_HISTORY_URL is not set", hint="set it, or skip the upload step")
    labels = [f"--label={k}={v}" for k, v in sorted(ctx.upload_labels().items())]
    return ["upload", str(out), "--history-url", ctx.history_url, *labels]


def cmd_upload(args: argparse.Namespace, ctx: CiContext) -> int:
    # chperf as a program, not imported: ci/ sits below the CLI. It reads the password from
    # $CHPERF_HISTORY_PASSWORD, inherited here, never from its arguments.
    command = [sys.executable, "-m", "chperf", *upload_argv(args.out, ctx)]
    return subprocess.run(command, check=False).returncode


COMMANDS = {
    "matrix": cmd_matrix,
    "summary": cmd_summary,
    "comment": cmd_comment,
    "upload": cmd_upload,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, from_environ(os.environ))
    except ChperfError as e:
        print(f"ci: error: {console_block(str(e))}", file=sys.stderr)
        return int(e.exit_code)
    except OSError as e:
        print(f"ci: error: {console_text(str(e), 2000)}", file=sys.stderr)
        return int(ExitCode.INFRASTRUCTURE)


if __name__ == "__main__":
    sys.exit(main())
