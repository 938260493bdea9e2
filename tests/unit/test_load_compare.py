"""Verdicts of load levels from blocks (compare/load.py), compare's status with load tests,
and the report section and PR comment made from them (report/load.py, ci/loadlines.py)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from artifacts import tables
from artifacts.loadblocks import LOAD_BLOCKS, LoadBlockRow
from artifacts.tables import (
    MONITOR,
    PATCHED,
    REFERENCE,
    TESTS,
    WHOLE_TEST,
    MonitorRow,
)
from artifacts.tsv import write_table
from ci.loadlines import history_rows, load_table, read_load_lines
from compare.load import (
    MIN_LOAD_PAIRS,
    LoadResults,
    cost_pairs,
    judge_level,
    load_verdicts,
    read_load,
    without_load_tests,
)
from compare.verdict import QueryEvidence, Thresholds, Verdict
from report.load import load_section
from runner.load import block_order

# Within-pair noise that alternates in sign: never all one way, as real noise.
NOISE = (0.02, -0.015, 0.01, -0.02, 0.015, -0.01, 0.005, -0.005, 0.012, -0.012, 0.0, 0.008)


def _blocks(
    pairs: int,
    patched_cost: float = 1.0,
    concurrency: int = 2,
    rows: int = 0,
    errors: int = 0,
    sets: int = 1,
    set_cost: tuple[float, ...] = (),
) -> list[LoadBlockRow]:
    """Blocks in run order on `sets` process sets; a query costs 10 ms on the reference,
    `patched_cost` times that on the patched side (times set_cost[k] on the patched process of
    set k), with a little noise each block."""
    found = []
    for n, slot in enumerate(block_order(pairs, (REFERENCE, PATCHED), sets)):
        factor = patched_cost if slot.side == PATCHED else 1.0
        if set_cost and slot.side == PATCHED:
            factor *= set_cost[slot.process]
        seconds = 0.5 * (1 + NOISE[n % len(NOISE)])
        queries = round(50 / factor)
        found.append(
            LoadBlockRow(
                "mix", concurrency, slot.side, slot.pair, 1.7e9 + n, seconds, queries,
                errors if slot.side == PATCHED else 0, 0.01, 0.02, 0.03,
                rows * queries, rows * queries * 20, 0.05, "boom" if errors else "",
                slot.process,
            )
        )  # fmt: skip
    return found


def test_one_slow_patched_process_is_not_a_change() -> None:
    """An A/A where one patched server process inserts 20% slower all its life (measured on
    this machine: one process a side called such offsets slower or faster): the other set shows
    +3%, below the minimum effect, so the level is not a change."""
    level = judge_level("mix", 1, _blocks(20, sets=2, set_cost=(1.2, 1.03)), Thresholds())
    assert level.verdict is not Verdict.SLOWER and not level.fails_check
    assert "not on every server process set" in level.reason
    assert level.process_diffs[0] == pytest.approx(0.2, abs=0.05)
    assert abs(level.process_diffs[1]) < 0.04


def test_a_change_on_every_process_set_is_a_change() -> None:
    level = judge_level("mix", 1, _blocks(12, 1.3, sets=2), Thresholds())
    assert level.verdict is Verdict.SLOWER and level.fails_check
    assert len(level.process_diffs) == 2 and min(level.process_diffs) > 0.2
    assert "D per process set +" in level.reason
    assert level.as_json()["process_diffs"] == list(level.process_diffs)


def test_blocks_go_to_process_sets_two_pairs_at_a_time() -> None:
    order = block_order(6, (REFERENCE, PATCHED), 2)
    assert [(s.pair, s.process) for s in order[::2]] == [
        (0, 0),
        (1, 0),
        (2, 1),
        (3, 1),
        (4, 0),
        (5, 0),
    ]


def test_equal_servers_are_unchanged() -> None:
    level = judge_level("mix", 2, _blocks(12), Thresholds())
    assert level.verdict is Verdict.UNCHANGED and not level.fails_check
    assert level.stats is not None and level.stats.pairs == 12
    assert level.reference is not None and level.reference.qps == pytest.approx(100, rel=0.05)


def test_a_third_less_throughput_is_slower_and_fails() -> None:
    level = judge_level("mix", 2, _blocks(12, patched_cost=1.5), Thresholds())
    assert level.verdict is Verdict.SLOWER and level.fails_check
    assert level.throughput_change == pytest.approx(-1 / 3, abs=0.03)
    assert "slower: 99% CI beyond ±2%" in level.reason


def test_more_throughput_is_faster_and_passes() -> None:
    level = judge_level("mix", 4, _blocks(8, patched_cost=0.7), Thresholds())
    assert level.verdict is Verdict.FASTER and not level.fails_check


def test_a_change_below_min_effect_is_unchanged() -> None:
    level = judge_level("mix", 2, _blocks(12, patched_cost=1.02), Thresholds(min_effect=0.05))
    assert level.verdict is Verdict.UNCHANGED


def test_failed_queries_on_patched_only_are_partial_and_fail() -> None:
    level = judge_level("mix", 2, _blocks(12, errors=3), Thresholds())
    assert level.verdict is Verdict.PARTIAL and level.fails_check
    assert "patched only: boom" in level.reason


def test_too_few_pairs_is_inconclusive_and_one_side_only_is_not_run() -> None:
    few = judge_level("mix", 2, _blocks(MIN_LOAD_PAIRS - 1), Thresholds())
    assert few.verdict is Verdict.INCONCLUSIVE and few.stats is None
    reference_only = [b for b in _blocks(12) if b.server == REFERENCE]
    assert judge_level("mix", 2, reference_only, Thresholds()).verdict is Verdict.NOT_RUN


def test_insert_blocks_are_judged_per_row() -> None:
    blocks = _blocks(12, rows=1000)
    # the same number of statements, but each patched one wrote half the rows: half the work
    halved = [replace(b, rows=b.rows // 2) if b.server == PATCHED else b for b in blocks]
    level = judge_level("ins", 1, halved, Thresholds())
    assert level.kind == "insert" and level.verdict is Verdict.SLOWER
    assert level.patched is not None and level.reference is not None
    assert level.patched.rows_per_client == pytest.approx(
        level.reference.rows_per_client / 2, rel=0.05
    )


def test_pairs_without_work_are_left_out() -> None:
    blocks = _blocks(6)
    blocks[0] = replace(blocks[0], queries=0)
    assert len(cost_pairs(blocks, insert=False)) == 5


def test_levels_are_sorted_and_counted(tmp_path: Path) -> None:
    rows = _blocks(12, concurrency=4) + _blocks(12, concurrency=1, patched_cost=1.5)
    verdicts = load_verdicts(rows, Thresholds())
    assert [(v.concurrency, v.verdict) for v in verdicts] == [
        (1, Verdict.SLOWER),
        (4, Verdict.UNCHANGED),
    ]
    result = LoadResults(tuple(verdicts), ())
    assert result.measured and result.message() == "load: 1 slower, 1 unchanged"

    class Options:
        fail_on_unstable = False

    (failure,) = result.failures(Options())
    assert failure.startswith("mix at 1 clients: slower")


def test_a_damaged_line_fails_the_check(tmp_path: Path) -> None:
    write_table(tmp_path, LOAD_BLOCKS, _blocks(6))
    with (tmp_path / LOAD_BLOCKS.file).open("a") as f:
        f.write("mix\t2\tpatched\n")  # torn
    loaded = read_load(tmp_path, Thresholds())
    assert len(loaded.verdicts) == 1 and loaded.problems
    assert any(
        "load_blocks.tsv" in f
        for f in loaded.failures(type("O", (), {"fail_on_unstable": False})())
    )


def test_the_tests_max_ignored_relative_change_is_its_levels_min_effect(tmp_path: Path) -> None:
    """A 20% lower throughput on both process sets is slower at the default min effect, and
    unchanged in a test whose tests.tsv row says changes up to 30% are ignored."""
    write_table(tmp_path, LOAD_BLOCKS, _blocks(12, 1.25, sets=2))
    (level,) = read_load(tmp_path, Thresholds()).verdicts
    assert level.verdict is Verdict.SLOWER
    write_table(tmp_path, TESTS, [tables.TestRow("mix", "mix.xml", "ran", "load test", 30.0, 0.3)])
    (level,) = read_load(tmp_path, Thresholds()).verdicts
    assert level.verdict is Verdict.UNCHANGED and not level.fails_check
    assert "min effect 30.0%" in level.reason
    write_table(tmp_path, TESTS, [tables.TestRow("mix", "mix.xml", "ran", "load test", 30.0, 0.01)])
    (level,) = read_load(tmp_path, Thresholds()).verdicts  # never below the run's own
    assert level.verdict is Verdict.SLOWER and "min effect 5.0%" in level.reason


def test_a_run_without_the_table_has_no_load_levels(tmp_path: Path) -> None:
    loaded = read_load(tmp_path, Thresholds())
    assert loaded.verdicts == () and loaded.problems == () and loaded.message() == ""


def test_a_load_test_that_ran_loses_its_whole_test_row_but_a_failed_one_keeps_it() -> None:
    load = LoadResults(tuple(load_verdicts(_blocks(6), Thresholds())), ())
    ran = QueryEvidence("mix", WHOLE_TEST, "", None)
    skipped = QueryEvidence("other", WHOLE_TEST, "", None, skipped_reason="long")
    not_run = replace(ran, not_run_reason="budget")
    assert without_load_tests([ran, skipped], load) == (skipped,)
    assert without_load_tests([not_run], load) == (not_run,)


def _summary(tmp_path: Path, rows: list[LoadBlockRow]) -> Path:
    levels = load_verdicts(rows, Thresholds())
    document = {"schema_version": 1, "load": [v.as_json() for v in levels]}
    (tmp_path / "summary.json").write_text(json.dumps(document))
    return tmp_path


def test_the_report_section_escapes_names_and_draws_both_sides(tmp_path: Path) -> None:
    rows = [replace(b, test="<b>mix</b>") for b in _blocks(12) + _blocks(12, concurrency=4)]
    section = load_section(_summary(tmp_path, rows))
    assert section is not None and section.levels == 2 and not section.problems
    (test,) = section.tests
    assert "<b>" not in test.throughput_chart and "&lt;b&gt;mix" in test.throughput_chart
    for side in ("reference", "patched"):
        assert f'class="load-side {side}"' in test.throughput_chart
        assert f'class="load-side {side}"' in test.latency_chart
    assert [level.concurrency for level in test.levels] == [2, 4]
    assert test.levels[0].verdict == "unchanged" and "q/s" in test.levels[0].reference


def test_the_report_has_no_section_without_load_and_says_when_damaged(tmp_path: Path) -> None:
    assert load_section(tmp_path) is None  # no summary.json at all
    (tmp_path / "summary.json").write_text('{"load": [{"test": "x"}]}')
    section = load_section(tmp_path)
    assert section is not None and section.problems and not section.tests


def test_the_comment_lists_changed_levels_and_the_job_summary_all(tmp_path: Path) -> None:
    rows = _blocks(12, concurrency=1, patched_cost=1.5) + _blocks(12, concurrency=4)
    lines = read_load_lines(_summary(tmp_path, rows))
    comment = load_table(lines, lambda s: s.replace("_", "\\_"), notable_only=True)
    everything = load_table(lines, str, notable_only=False)
    assert len(comment) == 4 and comment[2].startswith("| mix | 1 | slower | -3")
    assert len(everything) == 5
    assert load_table([x for x in lines if x.verdict == "unchanged"], str, True) == []


def test_history_rows_follow_the_schema_columns(tmp_path: Path) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    (row,) = history_rows(_summary(tmp_path, _blocks(12, patched_cost=1.5)), "run", start)
    assert row[:5] == ("run", start, "mix", 2, "slower")
    assert row[6] is not None and row[7] is not None and row[7] < row[6]  # qps
    assert math.isfinite(row[12]) and row[12] < 0  # throughput change
    assert history_rows(tmp_path / "missing", "run", start) == ()


def test_a_level_says_how_much_cpu_other_programs_used(tmp_path: Path) -> None:
    blocks = _blocks(6)
    write_table(tmp_path, LOAD_BLOCKS, blocks)
    moments = [
        MonitorRow(1.7e9 + t / 4, 0.25, 2, 0.5, 0.1, 0.0, 0.0, 0.4, 1.0, 0.05, 0.9, 1.0, 2,
                   None, None, None, 0.0, 0.0, 9000.0)
        for t in range(0, 4 * 14)
    ]  # fmt: skip
    write_table(tmp_path, MONITOR, moments)
    (level,) = read_load(tmp_path, Thresholds()).verdicts
    assert level.foreign_cpu == pytest.approx(0.9)
    assert level.reason.endswith("other programs used a median 0.90 cores during its blocks")
    assert read_load(tmp_path / "none", Thresholds()).verdicts == ()
