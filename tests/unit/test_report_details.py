"""Every query's details (a section of details/<test-id>-<n>.html): there for each query,
self-contained, its links resolving, its run plot marking the runs compare/interference.py
names as disturbed and the outliers; written whole, an earlier report's pages never left
behind."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from artifacts.tables import RUNS
from artifacts.tsv import read_table, write_table
from compare.interference import interference
from report import render_report, synthetic
from report.display import DETAILS_PER_PAGE
from report.flamegraph import FlameGraphs
from report.inputs import load_inputs
from report.model import Link
from report.view import build_report


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.sources: list[str] = []  # src= of anything: a self-contained page has none

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag in ("a", "link") and values.get("href"):
            self.hrefs.append(str(values["href"]))
        if values.get("src"):
            self.sources.append(str(values["src"]))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _unresolved(page: Path) -> list[str]:
    """The links of `page` that lead nowhere: no file, or no element with the fragment's id."""
    parsed = _parse(page)
    broken = []
    for href in parsed.hrefs:
        target, _, fragment = href.partition("#")
        file = (page.parent / target).resolve() if target else page
        if not file.is_file():
            broken.append(href)
        elif fragment and file.suffix == ".html" and fragment not in _parse(file).ids:
            broken.append(href)
    return broken


@pytest.fixture
def neighbour_run(tmp_path: Path) -> Path:
    """The golden queries, 12 runs a side, a neighbour busy from 1.0 s to 2.0 s of the run."""
    out = tmp_path / "out"
    synthetic.write_run(out, synthetic.small_specs(), runs=12, busy=[(1.0, 2.0)])
    return out


def test_every_query_has_self_contained_details_whose_links_all_resolve(
    neighbour_run: Path,
) -> None:
    report = render_report(neighbour_run).path
    pages = sorted((neighbour_run / "details").iterdir())
    assert [p.name.split("-")[0] for p in pages] == ["strings", "sum"]  # a page per test
    main = _parse(report)
    details = {h for h in main.hrefs if h.startswith("details/")}
    assert len(details) == len(synthetic.small_specs())  # each query its own section
    for page in [report, *pages]:
        assert _unresolved(page) == [], page.name
        assert _parse(page).sources == [], page.name  # nothing loaded from elsewhere
    back = [h for p in pages for h in _parse(p).hrefs if h.startswith("../report.html#q-")]
    assert len(back) == len(details)  # each query's section links back to its row


def test_a_test_with_many_queries_has_its_details_on_several_pages(tmp_path: Path) -> None:
    specs = [
        synthetic.QuerySpec("t", i, f"SELECT {i}", "unchanged", "r", 0.1, 0.1, 0.02)
        for i in range(DETAILS_PER_PAGE + 1)
    ]
    synthetic.write_run(tmp_path, specs)
    render_report(tmp_path)
    pages = sorted((tmp_path / "details").iterdir())
    sections = [len(re.findall(r'<article class="details" id="q-', p.read_text())) for p in pages]
    assert sections == [DETAILS_PER_PAGE, 1]
    assert [_unresolved(p) for p in pages] == [[], []]


def test_the_runs_compare_names_as_disturbed_are_shaded_and_named(neighbour_run: Path) -> None:
    disturbed = {
        key: found for key, found in interference(neighbour_run).items() if found.disturbed
    }
    assert list(disturbed) == [("sum", 0)]  # only the first query ran from 1 s to 2 s
    found = disturbed[("sum", 0)]
    report = build_report(load_inputs(neighbour_run), FlameGraphs({}, ()), (), "now")
    views = [d for page in report.details for d in page.queries]
    (page,) = [d for d in views if (d.query.test, d.query.query_index) == ("sum", 0)]
    assert page.plot is not None and page.timeline is not None
    titles = re.findall(r'<rect class="disturbed"[^>]*><title>run (\d+):', page.plot)
    assert tuple(int(t) for t in titles) == found.disturbed
    assert page.query.disturbed == found.note()
    assert page.query.disturbed.startswith("runs 4-7 of 12 coincided with up to 0.60 cores")
    assert report.disturbed == 1
    html = render_report(neighbour_run).path.read_text()
    assert '<details id="machine" open>' in html
    assert "1 with disturbed runs" in html
    detail = (neighbour_run / page.query.detail_href.partition("#")[0]).read_text()
    assert found.note() in detail and "The machine while the query ran" in detail


def test_an_outlier_is_ringed_and_named_on_its_page(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_run(out, synthetic.small_specs(), runs=12)
    rows = read_table(out, RUNS).rows
    slow = [
        replace(r, client_time=r.client_time * 3)
        if (r.test, r.query_index, r.server, r.run) == ("sum", 2, "patched", 9)
        else r
        for r in rows
    ]
    write_table(out, RUNS, slow)
    render_report(out)
    report = build_report(load_inputs(out), FlameGraphs({}, ()), (), "now")
    views = [d for page in report.details for d in page.queries]
    outliers = {(d.query.test, d.query.query_index): d.outliers for d in views}
    assert {k: v for k, v in outliers.items() if v} == {("sum", 2): "patched run 9"}
    (page,) = [d for d in views if d.outliers]
    assert page.plot is not None and page.plot.count('class="outlier patched"') == 1


def test_flame_graph_links_of_a_page_lead_out_of_details(tmp_path: Path) -> None:
    synthetic.write_small_run(tmp_path)
    links: dict[tuple[str, int], tuple[Link, ...]] = {
        ("sum", 0): (Link("diff", "flamegraphs/sum-0.diff.svg"),)
    }
    flames = FlameGraphs(links, (), notes=("libfoo.so is stripped",))
    report = build_report(load_inputs(tmp_path), flames, (), "now")
    pages = {(d.query.test, d.query.query_index): d for p in report.details for d in p.queries}
    assert pages[("sum", 0)].flamegraphs == (Link("diff", "../flamegraphs/sum-0.diff.svg"),)
    assert pages[("sum", 0)].flame_notes == ("libfoo.so is stripped",)
    assert pages[("sum", 1)].flamegraphs == () and pages[("sum", 1)].flame_notes == ()


def test_a_new_report_leaves_no_page_of_an_earlier_one(tmp_path: Path) -> None:
    synthetic.write_small_run(tmp_path)
    render_report(tmp_path)
    stale = tmp_path / "details" / "gone-0-00000000.html"
    stale.write_text("an earlier report's page")
    render_report(tmp_path)
    assert not stale.exists()
    assert len(list((tmp_path / "details").iterdir())) == 2  # a page per test
    assert not (tmp_path / "details.new").exists()


def test_pages_that_cannot_be_written_are_a_problem_of_the_report(tmp_path: Path) -> None:
    synthetic.write_small_run(tmp_path)
    (tmp_path / "details.new").write_text("in the way")  # a file where the pages go first
    result = render_report(tmp_path)
    assert len(result.problems) == 1
    assert result.problems[0].startswith("the detail pages could not be written")
    html = result.path.read_text()
    assert "the detail pages could not be written" in html
    assert '<p class="status status-failure"' in html
