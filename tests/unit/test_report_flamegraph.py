"""Flame graphs: frame normalization, per-run scaling and the differential's noise test (pure),
and rendering real folded stacks with inferno."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from report import flamegraph, render_report, synthetic
from report.flamediff import SideScale, changed, mark_unchanged, scaled
from report.flamegraph import THREAD_START, normalize_folded, normalize_frame, normalize_stack
from report.inputs import Profile
from tests.conftest import DATA, REPO

# An older run's profile: perf periods as counts, no run counts (README.md there).
OLDER = DATA / "report_flame"
# A real run of chperf: reference and patched profiles with their run.json records.
REAL = DATA / "report_flame_runs"
needs_inferno = pytest.mark.skipif(
    flamegraph.find_tool(flamegraph.FLAMEGRAPH) is None
    or flamegraph.find_tool(flamegraph.DIFF_FOLDED) is None,
    reason="inferno is not installed (make inferno)",
)
SVG = "{http://www.w3.org/2000/svg}"
PALE = "rgb(250,250,250)"  # inferno's colour for a frame whose difference is zero


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


def test_repeated_frames_without_names_become_one() -> None:
    stack = "python3.11;[_chdb.abi3.so];[_chdb.abi3.so <1a>];[_chdb.abi3.so];memcpy;[libc.so.6]"
    assert normalize_stack(stack) == "python3.11;[_chdb.abi3.so];memcpy;[libc.so.6]"
    assert normalize_stack("f;f;g") == "f;f;g"  # recursion of a named function stays


@pytest.mark.parametrize(
    ("reference", "patched", "runs", "expected"),
    [
        ((100, 100), (100, 100), "same", False),
        ((100, 10), (200, 10), "twice the CPU per run", True),
        ((10, 10), (14, 10), "+40% but 4 samples: sampling noise", False),
        ((100, 10), (100, 20), "the same samples over twice the runs", True),
        ((10000, 10), (10300, 10), "+3%: significant, but under the minimum change", False),
        ((0, 10), (12, 10), "code that only patched runs", True),
        ((0, 10), (4, 10), "4 samples of new code: noise", False),
    ],
)
def test_a_stack_changed_only_beyond_sampling_noise_and_the_minimum_change(
    reference: tuple[int, int], patched: tuple[int, int], runs: str, expected: bool
) -> None:
    ref, pat = SideScale(reference[1], 2_000_000), SideScale(patched[1], 2_000_000)
    assert changed(reference[0], patched[0], ref, pat) is expected, runs


def test_samples_become_cpu_microseconds_per_run() -> None:
    # 1 sample of 10 ms over 4 runs: 2,500 µs a run; a stack never rounds away.
    assert scaled({"a;b": 1, "a": 0}, SideScale(4, 10_000_000)) == {"a;b": 2500}
    assert scaled({"a": 1}, SideScale(100_000, 1_000_000)) == {"a": 1}
    assert scaled({"a": 7}, SideScale(0, 0)) == {"a": 7}  # an older run: left as counted


def test_unchanged_stacks_get_a_zero_difference_and_keep_their_width() -> None:
    scales = (SideScale(10, 1_000_000), SideScale(10, 1_000_000))
    marked = mark_unchanged(
        ["a;b 10000 10100\n", "a;c 5000 15000\n", "a;d 3000 0\n", "garbage\n"],
        {"a;b": 100, "a;c": 50, "a;d": 30},
        {"a;b": 101, "a;c": 150},
        scales,
    )
    assert marked.text == "a;b 10100 10100\na;c 5000 15000\na;d 3000 0\n"
    assert (marked.slower, marked.faster, marked.unchanged) == (1, 1, 1)


def test_a_change_spread_over_the_stacks_of_a_function_is_coloured() -> None:
    # Each stack of f: +50% on 50 samples, 2.2 standard errors; f over both: 3.2.
    scales = (SideScale(10, 1_000_000), SideScale(10, 1_000_000))
    reference = {"x;f": 50, "y;f": 50, "x;g": 400}
    patched = {"x;f": 75, "y;f": 75, "x;g": 410}
    lines = ["x;f 5000 7500", "y;f 5000 7500", "x;g 40000 41000"]
    marked = mark_unchanged(lines, reference, patched, scales)
    assert marked.text == "x;f 5000 7500\ny;f 5000 7500\nx;g 41000 41000\n"
    assert (marked.slower, marked.faster, marked.unchanged) == (2, 0, 1)
    alone = mark_unchanged(lines[:1], {"x;f": 50}, {"x;f": 75}, scales)
    assert alone.unchanged == 1  # one stack of f alone: within noise


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            Profile("t", 0, "patched", Path("x"), "perf", failure="Code: 47. Unknown identifier"),
            "the query failed in a profile run: Code: 47. Unknown identifier",
        ),
        (
            Profile("t", 0, "reference", Path("x"), "perf", 3, 0.002, 2_004_008),
            "the query ran shorter than the sampling period: the 3 profile runs took 2 ms in "
            "all, and the profiler takes a sample every 2 ms of CPU time",
        ),
        (
            Profile("t", 0, "reference", Path("x"), "trace_log", 50, 5.0, 10_000_000),
            "system.trace_log has no CPU samples of the 50 profile runs (5.000 s in all)",
        ),
        (
            Profile("t", 0, "reference", Path("x"), "perf", 50, 5.0, 2_004_008),
            "perf recorded no samples of the server during the 50 profile runs (5.000 s in all)",
        ),
    ],
)
def test_a_side_without_samples_says_why(profile: Profile, expected: str) -> None:
    assert flamegraph.no_samples_reason(profile) == expected


def test_why_frames_have_no_names_is_said_once_with_its_sides() -> None:
    why = "_chdb.abi3.so (/x/_chdb.abi3.so) is stripped: no symbol table"
    profiles = [
        Profile("t", i, side, Path("x"), "perf", unnamed=(why,))
        for i in range(3)
        for side in ("reference", "patched")
    ]
    assert flamegraph.unnamed_frames_notes(profiles) == (
        f"Frames without names (reference, patched): {why}.",
    )


def test_tools_are_looked_up_in_the_repository_first() -> None:
    assert flamegraph.REPO_TOOLS == REPO / "tools" / "bin"
    found = flamegraph.find_tool(flamegraph.FLAMEGRAPH)
    local = flamegraph.REPO_TOOLS / flamegraph.FLAMEGRAPH
    if local.is_file():
        assert found == local
    assert flamegraph.find_tool("no-such-tool-chperf") is None


def _real_profiles(directory: Path, sides: dict[str, str] | None = None) -> list[Profile]:
    """The run.json records of REAL's profiles, folded files from `directory`; `sides` maps
    a side to the file standing for it."""
    records = json.loads((REAL / "profiles.json").read_text())
    profiles = []
    for r in records:
        source = (sides or {}).get(r["side"], r["side"])
        profiles.append(
            Profile("sum", 0, r["side"], directory / f"{source}.folded", r["kind"],
                    r["runs"], r["seconds"], r["sample_ns"], r["failure"], tuple(r["unnamed"]))
        )  # fmt: skip
    return profiles


def _frames(path: Path) -> list[tuple[str, str]]:
    """(tooltip, fill) of every frame of an SVG that must be valid XML."""
    root = ET.parse(path).getroot()
    found = []
    for g in root.iter(f"{SVG}g"):
        title, rect = g.find(f"{SVG}title"), g.find(f"{SVG}rect")
        if title is not None and rect is not None:
            found.append(("".join(title.itertext()), rect.get("fill", "")))
    return found


def _root_value(path: Path) -> int:
    (root,) = [t for t, _ in _frames(path) if t.startswith("all (")]
    match = re.match(r"all \(([\d,]+) ", root)
    assert match, root
    return int(match.group(1).replace(",", ""))


@needs_inferno
def test_real_profiles_render_per_side_and_differential_svgs(tmp_path: Path) -> None:
    result = flamegraph.render_flamegraphs(tmp_path, _real_profiles(REAL))
    assert result.problems == ()
    links = result.links[("sum", 0)]
    assert [link.label for link in links] == ["reference", "patched", "diff", "diff, reverse"]
    for link in links:
        titles = [t for t, _ in _frames(tmp_path / link.href)]
        assert any("DB::" in t for t in titles), link.label
        assert any("µs of CPU per run" in t for t in titles), link.label
    for link in links[:2]:
        subtitle = (tmp_path / link.href).read_text()
        assert re.search(r"of CPU per run over \d+ profile runs \(perf, a sample every", subtitle)
        assert "of sampled frames named" in subtitle
    diff_fills = {fill for _, fill in _frames(tmp_path / links[2].href)}
    assert PALE in diff_fills  # unchanged frames
    assert any(re.match(r"rgb\(255,\d+,\d+\)", f) and f != "rgb(255,255,255)" for f in diff_fills)


@needs_inferno
def test_the_same_profile_on_both_sides_gives_a_pale_differential(tmp_path: Path) -> None:
    profiles = _real_profiles(REAL, {"patched": "reference"})
    profiles[1] = dataclasses.replace(profiles[0], side="patched")
    result = flamegraph.render_flamegraphs(tmp_path, profiles)
    for link in result.links[("sum", 0)][2:]:
        fills = {fill for title, fill in _frames(tmp_path / link.href) if title != "all"}
        assert fills - {"rgb(0,0,0)"} == {PALE}, link.label  # black: the frame outlines


@needs_inferno
def test_per_side_graphs_are_per_profiled_run(tmp_path: Path) -> None:
    reference = _real_profiles(REAL)[0]
    doubled = dataclasses.replace(reference, side="patched", runs=2 * reference.runs)
    result = flamegraph.render_flamegraphs(tmp_path, [reference, doubled])
    ref_svg, pat_svg = (tmp_path / link.href for link in result.links[("sum", 0)][:2])
    assert _root_value(pat_svg) == pytest.approx(_root_value(ref_svg) / 2, rel=0.01)
    # Half the CPU per run everywhere: the differential is blue, not pale.
    diff_fills = {fill for _, fill in _frames(tmp_path / result.links[("sum", 0)][2].href)}
    assert any(re.match(r"rgb\(\d+,\d+,255\)", f) for f in diff_fills - {PALE})


@needs_inferno
def test_a_side_without_samples_has_a_note_instead_of_an_empty_graph(tmp_path: Path) -> None:
    empty = tmp_path / "empty.folded"
    empty.write_text("")
    reference, patched = _real_profiles(REAL)
    silent = dataclasses.replace(reference, folded=empty, seconds=0.001)
    result = flamegraph.render_flamegraphs(tmp_path, [silent, patched])
    assert [link.label for link in result.links[("sum", 0)]] == ["patched"]
    notes = result.unavailable[("sum", 0)]
    assert notes[0].startswith("reference: no samples: the query ran shorter than the sampling")
    assert notes[1] == "diff: no samples: the reference side has none"


@needs_inferno
def test_an_older_runs_profiles_render_without_run_counts(tmp_path: Path) -> None:
    profiles = [
        Profile("sum", 0, side, OLDER / f"{side}.folded", "perf")
        for side in ("reference", "patched")
    ]
    result = flamegraph.render_flamegraphs(tmp_path, profiles)
    assert result.problems == ()
    side_svg = tmp_path / result.links[("sum", 0)][0].href
    assert "not per run: run.json has no run counts" in side_svg.read_text()


@needs_inferno
def test_report_links_flame_graphs_of_profiled_queries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthetic.write_small_run(out, profile_dir=OLDER)
    result = render_report(out)
    assert result.problems == ()
    svgs = sorted(p.name for p in (out / "flamegraphs").glob("*.svg"))
    assert len(svgs) == 4
    pages = [out / "report.html", *sorted((out / "details").glob("*.html"))]
    html = "".join(p.read_text() for p in pages if p.is_file())
    assert all(name in html for name in svgs)


def test_a_missing_folded_file_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    profiles = [Profile("sum", 0, "reference", tmp_path / "nope.folded", "trace_log")]
    result = flamegraph.render_flamegraphs(tmp_path, profiles)
    assert any("cannot read" in p and "nope.folded" in p for p in result.problems)
    assert result.links.get(("sum", 0), ()) == ()
