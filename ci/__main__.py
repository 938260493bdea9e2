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
from artifacts.errors import ChperfError, ExitCode, InfrastructureError
from artifacts.status import SUMMARY_MD
from ci import annotation, check, comment, markdown, summary
from ci.env import CiContext, from_environ
from ci.links import ReportLinks, report_links

FORBIDDEN = 403  # GitHub's answer to a read-only token


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ci", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    matrix = commands.add_parser("matrix", help="the shard matrix")
    matrix.add_argument("--shards", type=int, required=True)
    s = commands.add_parser("summary", help="status.json, summary.md, the job summary")
    s.add_argument("out", type=Path)
    s.add_argument("--exit-code", type=int, default=0, help="of chperf merge/run")
    _link_options(s)
    s.add_argument("--step-summary", type=Path, default=None, help="default: in Actions")
    a = commands.add_parser("annotations", help="one workflow command per changed query")
    a.add_argument("out", type=Path)
    _link_options(a)
    a.add_argument("--tests-dir", default="", help="the tests directory in the repository")
    c = commands.add_parser("comment", help="post or update the PR comment")
    c.add_argument("out", type=Path)
    c.add_argument("--repository", default=None)
    c.add_argument("--pr", type=int, default=None)
    c.add_argument("--step-summary", type=Path, default=None, help="default: in Actions")
    u = commands.add_parser("upload", help="chperf upload to $CHPERF_HISTORY_URL")
    u.add_argument("out", type=Path)
    return parser


def _link_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--report-url", default="", help="the report artifact")
    command.add_argument("--hosted-report", default="", help="URL of the served report dir")
    command.add_argument("--run-url", default=None, help="default: this workflow run")


def _links(args: argparse.Namespace, ctx: CiContext) -> ReportLinks:
    run_url = ctx.run_url if args.run_url is None else args.run_url
    return report_links(args.report_url, args.hosted_report, run_url)


def _step_summary(args: argparse.Namespace, ctx: CiContext) -> Path | None:
    return args.step_summary or (ctx.step_summary if ctx.in_actions else None)


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


def cmd_matrix(args: argparse.Namespace, ctx: CiContext) -> int:
    if args.shards < 1:
        raise ChperfError(f"--shards {args.shards}: expected a positive number of shards")
    shards = json.dumps(list(range(1, args.shards + 1)))
    print(shards)
    if ctx.output is not None:
        _append(ctx.output, f"shards={shards}\n")
    return 0


def cmd_summary(args: argparse.Namespace, ctx: CiContext) -> int:
    links = _links(args, ctx)
    result = summary.write(args.out, links, args.exit_code)
    step_summary = _step_summary(args, ctx)
    if step_summary is not None:
        _append(step_summary, markdown.job_summary(result, links))
    line = console_text(check.status_line(result), 2000)  # summary.json's message
    print(f"ci: {line} (exit code {result.exit_code})", file=sys.stderr)
    return result.exit_code


def cmd_annotations(args: argparse.Namespace, ctx: CiContext) -> int:
    result = check.load(args.out)
    for line in annotation.commands(result, _links(args, ctx), args.tests_dir):
        print(line)  # workflow commands are read from stdout
    return 0


def cmd_comment(args: argparse.Namespace, ctx: CiContext) -> int:
    """Never fails for GitHub's sake: without permission (a fork's pull request, a read-only
    token) or when the API is down, the comment goes to the job summary with the reason."""
    repository = args.repository or ctx.repository
    pr = args.pr if args.pr is not None else ctx.pr_number
    if not repository or pr is None:
        print("ci: not a pull request: no comment posted", file=sys.stderr)
        return 0
    body = (args.out / SUMMARY_MD).read_text(encoding="utf-8")
    try:
        if not ctx.token:
            raise comment.NoPermission("GITHUB_TOKEN is not set for the comment step")
        api = comment.UrllibGitHub(ctx.api_url, ctx.token)
        done = comment.upsert_comment(api, repository, pr, body, markdown.MARKER)
    except InfrastructureError as e:
        return _comment_fallback(args, ctx, body, e)
    print(f"ci: PR {pr} comment {done}", file=sys.stderr)
    return 0


def _comment_fallback(
    args: argparse.Namespace, ctx: CiContext, body: str, error: InfrastructureError
) -> int:
    kind = "no permission to comment" if isinstance(error, comment.NoPermission) else "failed"
    reason = f"{kind}: {error.message}"
    if isinstance(error, comment.NoPermission) and error.status == FORBIDDEN:
        reason += " (a pull request from a fork gets a read-only token)"
    step_summary = _step_summary(args, ctx)
    if step_summary is not None:
        _append(step_summary, comment.fallback_summary(body, reason))
        reason += "; the job summary has the comment"
    if ctx.in_actions:
        print(f"::warning title=chperf PR comment::{annotation.data_text(reason)}")
    print(f"ci: {console_text(reason, 2000)}", file=sys.stderr)
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
    "annotations": cmd_annotations,
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
