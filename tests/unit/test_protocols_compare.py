"""Unit tests of the protocol verdicts (compare/protocols.py) and their summary.json form
(artifacts/protocols.py): the rules on runs with known changes, and chDB's statistic against
its numpy twin."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from artifacts.protocols import (
    FAILED,
    NOT_RUN,
    PROTOCOL_PROBLEMS,
    PROTOCOL_RUNS,
    UNAVAILABLE,
    ProtocolProblemRow,
    ProtocolRunRow,
    read_protocol_summary,
)
from artifacts.tables import PATCHED, QUERIES, REFERENCE, QueryRow
from artifacts.tsv import write_table
from compare.blocked import blocked_stats
from compare.engine import SqlEngine
from compare.protocols import Series, classify, compare_protocols, gather
from compare.verdict import Thresholds

KEY = ("t", 0, "http")
# Lognormal-ish noise of a few percent, the same on both sides: a seeded, fixed sequence.
NOISE = [1.00, 1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.04, 0.96, 1.00, 1.01, 0.98]


def _runs(
    pairs: int, transfer: float = 1.0, connect: float = 1.0, protocol: str = "http"
) -> list[ProtocolRunRow]:
    """Both sides' runs; the patched side's transfer and connect scaled by the factors."""
    rows = []
    for run in range(pairs):
        for side, t, c in ((REFERENCE, 1.0, 1.0), (PATCHED, transfer, connect)):
            noise = NOISE[run % len(NOISE)] * (1.01 if side == PATCHED and run % 3 else 1.0)
            rows.append(
                ProtocolRunRow(
                    "t", 0, protocol, side, run, 0.001 * c * noise, 0.01 * noise,
                    0.2 * t * noise, 21_000_000 if side == REFERENCE else 6_000_000, 0,
                    (run // 2) % 2, 1.0e9 + run,
                )
            )  # fmt: skip
    return rows


def _verdicts(
    rows: list[ProtocolRunRow], problems: Sequence[ProtocolProblemRow] = ()
) -> dict[str, tuple[str, bool, str]]:
    series = gather(rows, problems)[KEY]
    found = {}
    for phase in ("connect", "first_byte", "transfer"):
        pairs, _ = series.pairs(phase)
        stats = blocked_stats(pairs) if pairs else None
        v = classify(KEY, phase, series, stats, Thresholds())
        found[phase] = (v.verdict, v.fails_check, v.reason)
    return found


def test_a_slower_full_transfer_fails_the_check_and_names_its_figures() -> None:
    found = _verdicts(_runs(10, transfer=1.3))
    verdict, fails, reason = found["transfer"]
    assert (verdict, fails) == ("slower", True)
    assert "D +3" in reason and "10 pairs, paired" in reason
    assert found["first_byte"][:2] in (("unchanged", False), ("unstable", False))


def test_a_slower_connect_is_reported_but_does_not_fail_the_check() -> None:
    found = _verdicts(_runs(10, connect=1.5))
    assert found["connect"][:2] == ("slower", False)
    assert found["transfer"][0] != "slower"


def test_a_faster_transfer_passes() -> None:
    assert _verdicts(_runs(10, transfer=0.7))["transfer"][:2] == ("faster", False)


def test_too_few_pairs_are_inconclusive_however_clear_the_change() -> None:
    verdict, fails, reason = _verdicts(_runs(5, transfer=2.0))["transfer"]
    assert (verdict, fails) == ("inconclusive", False)
    assert "5 pairs" in reason


def _problem(side: str, kind: str, message: str = "refused") -> ProtocolProblemRow:
    return ProtocolProblemRow("t", 0, "http", side, kind, 0, message)


@pytest.mark.parametrize(
    ("problems", "verdict", "fails", "words"),
    [
        ([_problem(PATCHED, UNAVAILABLE)], "unavailable", True, "the patched server only"),
        ([_problem(REFERENCE, UNAVAILABLE)], "unavailable", False, "the reference server only"),
        (
            [_problem(REFERENCE, UNAVAILABLE), _problem(PATCHED, UNAVAILABLE)],
            "unavailable",
            False,
            "both servers",
        ),
        ([_problem(PATCHED, FAILED, "run3: Code: 241")], "partial", True, "Code: 241"),
        ([_problem(REFERENCE, FAILED)], "partial", False, "fails on reference only"),
        ([_problem(REFERENCE, FAILED), _problem(PATCHED, FAILED)], "error", False, "both"),
    ],
)
def test_an_interface_or_query_that_fails_gets_a_verdict_saying_where(
    problems: list[ProtocolProblemRow], verdict: str, fails: bool, words: str
) -> None:
    for phase, (found, fails_check, reason) in _verdicts(_runs(3), problems).items():
        assert (found, fails_check) == (verdict, fails), phase
        assert words in reason


def test_a_budget_that_ran_out_before_enough_pairs_is_not_run_and_after_them_is_judged() -> None:
    stopped = [_problem("both", NOT_RUN, "the suite budget ran out")]
    assert _verdicts(_runs(2), stopped)["transfer"][0] == "not run"
    assert _verdicts(_runs(8, transfer=1.5), stopped)["transfer"][0] == "slower"


def test_runs_pair_by_run_number_so_a_side_that_stopped_early_leaves_fewer_pairs() -> None:
    rows = [r for r in _runs(10) if not (r.server == PATCHED and r.run >= 7)]
    pairs, processes = gather(rows, [])[KEY].pairs("transfer")
    assert len(pairs) == 7 and processes == [0, 0, 1, 1, 0, 0, 1]


def _write_run(out: Path, rows: list[ProtocolRunRow], ignored: float | None = None) -> None:
    write_table(out, PROTOCOL_RUNS, rows)
    write_table(out, PROTOCOL_PROBLEMS, [])
    write_table(out, QUERIES, [QueryRow("t", 0, "SELECT 1", ignored)])


def test_chdb_gives_the_numbers_of_the_numpy_statistic(tmp_path: Path) -> None:
    rows = _runs(10, transfer=1.3) + _runs(10, transfer=0.9, protocol="native")
    _write_run(tmp_path, rows)
    with SqlEngine() as engine:
        found = compare_protocols(tmp_path, engine, Thresholds())
    assert len(found.verdicts) == 6 and not found.problems
    series = gather(rows, [])
    for v in found.verdicts:
        pairs, _ = series[(v.test, v.query_index, v.protocol)].pairs(v.phase)
        twin = blocked_stats(pairs)
        assert v.diff is not None and math.isclose(v.diff, twin.diff, rel_tol=1e-9)
        assert v.p_value == pytest.approx(twin.p_value)
    slower = [v for v in found.verdicts if v.fails_check]
    assert [(v.protocol, v.phase) for v in slower] == [("http", "transfer")]
    assert found.failures == (f"t query 0 http transfer: {slower[0].reason}",)
    http = next(v for v in found.verdicts if v.protocol == "http")
    assert (http.reference_bytes, http.patched_bytes) == (21_000_000, 6_000_000)


def test_a_test_that_ignores_changes_up_to_100_percent_never_fails(tmp_path: Path) -> None:
    _write_run(tmp_path, _runs(10, transfer=1.3), ignored=1.0)
    with SqlEngine() as engine:
        found = compare_protocols(tmp_path, engine, Thresholds())
    assert not found.failures


def test_a_run_without_protocol_tables_has_no_protocol_verdicts(tmp_path: Path) -> None:
    with SqlEngine() as engine:
        found = compare_protocols(tmp_path, engine, Thresholds())
    assert (found.verdicts, found.failures, found.problems) == ((), (), ())


def test_a_damaged_line_is_a_problem_that_names_file_and_line(tmp_path: Path) -> None:
    _write_run(tmp_path, _runs(8))
    with (tmp_path / PROTOCOL_RUNS.file).open("a") as f:
        f.write("t\t0\thttp\treference\tnot a number")
    with SqlEngine() as engine:
        found = compare_protocols(tmp_path, engine, Thresholds())
    assert found.problems == ("protocol_runs.tsv:18: truncated line (no end of line)",)


def test_summary_verdicts_read_back_and_a_malformed_entry_is_a_problem(tmp_path: Path) -> None:
    _write_run(tmp_path, _runs(10, transfer=1.3))
    with SqlEngine() as engine:
        verdicts = compare_protocols(tmp_path, engine, Thresholds()).verdicts
    entries = [v.as_json() for v in verdicts] + [{"test": 1}, "x"]
    (tmp_path / "summary.json").write_text(json.dumps({"protocols": entries}))
    read = read_protocol_summary(tmp_path)
    assert read.verdicts == verdicts
    assert read.problems == (
        "summary.json: protocols[3] is malformed",
        "summary.json: protocols[4] is malformed",
    )


def test_a_series_without_runs_has_no_medians() -> None:
    v = classify(KEY, "transfer", Series(), None, Thresholds())
    assert (v.verdict, v.reference_median, v.reference_bytes, v.runs) == (
        "inconclusive",
        None,
        None,
        0,
    )


def test_an_entry_with_a_number_beyond_a_double_is_malformed_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(
        '{"protocols": [{"test": "t", "query_index": 0, "protocol": "http", "phase": "connect",'
        ' "verdict": "x", "reason": "", "fails_check": false, "runs": 1, "diff": 1'
        + "0" * 400
        + "}]}"
    )
    assert read_protocol_summary(tmp_path).problems == ("summary.json: protocols[0] is malformed",)


def test_a_full_transfer_nothing_judged_makes_the_check_incomplete(tmp_path: Path) -> None:
    from artifacts.errors import ExitCode
    from compare import CompareOptions, compare_directory
    from tests.runs import STEADY_7, write_artifacts

    def status(protocol_pairs: int) -> tuple[str, ExitCode, dict[str, str]]:
        out = write_artifacts(tmp_path / str(protocol_pairs), {0: (STEADY_7, STEADY_7[::-1])})
        write_table(out, PROTOCOL_RUNS, _runs(protocol_pairs))
        write_table(out, PROTOCOL_PROBLEMS, [])
        with SqlEngine() as engine:
            found = compare_protocols(out, engine, Thresholds())
        result = compare_directory(out, CompareOptions())
        said = "protocols: 1 full transfer not judged" in result.message
        assert said == (result.status == "incomplete"), result.message
        return result.status, result.exit_code, {v.phase: v.verdict for v in found.verdicts}

    # 4 pairs: every phase inconclusive; only the full transfer's makes the check incomplete.
    assert status(4) == ("incomplete", ExitCode.INCOMPLETE,
                         {"connect": "inconclusive", "first_byte": "inconclusive",
                          "transfer": "inconclusive"})  # fmt: skip
    assert status(8)[:2] == ("success", ExitCode.OK)
