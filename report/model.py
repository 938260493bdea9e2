"""The view model: everything the templates print, already computed and formatted.

Numbers arrive as display strings plus, where the browser sorts on them, a plain-number
`sort_*` string. SVG plots are Markup built from numbers, their text escaped (svg.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from artifacts.tables import WHOLE_TEST
from report.load import LoadSection
from report.protocols import ProtocolSection


@dataclass(frozen=True)
class Field:
    label: str
    value: str


@dataclass(frozen=True)
class ServerView:
    side: str
    version: str
    binary: str
    sha256: str
    overlays: tuple[str, ...]
    details: tuple[Field, ...]  # capabilities, ports, pid


@dataclass(frozen=True)
class Header:
    status: str  # success, failure or unknown (no summary.json)
    outcome: str  # the status in words: "passed", "failed", "incomplete"
    message: str  # summary.json's message, plus what the report adds
    first_problem: str | None  # anchor of the first problem; None when there are none
    run: tuple[Field, ...]
    servers: tuple[ServerView, ...]
    machine: tuple[Field, ...]
    options: tuple[Field, ...]
    profiling_note: str | None  # why there are no flame graphs, when there are none
    profiling_problems: tuple[str, ...]  # profiles not taken or not rendered: never a failure
    statistics: tuple[str, ...] = ()  # false-discovery control and calibration, in words
    thresholds: tuple[Field, ...] = ()  # minimum effect, unstable threshold, method, FDR


@dataclass(frozen=True)
class ProblemView:
    anchor: str
    kind: str  # "setup error", "server", "report", ...
    where: str
    message: str


@dataclass(frozen=True)
class Link:
    label: str
    href: str  # relative to report.html


@dataclass(frozen=True)
class MetricView:
    metric: str
    reference: str
    patched: str
    diff: str
    threshold: str
    significant: bool  # |diff| >= threshold
    direction: str  # "up", "down" or "" (for the colour of a significant change)


@dataclass(frozen=True)
class FailureView:
    side: str
    stage: str
    error_code: int
    message: str


@dataclass(frozen=True)
class QueryView:
    anchor: str  # id of the query's row in the all-queries table
    detail_href: str  # its detail page, relative to report.html (details/<id>.html)
    test: str
    query_index: int
    name: str  # the query's tag in the test file, "" without one
    query: str  # up to display.MAX_QUERY_CHARS
    query_line: str  # up to display.MAX_ROW_QUERY_CHARS, for the tables of the main page
    verdict: str
    reason: str
    reference: str
    patched: str
    ratio: str
    change: str  # the estimate as a ratio and a percentage: "1.32x slower (+32.0%)"
    ci: str  # "99% CI 1.25–1.40x slower" when compare provides it, else ""
    diff: str
    threshold: str
    runs: str
    sort_reference: str
    sort_patched: str
    sort_ratio: str
    sort_diff: str
    sort_threshold: str
    warnings: tuple[str, ...]  # measurement-quality warnings, each with its remedy
    slow_on_client: bool
    failures: tuple[FailureView, ...]
    flamegraphs: tuple[Link, ...]
    flamegraphs_unavailable: tuple[str, ...]  # why a side has none, e.g. no samples
    disturbed: str = ""  # "runs 5-8 of 15 coincided with ..." (compare/interference.py)
    equivalence: str = ""  # "equivalent" / "inconclusive" for unchanged queries
    not_calibrated: str = ""  # "not calibrated: why" when a calibration file lacks the query
    query_file: str = ""  # href of the whole text when `query` is cut (view.MAX_QUERY_CHARS)
    query_cut: str = ""  # "the first 65,536 of 52,428,800 characters" when it is

    @property
    def index_label(self) -> str:
        """The query's index as shown; a row for a whole test (query_index -1) says so."""
        return "whole test" if self.query_index == WHOLE_TEST else str(self.query_index)

    @property
    def heading(self) -> str:
        """The row as a heading: query 3, or the whole test."""
        return "the whole test" if self.query_index == WHOLE_TEST else f"query {self.query_index}"


@dataclass(frozen=True)
class DetailView:
    """One query's details, a section of its details page; hrefs are relative to details/."""

    query: QueryView
    report_href: str  # back to the query's row in report.html
    plot: Markup | None  # per-run times of both sides in run order
    outliers: str  # which runs the plot rings as outliers, "" when none
    timeline: Markup | None  # the machine's CPU while the query ran (monitor.tsv)
    metrics: tuple[MetricView, ...]
    metrics_omitted: int  # smaller changes not shown (they are in metrics.tsv)
    flamegraphs: tuple[Link, ...]
    flame_notes: tuple[str, ...]  # about all flame graphs, e.g. why some frames have no names
    profiling_note: str | None  # why the run has no flame graphs at all
    query_file: str  # the whole text when the page shows it cut, else ""


@dataclass(frozen=True)
class DetailPage:
    """details/<file>: the details of up to display.DETAILS_PER_PAGE queries of one test."""

    file: str
    test: str
    queries: tuple[DetailView, ...]


@dataclass(frozen=True)
class VerdictCount:
    verdict: str
    count: int
    href: str = ""  # where the report lists the queries of this verdict


@dataclass(frozen=True)
class TestSummaryView:
    test: str
    anchor: str
    status: str  # from tests.tsv: ran, skipped, error; "" when unknown
    geomean: str  # geometric mean of patched/reference over the test's measured queries
    geomean_change: str
    sort_geomean: str
    counts: tuple[VerdictCount, ...]  # in Report.verdicts order
    wall_time: str
    sort_wall_time: str


@dataclass(frozen=True)
class SkippedView:
    test: str
    what: str  # "whole test" or "query 3"
    reason: str


@dataclass(frozen=True)
class Report:
    title: str
    header: Header
    counts: tuple[VerdictCount, ...]  # the verdicts that occur, in display order
    disturbed: int  # queries with runs the environment monitor saw disturbed
    run_problems: tuple[ProblemView, ...]  # errors.tsv rows that are not one query's failure
    build_problems: tuple[ProblemView, ...]
    changes: tuple[QueryView, ...]
    unstable: tuple[QueryView, ...]
    failed: tuple[QueryView, ...]  # partial and error
    skipped: tuple[SkippedView, ...]
    tests: tuple[TestSummaryView, ...]
    test_chart: Markup | None
    machine_timeline: Markup | None  # the environment monitor's CPU over the run
    flame_notes: tuple[str, ...]  # about all flame graphs, e.g. why some frames have no names
    all_queries: tuple[QueryView, ...]
    verdicts: tuple[str, ...]  # every verdict name, in display order
    details: tuple[DetailPage, ...]  # every query's details, a page per test (or part)
    generated_at: str
    protocols: ProtocolSection | None = None  # protocol timings; None: the run has none
    load: LoadSection | None = None  # load tests (report/load.py); None: the run has none
