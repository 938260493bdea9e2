"""--pin-cpu: how auto, none and explicit CPUs resolve against real test files."""

from __future__ import annotations

from pathlib import Path

from artifacts.manifest import write_manifest
from compare import CompareOptions, compare_directory
from report import render_report
from runner.pinning import AUTO, NONE, resolve, single_threaded
from runner.testdef import TestDef as Definition
from runner.testdef import load_test
from tests.conftest import DATA, REPO
from tests.runs import write_artifacts

SINGLE = DATA / "runner_small" / "small.xml"  # <max_threads>1</max_threads>
MULTI = DATA / "clickhouse_style" / "numbers_mt.xml"  # <max_threads>2</max_threads>
UNSET = DATA / "reliability" / "several.xml"  # no max_threads: the server's default


def loaded(*paths: Path) -> list[Definition]:
    return [load_test(path) for path in paths]


def test_only_a_test_that_sets_max_threads_1_is_single_threaded() -> None:
    single, multi, unset = loaded(SINGLE, MULTI, UNSET)
    assert single_threaded(single)
    assert not single_threaded(multi)
    assert not single_threaded(unset)


def test_auto_pins_single_threaded_tests_to_the_highest_allowed_cpu() -> None:
    pinning = resolve(AUTO, loaded(SINGLE), {0, 3, 5})
    assert pinning.cpus == (5,)
    assert pinning.mode == AUTO
    assert "pinned to CPU 5" in pinning.reason


def test_every_shipped_test_is_pinned_by_auto() -> None:
    shipped = loaded(*sorted((REPO / "perf_tests").glob("*.xml")))
    assert len(shipped) >= 20
    assert resolve(AUTO, shipped, {0, 1}).cpus == (1,)


def test_auto_does_not_pin_when_one_test_could_use_several_threads() -> None:
    pinning = resolve(AUTO, loaded(SINGLE, MULTI, UNSET), {0, 1})
    assert pinning.cpus == ()
    assert "tests numbers_mt and 1 more do not set max_threads 1, and their queries" in (
        pinning.reason
    )


def test_auto_does_not_pin_with_one_cpu() -> None:
    pinning = resolve(AUTO, loaded(SINGLE), {2})
    assert pinning.cpus == ()
    assert "only one CPU" in pinning.reason


def test_none_and_explicit_cpus_override_the_tests() -> None:
    assert resolve(NONE, loaded(SINGLE), {0, 1}).cpus == ()
    explicit = resolve((0,), loaded(MULTI), {0, 1})
    assert explicit.cpus == (0,)
    assert explicit.mode == "explicit"
    assert "--pin-cpu 0" in explicit.reason


def test_the_report_states_the_placement_escaped(tmp_path: Path) -> None:
    out = write_artifacts(tmp_path / "run", {0: ([0.1] * 7, [0.1] * 7)})
    reason = "pinned to CPU 1 <script>alert(1)</script>"
    write_manifest(out, {"options": {"pin_cpus": [1], "pin": reason}})
    compare_directory(out, CompareOptions())
    html = render_report(out).path.read_text()
    assert "CPU placement: the servers were pinned to CPU 1 &lt;script&gt;" in html
    assert "<script>alert(1)" not in html
    write_manifest(out, {"options": {"pin_cpus": [], "pin": None}})
    assert "CPU placement" not in render_report(out).path.read_text()


def test_auto_names_the_one_test_that_could_use_several_threads() -> None:
    pinning = resolve(AUTO, loaded(SINGLE, MULTI), {0, 1})
    assert pinning.cpus == ()
    assert pinning.reason == (
        "not pinned: test numbers_mt does not set max_threads 1, and its queries would share "
        "one CPU"
    )
