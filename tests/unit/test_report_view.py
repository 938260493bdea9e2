"""Golden-ish tests of the report on the hand-made synthetic run (report.synthetic)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from artifacts import tables
from artifacts.tables import ErrorRow
from artifacts.tsv import read_table, write_table
from compare.compare import CompareOptions, compare_directory
from report import render_report, synthetic
from report.flamegraph import FlameGraphs
from report.inputs import load_inputs
from report.view import build_report

# The answer first: the changes, then what else needs a look; method and machine last.
SECTION_ORDER = ["changes", "problems", "unstable", "failed", "skipped", "tests", "all", "method"]


class _Ids(HTMLParser):
    """Collects element ids, section order, hrefs and the text of the document."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.sections: list[str] = []
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.append(str(values["id"]))
            if tag == "section":
                self.sections.append(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.hrefs.append(str(values["href"]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Ids:
    parser = _Ids()
    parser.feed(html)
    return parser


@pytest.fixture
def small_run(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    synthetic.write_small_run(out)
    return out


def _text(html: str) -> str:
    return " ".join(" ".join(_parse(html).text).split())


def test_sections_come_in_the_order_of_the_issue(small_run: Path) -> None:
    html = render_report(small_run).path.read_text()
    assert _parse(html).sections == SECTION_ORDER


def test_every_link_has_a_target_and_every_query_a_details_page(small_run: Path) -> None:
    parsed = _parse(render_report(small_run).path.read_text())
    targets = {h[1:] for h in parsed.hrefs if h.startswith("#")}
    assert targets - set(parsed.ids) == set()
    assert len(parsed.ids) == len(set(parsed.ids)), "ids are unique"
    files = {h.partition("#")[0] for h in parsed.hrefs if not h.startswith("#")}
    assert sorted(f for f in files if not (small_run / f).is_file()) == []
    details = {h for h in parsed.hrefs if h.startswith("details/")}
    assert len(details) == 7  # every query of the run has its details
    assert len({h.partition("#")[0] for h in details}) == 2  # on a page per test


def test_status_line_repeats_summary_and_links_to_the_first_problem(small_run: Path) -> None:
    result = render_report(small_run)
    assert result.problems == ()
    html = result.path.read_text()
    status = re.search(r'<p class="status status-failure" id="status">(.*?)</p>', html, re.S)
    assert status is not None
    assert "1 slower, 1 faster, 1 unstable, 1 partial, 1 error" in status.group(1)
    assert '<a href="#problem-1">first problem</a>' in status.group(1)
    assert '<li id="problem-1"><strong>test file error</strong> in broken' in html


def test_changed_queries_show_ratio_diff_threshold_and_run_plot(small_run: Path) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    slower, faster = report.changes
    assert (slower.test, slower.query_index, slower.verdict) == ("sum", 0, "slower")
    assert (slower.ratio, slower.diff, slower.threshold) == ("1.32x slower", "+32.0%", "4.0%")
    assert slower.change == "1.32x slower (+32.0%)"  # ratio and percent of one estimate
    assert (slower.reference, slower.patched, slower.runs) == ("100 ms", "132 ms", "7")
    assert faster.ratio == "2.00x faster" and faster.diff == "−50.0%"
    (detail,) = [d for page in report.details for d in page.queries if d.query == slower]
    assert detail.plot is not None
    runs = re.search(r'class="runs reference" d="([^"]*)"', detail.plot)
    assert runs is not None and runs.group(1).count("h0") == 7  # a dot per run


def test_metrics_are_ordered_by_largest_significant_change(small_run: Path) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    first = report.changes[0]
    (detail,) = [d for page in report.details for d in page.queries if d.query == first]
    metrics = detail.metrics
    assert [m.metric for m in metrics] == [
        "server_time",
        "RealTimeMicroseconds",
        "ContextLock",
        "SelectedRows",
    ]
    assert [m.significant for m in metrics] == [True, True, False, False]
    assert metrics[1].direction == "up" and metrics[1].patched == "236,000"


def test_query_whose_client_time_exceeds_server_time_by_a_fifth_is_slow_on_client(
    small_run: Path,
) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    flagged = [(q.test, q.query_index) for q in report.all_queries if q.slow_on_client]
    assert flagged == [("strings", 3)]  # server time is half the client time there
    (query,) = [q for q in report.all_queries if q.slow_on_client]
    assert any("exceeds server time" in w and "100.0%" in w for w in query.warnings)


def test_per_test_summary_has_geometric_mean_counts_and_wall_time(small_run: Path) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    by_test = {t.test: t for t in report.tests}
    # sum: ratios 1.32, 0.5, 1.02 -> geometric mean (0.6732)^(1/3) = 0.8764
    assert by_test["sum"].geomean == "1.14x faster"
    assert by_test["sum"].geomean_change == "−12.4%"
    counts = {c.verdict: c.count for c in by_test["sum"].counts}
    assert counts["slower"] == 1 and counts["faster"] == 1 and counts["unchanged"] == 1
    assert by_test["sum"].wall_time == "12 s"
    assert by_test["long_join"].status == "skipped"
    assert report.test_chart is not None


def test_failed_queries_carry_their_server_errors(small_run: Path) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    partial, error = report.failed
    assert partial.verdict == "partial"
    assert [(f.side, f.error_code) for f in partial.failures] == [("patched", 47)]
    assert [f.side for f in error.failures] == ["reference", "patched"]
    assert [(s.test, s.what) for s in report.skipped] == [("long_join", "whole test")]
    kinds = [p.kind for p in report.run_problems]
    assert kinds == ["test file error", "server"]


def test_queries_not_run_or_too_long_are_verdicts_not_problems(small_run: Path) -> None:
    """A budget leaves hundreds of queries unmeasured: each is listed with its verdict, and the
    problem list keeps what went wrong outside single queries (a test's setup, here)."""
    rows = list(read_table(small_run, tables.ERRORS).rows)
    rows += [
        ErrorRow("sum", 0, tables.BOTH, tables.STAGE_NOT_RUN, 0, "the test budget ran out"),
        ErrorRow("sum", 1, tables.PATCHED, tables.STAGE_TOO_LONG, 0, "stopped at 15 s"),
        ErrorRow("sum", tables.WHOLE_TEST, tables.BOTH, tables.STAGE_SETUP, 241, "memory"),
    ]
    write_table(small_run, tables.ERRORS, rows)
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    assert [p.kind for p in report.run_problems] == ["test file error", "server", "setup error"]
    assert not any("budget" in p.message or "15 s" in p.message for p in report.run_problems)


@pytest.mark.parametrize(
    "missing",
    ["run.json", "verdicts.tsv", "summary.json", "metrics.tsv", "runs.tsv", "query_log.tsv"],
)
def test_a_missing_input_is_named_in_the_report_not_raised(small_run: Path, missing: str) -> None:
    (small_run / missing).unlink()
    result = render_report(small_run)
    assert any(p.startswith(f"{missing} is missing") for p in result.problems)
    html = result.path.read_text()
    assert f"{missing} is missing" in html
    assert '<p class="status status-failure"' in html


def test_an_empty_directory_still_gives_a_report_that_says_what_is_missing(
    tmp_path: Path,
) -> None:
    result = render_report(tmp_path)
    assert len(result.problems) == 9  # every file the report reads
    assert "no verdicts: summary.json is missing" in _text(result.path.read_text())


def test_truncated_lines_and_unknown_schema_versions_are_problems(small_run: Path) -> None:
    verdicts = small_run / "verdicts.tsv"
    verdicts.write_text(verdicts.read_text()[:-5])  # cut the last line short
    manifest = json.loads((small_run / "run.json").read_text())
    manifest["schema_version"] = 99
    del manifest["machine"]
    (small_run / "run.json").write_text(json.dumps(manifest))
    problems = render_report(small_run).problems
    assert "verdicts.tsv:8: truncated line (no end of line)" in problems
    assert any("run.json: schema_version 99, this chperf reads 1" in p for p in problems)
    assert "run.json lacks machine: shown as not recorded" in problems
    assert any(p.startswith("1 queries have no verdict in verdicts.tsv") for p in problems)


def test_interrupted_run_is_a_problem(small_run: Path) -> None:
    manifest = json.loads((small_run / "run.json").read_text())
    manifest["status"] = "interrupted"
    (small_run / "run.json").write_text(json.dumps(manifest))
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    assert report.run_problems[0].kind == "run"
    assert "the run is interrupted" in report.run_problems[0].message


def test_confidence_interval_is_shown_when_compare_writes_one(small_run: Path) -> None:
    verdicts = small_run / "verdicts.tsv"
    header, *rows = [line.split("\t") for line in verdicts.read_text().splitlines()]
    low, high = header.index("ci_low"), header.index("ci_high")
    level, diff = header.index("ci_level"), header.index("diff")
    for row in rows:
        row[low], row[high], row[level], row[diff] = "1.25", "1.4", "0.99", "0.32"
    verdicts.write_text("".join("\t".join(row) + "\n" for row in [header, *rows]))
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    assert report.changes[0].ci == "99% CI 1.25–1.40x slower"
    assert report.changes[0].ratio == "1.32x slower"  # from D, the interval's own estimate
    assert "1.32x slower" in render_report(small_run).path.read_text()


@pytest.mark.parametrize(
    ("low", "high", "level", "text"),
    [
        (1.25, 1.4, 0.99, "99% CI 1.25–1.40x slower"),
        (0.8, 0.9, 0.99, "99% CI 1.11–1.25x faster"),
        (0.97, 1.04, 0.95, "95% CI 0.97–1.04x"),
        (None, 1.1, 0.99, ""),
    ],
)
def test_an_interval_is_written_in_the_form_of_its_headline(
    low: float | None, high: float | None, level: float, text: str
) -> None:
    from report.display import ratio_interval

    assert ratio_interval(low, high, level) == text


def test_server_panel_lists_every_process_of_each_side(small_run: Path) -> None:
    manifest = json.loads((small_run / "run.json").read_text())
    servers = manifest["servers"]
    second = {
        side: {**info, "pid": 4242 + n, "process": 1, "restarts": 1, "directory": "/tmp/<b>x</b>"}
        for n, (side, info) in enumerate(servers.items())
    }
    second["patched"]["incidents"] = ["died during run 3 of sum #0; restarted"]
    manifest["processes"] = [servers, second]
    (small_run / "run.json").write_text(json.dumps(manifest))
    html = render_report(small_run).path.read_text()
    text = _text(html)
    assert "process #1" in text and "process #2" in text
    assert "pid 4242" in text and "pid 4243" in text
    assert "incidents died during run 3 of sum #0; restarted" in text
    assert "/tmp/<b>x</b>" not in html and "/tmp/&lt;b&gt;x&lt;/b&gt;" in html


def test_the_answer_comes_first_and_the_method_last_collapsed(small_run: Path) -> None:
    html = render_report(small_run).path.read_text()
    order = ['id="status"', 'id="counts"', 'id="changes-table"', 'id="problems"', 'id="all"']
    positions = [html.index(marker) for marker in order]
    assert positions == sorted(positions)
    method = html[html.index('<section id="method">') :]
    for collapsed in ("method-verdicts", "thresholds", "servers", "options", "profiling"):
        assert f'<details id="{collapsed}">' in method
    assert 'id="machine"' in method  # without monitor.tsv: a line saying there are no samples
    assert "Hodges-Lehmann" in method and "Hodges-Lehmann" not in html[: -len(method)]
    assert "<caption>reference server</caption>" in method  # servers are at the end


def test_counts_per_verdict_link_to_where_those_queries_are(small_run: Path) -> None:
    report = build_report(load_inputs(small_run), FlameGraphs({}, ()), (), "now")
    assert [(c.verdict, c.count, c.href) for c in report.counts] == [
        ("slower", 1, "#changes"),
        ("faster", 1, "#changes"),
        ("unstable", 1, "#unstable"),
        ("partial", 1, "#failed"),
        ("error", 1, "#failed"),
        ("unchanged", 2, "#all"),
    ]


def test_changes_are_sorted_slower_first_each_by_the_size_of_the_change(tmp_path: Path) -> None:
    def spec(index: int, verdict: str, patched: float) -> synthetic.QuerySpec:
        return synthetic.QuerySpec("t", index, f"SELECT {index}", verdict, "r", 0.1, patched, 0.02)

    specs = [spec(0, "faster", 0.09), spec(1, "slower", 0.11), spec(2, "faster", 0.05),
             spec(3, "slower", 0.15), spec(4, "unchanged", 0.1)]  # fmt: skip
    synthetic.write_run(tmp_path, specs)
    report = build_report(load_inputs(tmp_path), FlameGraphs({}, ()), (), "now")
    assert [q.query_index for q in report.changes] == [3, 1, 2, 0]


def test_without_problems_there_is_no_problems_section_link_or_first_problem(
    tmp_path: Path,
) -> None:
    synthetic.write_run(tmp_path, synthetic.small_specs())  # no errors.tsv rows of the run
    result = render_report(tmp_path)
    assert result.problems == ()
    html = result.path.read_text()
    assert 'id="problems"' not in html and 'href="#problems"' not in html
    assert "first problem" not in html
    assert _parse(html).sections == [s for s in SECTION_ORDER if s != "problems"]


def test_a_whole_test_row_says_so_instead_of_index_minus_one(small_run: Path) -> None:
    result = compare_directory(small_run, CompareOptions())  # a verdict row for the whole test
    assert "broken: test failed: parse on both: " in "\n".join(result.failures)
    assert not any(" query -1" in f for f in result.failures)
    html = render_report(small_run).path.read_text()
    row = re.search(r"<tr><td>broken</td><td><a [^>]*>([^<]*)</a>", html)
    assert row is not None and row.group(1) == "whole test"
    assert ">-1<" not in html
    pages = [p.read_text() for p in (small_run / "details").glob("broken-*.html")]
    assert pages and all("<h2>broken · the whole test · " in p for p in pages)
    assert all("query -1" not in p for p in pages)
