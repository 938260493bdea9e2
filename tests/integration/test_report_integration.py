"""The report of a real run: installed server vs the same server with max_block_size 8192."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO, run_chperf

pytestmark = pytest.mark.integration
# The answer first; "problems" only when there are any (a clean run has none).
SECTIONS = ("status", "changes", "unstable", "failed", "skipped", "tests", "all", "method")


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, server_binary: Path) -> Path:
    out = tmp_path_factory.mktemp("report") / "out"
    result = run_chperf(
        ["run", "--tests", str(DATA / "report_real"), "--runs", "7", "--out", str(out),
         "--reference", str(server_binary), "--patched", str(server_binary),
         "--patched-config", str(REPO / "overlays" / "max_block_size_8192"),
         "--profile-all", "--profile-seconds", "1.5"]
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return out


def test_report_has_every_section_in_order(real_run: Path) -> None:
    html = (real_run / "report.html").read_text()
    positions = [html.index(f'id="{section}"') for section in SECTIONS]
    assert positions == sorted(positions)


def test_every_local_link_of_the_report_and_its_detail_pages_resolves(real_run: Path) -> None:
    pages = [real_run / "report.html", *sorted((real_run / "details").glob("*.html"))]
    assert len(pages) == 1 + 1  # the details of the test's queries on one page
    assert pages[1].read_text().count('<article class="details" id="q-block_size-') == 2
    for page in pages:
        html = page.read_text()
        anchors = set(re.findall(r'id="([^"]+)"', html))
        for link in set(re.findall(r'href="([^"]+)"', html)):
            target, _, fragment = link.partition("#")
            if not target:
                assert fragment in anchors, (page.name, link)
                continue
            file = page.parent / target
            assert file.is_file(), (page.name, link)
            if fragment:
                assert f'id="{fragment}"' in file.read_text(), (page.name, link)


def test_flame_graphs_exist_are_valid_svg_and_show_clickhouse_code(
    real_run: Path, server_binary: Path
) -> None:
    manifest = json.loads((real_run / "run.json").read_text())
    assert manifest["profiling_unavailable"] is None
    profiled = {(p["test"], p["query_index"]) for p in manifest["profiles"]}
    assert profiled == {("block_size", 0), ("block_size", 1)}
    svgs = sorted((real_run / "flamegraphs").glob("*.svg"))
    assert len(svgs) == 4 * len(profiled)  # reference, patched and two differential graphs
    for svg in svgs:
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg")
    # The engine fixture's library is stripped: its frames are addresses (docs/modern.md).
    symbols = "chdb" not in server_binary.name
    for side_graph in (s for s in svgs if s.name.endswith((".reference.svg", ".patched.svg"))):
        text = side_graph.read_text()
        assert "fg:w=" in text, side_graph.name  # samples, drawn
        assert ("DB::" in text) is symbols, side_graph.name


def test_changed_queries_link_to_their_flame_graphs(real_run: Path) -> None:
    summary = json.loads((real_run / "summary.json").read_text())
    html = (real_run / "report.html").read_text()
    for query in summary["queries"]:
        if query["verdict"] in ("slower", "faster"):
            index = query["query_index"]
            assert re.search(rf'href="flamegraphs/block_size-{index}-[0-9a-f]+\.diff\.svg"', html)
