"""The outcome of a compared run as the CI shows it, read from its directory: the status,
the exit code, the changed queries in the order people should look at them.

Fails closed: without a readable summary.json the status is "error", never "success".
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.console import console_text
from artifacts.errors import ExitCode
from artifacts.manifest import load_manifest
from artifacts.results import ResultProblem, read_result_problems
from artifacts.summary import SummaryQuery, read_summary
from artifacts.tables import TESTS
from artifacts.tsv import read_table
from ci.loadlines import LoadLine, read_load_lines

# The order of the changes: what needs attention first.
LISTED_VERDICTS = ("slower", "partial", "error", "faster")
NOISY_VERDICTS = ("unstable", "inconclusive")
WRONG_RESULT = "wrong result"  # compare.results.ResultStatus.WRONG: fails the check


@dataclass(frozen=True)
class QueryLine(SummaryQuery):
    """A query of summary.json with its test file, for annotations."""

    file: str = ""  # "" when unknown


@dataclass(frozen=True)
class CheckSummary:
    status: str  # success, failure, incomplete, error
    exit_code: int
    message: str
    counts: tuple[tuple[str, int], ...]
    changed: tuple[QueryLine, ...]  # LISTED_VERDICTS, in that order, biggest change first
    unstable: tuple[QueryLine, ...]
    servers: str  # one line about the two servers and the runs
    # queries whose patched result differs from the reference's (artifacts/results.py)
    wrong_results: tuple[ResultProblem, ...] = ()
    load: tuple[LoadLine, ...] = ()  # load-test levels (ci/loadlines.py)


_TITLES = {
    "success": "passed",
    "failure": "failed",
    "incomplete": "incomplete",
    "error": "could not run",
}
_STATUS_CODES = {
    "success": ExitCode.OK,
    "failure": ExitCode.CHECK_FAILED,
    "incomplete": ExitCode.INCOMPLETE,
}
# Which exit code wins when the command's and the summary's differ: an incomplete check is
# better news than a failed one, which is better than one that could not run.
_SEVERITY = (ExitCode.OK, ExitCode.INCOMPLETE, ExitCode.CHECK_FAILED)


def _worst(first: int, second: int) -> int:
    def rank(code: int) -> int:
        return _SEVERITY.index(ExitCode(code)) if code in _SEVERITY else len(_SEVERITY) + code

    return max(first, second, key=rank)


def load(out: Path, exit_code: int = 0) -> CheckSummary:
    """The check of the run directory `out`; `exit_code` is that of the command that made
    it (merge or run): a failed command is never reported as a passing check."""
    found = read_summary(out)
    manifest = load_manifest(out).data
    summary = found.summary
    if summary is None:
        code = max(exit_code, int(ExitCode.INFRASTRUCTURE))
        why = "summary.json is missing (the comparison did not run)" if found.missing else ""
        message = f"no verdicts: {why or '; '.join(found.problems)}"
        return CheckSummary("error", code, message, (), (), (), _servers(manifest))
    files = {t.test: t.file for t in read_table(out, TESTS).rows}
    lines = [_line(q, files) for q in summary.queries]
    derived = _STATUS_CODES.get(summary.status, ExitCode.CHECK_FAILED)
    code = _worst(exit_code, int(derived))
    status = {0: "success", 1: "failure", 4: "incomplete"}.get(code, "error")
    return CheckSummary(
        status=status,
        exit_code=code,
        message=summary.message,
        counts=summary.counts,
        changed=tuple(_ordered([q for q in lines if q.verdict in LISTED_VERDICTS])),
        unstable=tuple(q for q in lines if q.verdict in NOISY_VERDICTS),
        servers=_servers(manifest),
        wrong_results=tuple(p for p in read_result_problems(out) if p.status == WRONG_RESULT),
        load=read_load_lines(out),
    )


def _line(q: SummaryQuery, files: dict[str, str]) -> QueryLine:
    return QueryLine(**dataclasses.asdict(q), file=files.get(q.test, ""))


def _ordered(lines: list[QueryLine]) -> list[QueryLine]:
    def key(q: QueryLine) -> tuple[int, float, str, int]:
        r = 1 + q.diff if q.diff is not None and q.diff > -1 else 1.0
        biggest_first = -max(r, 1 / r)
        return (LISTED_VERDICTS.index(q.verdict), biggest_first, q.test, q.query_index)

    return sorted(lines, key=key)


def _servers(manifest: dict[str, Any] | None) -> str:
    """One line about the servers and the runs; what run.json lacks (or holds in another
    shape, if damaged) reads as unknown."""
    if not manifest:
        return ""
    servers = _object(manifest.get("servers"))

    def side(name: str) -> str:
        info = _object(servers.get(name))
        version = markdown_cell(str(info.get("version", "?")))
        digest = re.sub(r"[^0-9a-f]", "", str(info.get("sha256", "")))[:12]
        return f"{name} {version} (`{digest}`)"

    runs = markdown_cell(str(_object(manifest.get("options")).get("runs")))
    shards = manifest.get("shards")
    count = len(shards) if isinstance(shards, list) and shards else 1
    return f"{side('reference')} vs {side('patched')}; {runs} runs per side; {count} shard(s)"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# What makes a link, an image, HTML, code, emphasis or a new table cell in GitHub's Markdown:
# a backslash before each shows it as is.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def markdown_cell(text: str) -> str:
    """A user-supplied name in a Markdown table or line: one line, no control characters,
    markup shown as text."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", console_text(text))


def status_line(s: CheckSummary) -> str:
    return f"chperf performance check {_TITLES[s.status]}: {s.message or 'no queries'}"
