"""Flame graphs: frame normalization (pure) and rendering real folded stacks with inferno."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from report import flamegraph, render_report, synthetic
from report.flamegraph import THREAD_START, normalize_folded, normalize_frame
from report.inputs import Profile
from tests.conftest import DATA, REPO

REAL = DATA / "report_flame"
needs_inferno = pytest.mark.skipif(
    flamegraph.find_tool(flamegraph.FLAMEGRAPH) is None
    or flamegraph.find_tool(flamegraph.DIFF_FOLDED) is None,
    reason="inferno is not installed (make inferno)",
)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ("DB::Aggregator::execute", "DB::Aggregator::execute"),
        ("0x7f3a2b1c4d5e", None),  # raw address from an unsymbolized trace_log frame
        ("[unknown]", None),
        ("[unknown <7f05b607ef50>]", None),
        ("[libclickhouse.so.18.16.1 <18c4f00>]", "[libclickhouse.so.18.16.1]"),
        ("memcpy+0x1f", "memcpy"),
        (
            "DB::ColumnVector<unsigned long>::filter.llvm.1234567",
            "DB::ColumnVector<unsigned long>::filter",
        ),
        ("clone", THREAD_START),
        ("__clone3", THREAD_START),
        ("start_thread", THREAD_START),
        ("operator new(unsigned long)", "operator new(unsigned long)"),
    ],
)
def test_frames_that_differ_between_builds_for_no_reason_are_normalized(
    frame: str, expected: str | None
) -> None:
    assert normalize_frame(frame) == expected


def test_normalized_stacks_merge_and_keep_every_sample() -> None:
    folded = normalize_folded(
        [
            "__clone3;start_thread;ThreadPool::worker;0x7f01;DB::f.llvm.99 3\n",
            "clone;start_thread;ThreadPool::worker;DB::f 2\n",
            "[unknown];0x7f02 5\n",
            "not a stack line\n",
            "\n",
        ]
    )
    assert folded.stacks == (
        ("[thread start];ThreadPool::worker;DB::f", 5),
        ("[unknown]", 5),
    )
    assert folded.bad_lines == 1


def test_tools_are_looked_up_in_the_repository_first() -> None:
    assert flamegraph.REPO_TOOLS == REPO / "tools" / "bin"
    found = flamegraph.find_tool(flamegraph.FLAMEGRAPH)
    local = flamegraph.REPO_TOOLS / flamegraph.FLAMEGRAPH
    if local.is_file():
        assert found == local
    assert flamegraph.find_tool("no-such-tool-chperf") is None


def _svg_texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()  # valid XML or it raises
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}title")]


@needs_inferno
def test_real_folded_stacks_render_per_side_and_differential_svgs(tmp_path: Path) -> None:
    profiles = [
        Profile("sum", 0, side, REAL / f"{side}.folded", "perf")
        for side in ("reference", "patched")
    ]
    result = flamegraph.render_flamegraphs(tmp_path, profiles)
    assert result.problems == ()
    links = result.links[("sum", 0)]
    assert [link.label for link in links] == ["reference", "patched", "diff", "diff, reverse"]
    for link in links:
        titles = _svg_texts(tmp_path / link.href)
        assert any("DB::Aggregator::execute" in t for t in titles), link.label
        assert not any("<18c4f00>" in t for t in titles), "addresses were normalized away"
    diff_titles = _svg_texts(tmp_path / links[2].href)
    assert any("%" in t for t in diff_titles)  # differential frames carry a +/- percentage


@needs_inferno
def test_report_links_flame_graphs_of_profiled_queries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out, profile_dir=REAL)
    result = render_report(out)
    assert result.problems == ()
    html = result.path.read_text()
    for link in ("reference.svg", "patched.svg", "diff.svg", "diff-reverse.svg"):
        assert html.count(link) >= 2  # in the changes table and in the details block
    assert len(list((out / "flamegraphs").glob("*.svg"))) == 4


def test_a_missing_folded_file_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    profiles = [Profile("sum", 0, "reference", tmp_path / "nope.folded", "trace_log")]
    result = flamegraph.render_flamegraphs(tmp_path, profiles)
    assert any("cannot read" in p and "nope.folded" in p for p in result.problems)
    assert result.links.get(("sum", 0), ()) == ()
