"""What the CI shows of a compared run: status.json and summary.md (artifacts/status.py),
the job step summary and error annotations on the test files.

Fails closed: without a readable summary.json the status is "error", never "success".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifacts.console import console_text, escape_controls
from artifacts.errors import ExitCode
from artifacts.manifest import load_manifest
from artifacts.status import CheckStatus, write_status
from artifacts.summary import SummaryQuery, read_summary
from artifacts.tables import TESTS
from artifacts.tsv import read_table
from report.display import MISSING, change, duration, percent, ratio_interval

MARKER = "<!-- chperf:perf-check -->"
# Rows of the changed-queries table: a comment people read, the report has them all.
MAX_ROWS = 30
# The order of the table: what needs attention first.
LISTED_VERDICTS = ("slower", "partial", "error", "faster")
FAILING_VERDICTS = ("slower",)  # annotated as errors on the test file


@dataclass(frozen=True)
class SummaryOptions:
    report_url: str = ""
    run_url: str = ""
    exit_code: int = 0  # of the command that produced the artifacts (merge or run)


@dataclass(frozen=True)
class QueryLine(SummaryQuery):
    """A query of summary.json with its test file, for annotations."""

    file: str = ""  # "" when unknown


@dataclass(frozen=True)
class CheckSummary:
    status: str
    exit_code: int
    message: str
    counts: tuple[tuple[str, int], ...]
    changed: tuple[QueryLine, ...]  # LISTED_VERDICTS, in that order
    unstable: tuple[QueryLine, ...]
    servers: str  # one line about the two servers and the runs


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


def load(out: Path, options: SummaryOptions) -> CheckSummary:
    found = read_summary(out)
    manifest = load_manifest(out).data
    summary = found.summary
    if summary is None:
        code = max(options.exit_code, int(ExitCode.INFRASTRUCTURE))
        why = "summary.json is missing (the comparison did not run)" if found.missing else ""
        message = f"no verdicts: {why or '; '.join(found.problems)}"
        return CheckSummary("error", code, message, (), (), (), _servers(manifest))
    files = {t.test: t.file for t in read_table(out, TESTS).rows}
    lines = [_line(q, files) for q in summary.queries]
    derived = _STATUS_CODES.get(summary.status, ExitCode.CHECK_FAILED)
    code = _worst(options.exit_code, int(derived))
    status = {0: "success", 1: "failure", 4: "incomplete"}.get(code, "error")
    return CheckSummary(
        status=status,
        exit_code=code,
        message=summary.message,
        counts=summary.counts,
        changed=tuple(_ordered([q for q in lines if q.verdict in LISTED_VERDICTS])),
        unstable=tuple(q for q in lines if q.verdict in ("unstable", "inconclusive")),
        servers=_servers(manifest),
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
        version = _cell(str(info.get("version", "?")))
        return f"{name} {version} (`{_cell(str(info.get('sha256', '')))[:12]}`)"

    runs = _cell(str(_object(manifest.get("options")).get("runs")))
    shards = manifest.get("shards")
    count = len(shards) if isinstance(shards, list) and shards else 1
    return f"{side('reference')} vs {side('patched')}; {runs} runs per side; {count} shard(s)"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def status_line(s: CheckSummary) -> str:
    return f"chperf performance check {_TITLES[s.status]}: {s.message or 'no queries'}"


def render_markdown(s: CheckSummary, options: SummaryOptions) -> str:
    parts = [MARKER, f"### {status_line(s)}", ""]
    if s.servers:
        parts += [s.servers, ""]
    if s.changed:
        parts += _table(s.changed)
    if s.unstable:
        names = ", ".join(f"{_cell(q.test)} #{q.query_index}" for q in s.unstable[:MAX_ROWS])
        more = f" and {len(s.unstable) - MAX_ROWS} more" if len(s.unstable) > MAX_ROWS else ""
        parts += [f"Unstable (too noisy to judge, not failing): {names}{more}", ""]
    parts.append(_links(options))
    return "\n".join(parts).rstrip("\n") + "\n"


def _table(lines: Sequence[QueryLine]) -> list[str]:
    rows = [
        "| Verdict | Test | Query | Reference median | Patched median | Change | Interval | T |",
        "|---|---|---:|---:|---:|---|---|---:|",
    ]
    for q in lines[:MAX_ROWS]:
        interval = ratio_interval(q.ci_low, q.ci_high, q.ci_level) or MISSING
        threshold = percent(q.threshold, signed=False)
        rows.append(
            f"| {q.verdict} | {_cell(q.test)} | {q.query_index} | "
            f"{duration(q.reference_median)} | {duration(q.patched_median)} | "
            f"{change(q.diff)} | {interval} | {threshold} |"
        )
    if len(lines) > MAX_ROWS:
        rows.append(f"\n…and {len(lines) - MAX_ROWS} more in the report.")
    return [*rows, ""]


def _cell(text: str) -> str:
    """A name in a Markdown table: one line, no control characters, pipes escaped."""
    return console_text(text).replace("|", "\\|")


def _links(options: SummaryOptions) -> str:
    links = []
    if options.report_url:
        links.append(f"[HTML report and artifacts]({options.report_url})")
    if options.run_url:
        links.append(f"[CI run]({options.run_url})")
    return " · ".join(links)


def check_status(s: CheckSummary, options: SummaryOptions) -> CheckStatus:
    return CheckStatus(
        status=s.status,
        exit_code=s.exit_code,
        description=status_line(s),
        counts=s.counts,
        changed=len(s.changed),
        report_url=options.report_url,
        run_url=options.run_url,
    )


def error_annotations(s: CheckSummary) -> list[str]:
    """GitHub workflow commands: one error on the test file per slower query. The test's
    name and file are user-supplied: escaped so that they stay within their command."""
    commands = []
    for q in s.changed:
        if q.verdict not in FAILING_VERDICTS:
            continue
        title = f"{q.test} query {q.query_index} is {change(q.diff)}"
        message = (
            f"median {duration(q.reference_median)} on reference, "
            f"{duration(q.patched_median)} on patched "
            f"(threshold {percent(q.threshold, signed=False)})"
        )
        where = f"file={_property(q.file)}," if q.file else ""
        commands.append(f"::error {where}title={_property(title)}::{_data(message)}")
    return commands


def _data(text: str) -> str:
    """A command's message: GitHub's escapes of `%`, CR and LF (the runner turns them back),
    then any other control character (an ANSI escape, say) as a visible escape."""
    return escape_controls(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _property(text: str) -> str:
    """A command's property value (file=, title=): also `:` and `,`, which end it."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def write(out: Path, options: SummaryOptions) -> CheckSummary:
    s = load(out, options)
    out.mkdir(parents=True, exist_ok=True)  # a merge that failed early may not have made it
    write_status(out, check_status(s, options), render_markdown(s, options))
    return s
