"""What the CI writes of a compared run: status.json and summary.md (artifacts/status.py;
summary.md is the PR comment) next to the run's artifacts."""

from __future__ import annotations

from pathlib import Path

from artifacts.status import CheckStatus, write_status
from ci import markdown
from ci.check import CheckSummary, load, status_line
from ci.links import ReportLinks


def check_status(s: CheckSummary, links: ReportLinks) -> CheckStatus:
    return CheckStatus(
        status=s.status,
        exit_code=s.exit_code,
        description=status_line(s),
        counts=s.counts,
        changed=len(s.changed),
        report_url=links.report or links.artifact_url,
        run_url=links.run_url,
    )


def write(out: Path, links: ReportLinks, exit_code: int = 0) -> CheckSummary:
    """Read the run in `out`, write its status.json and summary.md; `exit_code` is that of
    the command that produced the run (merge or run)."""
    s = load(out, exit_code)
    out.mkdir(parents=True, exist_ok=True)  # a merge that failed early may not have made it
    write_status(out, check_status(s, links), markdown.comment(s, links))
    return s
