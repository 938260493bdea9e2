"""The HTML report: `render_report(out)` writes OUT/report.html from the artifacts in OUT.

Modules: inputs (read files tolerantly), view (build the typed view model, pure), model (the
view model's dataclasses), display (number formatting), svg (inline plots), flamegraph
(normalize folded stacks, render with inferno), header (status, servers, problems), render
(jinja2, the entry point).
"""

from report.render import ReportResult, render_report

__all__ = ["ReportResult", "render_report"]
