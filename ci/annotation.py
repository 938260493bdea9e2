"""GitHub workflow commands: one annotation per changed query, on its test file.

A slower query is an error, a query that failed on one side or both a warning, a faster one a
notice. Test names and files are user-supplied: made one line and escaped so that each command
stays one command and its properties stay properties (actions/runner, ActionCommand.cs: `%` in
the message; also `:` and `,` in a property).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from artifacts.console import console_text, escape_controls
from ci.check import CheckSummary, QueryLine
from ci.links import ReportLinks
from report.display import MISSING, change, duration, percent, ratio_interval

KINDS = {"slower": "error", "partial": "warning", "error": "warning", "faster": "notice"}
# GitHub shows at most 10 annotations of each kind a step (and 50 a job; actions/toolkit,
# docs/problem-matchers.md): past that, the last one of a kind says how many more there are.
PER_KIND = 10


def repository_path(file: str, tests_dir: str) -> str:
    """A test file's path relative to the repository, as an annotation needs it: a shard
    records absolute paths on its own machine, so the part from the tests directory on
    (`tests/performance/sort.xml`); a relative path as it is; "" when neither is known."""
    path = PurePosixPath(file)
    if not path.is_absolute():
        return str(path)
    want = PurePosixPath(tests_dir.strip("/")).parts if tests_dir.strip("/.") else ()
    parts = path.parts
    for start in range(len(parts) - len(want), 0, -1):
        if want and parts[start : start + len(want)] == want:
            return str(PurePosixPath(*parts[start:]))
    return ""


def commands(s: CheckSummary, links: ReportLinks, tests_dir: str = "") -> list[str]:
    by_kind: dict[str, list[QueryLine]] = {}
    for q in s.changed:
        by_kind.setdefault(KINDS[q.verdict], []).append(q)
    commands: list[str] = []
    for kind, lines in by_kind.items():
        shown = lines if len(lines) <= PER_KIND else lines[: PER_KIND - 1]
        commands += [_command(kind, q, links, tests_dir) for q in shown]
        if len(shown) < len(lines):
            commands.append(_more(kind, lines[len(shown) :], links))
    return commands


def _command(kind: str, q: QueryLine, links: ReportLinks, tests_dir: str) -> str:
    effect = change(q.diff)
    title = f"{q.test} query {q.query_index} is {q.verdict}" + (
        f": {effect}" if effect != MISSING else ""
    )
    facts = [
        ratio_interval(q.ci_low, q.ci_high, q.ci_level),
        f"median {duration(q.reference_median)} on reference, "
        f"{duration(q.patched_median)} on patched",
        f"threshold {percent(q.threshold, signed=False)}" if q.threshold is not None else "",
        f"details: {links.query(q.test, q.query_index)}" if links.hosted_url else "",
    ]
    message = "; ".join(f for f in facts if f)
    file = repository_path(q.file, tests_dir) if q.file else ""
    where = f"file={_property(console_text(file))}," if file else ""
    return f"::{kind} {where}title={_property(console_text(title))}::{data_text(message)}"


def _more(kind: str, rest: Sequence[QueryLine], links: ReportLinks) -> str:
    verdicts = sorted({q.verdict for q in rest})
    title = f"{len(rest)} more {' or '.join(verdicts)} queries"
    where = links.report or links.artifact_url or "the report"
    return f"::{kind} title={_property(title)}::{data_text(f'listed in {where}')}"


def data_text(text: str) -> str:
    """A command's message on one line: line breaks as " | ", `%` as GitHub's `%25` (the
    runner turns it back), any other control character as a visible escape, `::` and `##[`
    broken up."""
    one_line = " | ".join(text.splitlines()).replace("%", "%25")
    return escape_controls(one_line).replace("::", ": :").replace("##[", "# #[")


def _property(text: str) -> str:
    """A command's property value (file=, title=): also `:` and `,`, which end it."""
    return data_text(text).replace(":", "%3A").replace(",", "%2C")
