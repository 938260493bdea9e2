"""The HTML report: `render_report(out)` writes OUT/report.html from the artifacts in OUT."""

from report.render import ReportResult, render_report

__all__ = ["ReportResult", "render_report"]
