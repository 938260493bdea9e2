"""A query text longer than the report shows (report/display.py MAX_QUERY_CHARS): the report
shows its beginning and links the whole text, written next to it; its size stays bounded."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from report import synthetic
from report.display import MAX_QUERY_CHARS, MAX_ROW_QUERY_CHARS
from tests.conftest import run_chperf

HUGE = 3 * 1024 * 1024  # characters of the long query; the report holds each text 2-3 times


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs.extend(value for name, value in attrs if name == "href" and value)


def test_a_huge_query_is_cut_in_the_report_and_written_whole_next_to_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    long_tail = " /* " + "x" * HUGE + " */"
    specs = synthetic.write_small_run(out, strings_query=long_tail)
    long_queries = [q for q in specs if q.sql.endswith(long_tail)]
    assert len(long_queries) == 2

    done = run_chperf(["report", str(out)])
    assert done.returncode in (0, 1), done.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert len(html) < 2 * 1024 * 1024  # without the cut: over 6 * HUGE
    parser = _Links()
    parser.feed(html)
    full = sorted({h for h in parser.hrefs if h.startswith("queries/")})
    assert len(full) == 2
    assert sorted((out / href).read_text(encoding="utf-8") for href in full) == sorted(
        q.sql for q in long_queries
    )
    pages = [p.read_text(encoding="utf-8") for p in sorted((out / "details").iterdir())]
    for q in long_queries:  # each details page says how much of its query it shows
        cut = f"the first {MAX_QUERY_CHARS:,} of {len(q.sql):,} characters"
        assert sum(cut in page for page in pages) == 1
    assert sum(f'href="../{href}"' in page for page in pages for href in full) == 2
    details = "".join(pages)
    for q in long_queries:  # the tables hold a line of it, the details page 64 KiB
        assert q.sql[:MAX_ROW_QUERY_CHARS] + "…" in html
        assert q.sql[: MAX_ROW_QUERY_CHARS + 1] not in html
        assert q.sql[:MAX_QUERY_CHARS] + "…" in details
        assert q.sql[: MAX_QUERY_CHARS + 1] not in details


def test_queries_within_the_limit_are_shown_whole_and_get_no_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out)
    assert run_chperf(["report", str(out)]).returncode in (0, 1)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "SELECT sum(number) FROM numbers(100000000)" in html
    assert not (out / "queries").exists() and "full query" not in html
