"""The PR comment and the job summary, in GitHub's Markdown. The comment is short: the verdict,
the biggest changes with links to their detail pages, the links to the report; nothing else
when nothing changed. The job summary adds the servers and the noisy queries."""

from __future__ import annotations

from collections.abc import Sequence

from artifacts.results import ResultProblem, SideResult
from ci.check import CheckSummary, QueryLine, markdown_cell, status_line
from ci.links import REPORT_PAGE, ReportLinks
from ci.loadlines import load_table
from report.display import MISSING, change, ratio_interval

MARKER = "<!-- chperf:perf-check -->"  # finds the comment again, to update it in place
# Rows of the changes table: the comment is read between two code reviews, the job summary
# by whoever opens the run; the report lists every query.
COMMENT_ROWS = 10
SUMMARY_ROWS = 50
NOISY_NAMES = 30  # unstable and inconclusive queries named in the job summary


def comment(s: CheckSummary, links: ReportLinks) -> str:
    """The PR comment (summary.md): starts with the marker."""
    parts = [MARKER, f"### {markdown_cell(status_line(s))}", ""]
    if s.wrong_results:
        parts += wrong_results_table(s.wrong_results, COMMENT_ROWS)
    if s.changed:
        parts += changes_table(s.changed, links, COMMENT_ROWS)
    parts += load_table(s.load, markdown_cell, notable_only=True)
    parts.append(links_line(links))
    return _joined(parts)


def job_summary(s: CheckSummary, links: ReportLinks) -> str:
    """The job summary: the comment's content, the servers and the noisy queries."""
    parts = [f"### {markdown_cell(status_line(s))}", ""]
    if s.servers:
        parts += [s.servers, ""]
    if s.wrong_results:
        parts += wrong_results_table(s.wrong_results, SUMMARY_ROWS)
    if s.changed:
        parts += changes_table(s.changed, links, SUMMARY_ROWS)
    parts += load_table(s.load, markdown_cell, notable_only=False)
    if s.unstable:
        parts += [_noisy(s.unstable), ""]
    parts.append(links_line(links))
    return _joined(parts)


def changes_table(lines: Sequence[QueryLine], links: ReportLinks, rows: int) -> list[str]:
    """The first `rows` changes: verdict, query, the effect with its interval as the report
    shows them, and the query's detail page when the report is served."""
    linked = bool(links.hosted_url)
    header = "| Verdict | Query | Change | Interval |" + (" |" if linked else "")
    rule = "|---|---|---|---|" + ("---|" if linked else "")
    table = [header, rule]
    for q in lines[:rows]:
        interval = ratio_interval(q.ci_low, q.ci_high, q.ci_level) or MISSING
        row = f"| {q.verdict} | {_query(q)} | {change(q.diff)} | {interval} |"
        if linked:
            row += f" [details]({links.query(q.test, q.query_index)}) |"
        table.append(row)
    if len(lines) > rows:
        table += ["", f"…and {len(lines) - rows} more in the report."]
    return [*table, ""]


def wrong_results_table(problems: Sequence[ResultProblem], rows: int) -> list[str]:
    """Queries whose patched result differs from the reference's: each side's row count and
    result hash (docs/method.md, "Result equality")."""
    table = ["| Wrong result | Reference | Patched |", "|---|---|---|"]
    for p in problems[:rows]:
        query = f"{markdown_cell(p.test)} query {p.query_index}"
        table.append(f"| {query} | {_results(p.reference)} | {_results(p.patched)} |")
    if len(problems) > rows:
        table += ["", f"…and {len(problems) - rows} more in the report."]
    return [*table, ""]


def _results(results: Sequence[SideResult]) -> str:
    return " or ".join(f"{r.rows} rows, hash {markdown_cell(r.hash)}" for r in results) or MISSING


def _query(q: QueryLine) -> str:
    return f"{markdown_cell(q.test)} query {q.query_index}"


def _noisy(lines: Sequence[QueryLine]) -> str:
    names = ", ".join(_query(q) for q in lines[:NOISY_NAMES])
    more = f" and {len(lines) - NOISY_NAMES} more" if len(lines) > NOISY_NAMES else ""
    return f"Too noisy to judge (not failing): {names}{more}"


def links_line(links: ReportLinks) -> str:
    found = []
    if links.report:
        found.append(f"[Report]({links.report})")
    if links.artifact_url:
        found.append(f"[report artifact]({links.artifact_url}) (download, open {REPORT_PAGE})")
    if links.run_url:
        found.append(f"[CI run]({links.run_url})")
    return " · ".join(found)


def _joined(parts: list[str]) -> str:
    return "\n".join(parts).rstrip("\n") + "\n"
