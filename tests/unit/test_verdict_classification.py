"""Table-driven tests of the pure classification (compare/verdict.py)."""

from __future__ import annotations

import dataclasses

import pytest

from compare.randomization import SeriesStats
from compare.verdict import (
    MIN_RUNS,
    Failure,
    QueryEvidence,
    Thresholds,
    Verdict,
    classify,
)


def stats(diff: float | None, threshold: float | None) -> SeriesStats:
    reference = 1.0
    return SeriesStats(
        runs_reference=15,
        runs_patched=15,
        reference_median=reference,
        patched_median=reference * (1 + (diff or 0.0)),
        diff=diff,
        threshold=threshold,
        threshold_abs=threshold or 0.0,
        p_value=0.5,
        exact=True,
    )


def measured(
    diff: float | None, threshold: float | None, max_ignored: float | None = None
) -> QueryEvidence:
    return QueryEvidence(
        "t", 0, "SELECT 1", max_ignored, runs_reference=15, runs_patched=15,
        stats=stats(diff, threshold),
    )  # fmt: skip


DEFAULT = Thresholds()


@pytest.mark.parametrize(
    ("diff", "threshold", "expected"),
    [
        (0.20, 0.03, Verdict.SLOWER),
        (-0.20, 0.03, Verdict.FASTER),
        (0.05, 0.05, Verdict.SLOWER),  # >= on both bounds: the distribution is discrete
        (-0.05, 0.05, Verdict.FASTER),
        (0.049, 0.01, Verdict.UNCHANGED),  # significant but below the minimum effect
        (0.08, 0.09, Verdict.UNCHANGED),  # above the minimum effect but not significant
        (0.02, 0.10, Verdict.UNSTABLE),  # T reaches the unstable floor
        (0.30, 0.25, Verdict.SLOWER),  # a change beyond a large T is still a change
        (0.0, 0.0, Verdict.UNCHANGED),  # identical runs
    ],
)
def test_measured_queries_follow_the_method_rules(
    diff: float, threshold: float, expected: Verdict
) -> None:
    assert classify(measured(diff, threshold), DEFAULT).verdict is expected


def test_max_ignored_relative_change_raises_the_minimum_effect() -> None:
    result = classify(measured(0.15, 0.03, max_ignored=0.2), DEFAULT)
    assert result.verdict is Verdict.UNCHANGED
    assert "min effect 20.0%" in result.reason


def test_a_smaller_max_ignored_relative_change_does_not_lower_the_minimum_effect() -> None:
    assert classify(measured(0.04, 0.01, max_ignored=0.01), DEFAULT).verdict is Verdict.UNCHANGED


def test_options_change_the_minimum_effect_and_the_unstable_floor() -> None:
    assert classify(measured(0.04, 0.01), Thresholds(min_effect=0.03)).verdict is Verdict.SLOWER
    strict = Thresholds(unstable_threshold=0.05)
    assert classify(measured(0.01, 0.06), strict).verdict is Verdict.UNSTABLE


def test_only_slower_fails_the_check_among_measured_verdicts() -> None:
    cases = [(0.2, 0.0), (-0.2, 0.0), (0.0, 0.2), (0.0, 0.0)]
    results = [classify(measured(diff, threshold), DEFAULT) for diff, threshold in cases]
    fails = {v.verdict: v.fails_check for v in results}
    assert fails == {
        Verdict.SLOWER: True,
        Verdict.FASTER: False,
        Verdict.UNSTABLE: False,
        Verdict.UNCHANGED: False,
    }


def failed(*failures: Failure) -> QueryEvidence:
    return QueryEvidence("t", 0, "SELECT f()", None, failures=failures, runs_reference=15)


@pytest.mark.parametrize(
    ("failures", "verdict", "fails_check"),
    [
        ((Failure("patched", "prewarm", "Unknown function f"),), Verdict.PARTIAL, True),
        ((Failure("reference", "prewarm", "Unknown function f"),), Verdict.PARTIAL, False),
        ((Failure("reference", "run", "Timeout"),), Verdict.PARTIAL, True),  # any run error
        ((Failure("patched", "server", "exited with code 139"),), Verdict.PARTIAL, True),
        (
            (Failure("reference", "prewarm", "numbers_mt"), Failure("patched", "prewarm", "x")),
            Verdict.ERROR,
            False,  # broken on both servers from the start: not the patch's doing
        ),
        ((Failure("both", "run", "Memory limit"),), Verdict.ERROR, True),
    ],
)
def test_query_failures_become_partial_or_error(
    failures: tuple[Failure, ...], verdict: Verdict, fails_check: bool
) -> None:
    result = classify(failed(*failures), DEFAULT)
    assert (result.verdict, result.fails_check) == (verdict, fails_check)
    assert failures[0].message in result.reason
    assert result.stats is None


CRASH = "server (pid 4121, port 9001) exited with code -9 during t query 0 (run4)"


@pytest.mark.parametrize(
    ("failures", "fails_check"),
    [
        ((Failure("reference", "server", CRASH), Failure("reference", "run", CRASH)), False),
        ((Failure("patched", "server", CRASH), Failure("patched", "run", CRASH)), True),
        ((Failure("reference", "server", CRASH), Failure("patched", "run", "Timeout")), True),
        ((Failure("reference", "server", "stopped answering"),), False),
    ],
    ids=["reference-crash", "patched-crash", "reference-crash-and-patched-error", "hang"],
)
def test_a_server_dying_on_a_query_fails_the_check_only_on_the_patched_side(
    failures: tuple[Failure, ...], fails_check: bool
) -> None:
    result = classify(failed(*failures), DEFAULT)
    assert result.verdict in (Verdict.PARTIAL, Verdict.ERROR)
    assert result.fails_check is fails_check
    assert failures[0].message in result.reason


def test_query_failing_only_on_patched_is_partial_and_fails_the_check() -> None:
    result = classify(failed(Failure("patched", "prewarm", "Unknown function f")), DEFAULT)
    assert result.verdict is Verdict.PARTIAL and result.fails_check
    assert result.reason == "fails on patched only: prewarm on patched: Unknown function f"


def test_whole_test_setup_error_on_both_sides_is_an_error_that_passes() -> None:
    evidence = QueryEvidence("t", -1, "", None, test_failures=(Failure("both", "setup", "x"),))
    result = classify(evidence, DEFAULT)
    assert (result.verdict, result.fails_check) == (Verdict.ERROR, False)


def test_unreadable_test_file_fails_the_check() -> None:
    evidence = QueryEvidence("t", -1, "", None, test_failures=(Failure("both", "parse", "x"),))
    assert classify(evidence, DEFAULT).fails_check


def test_skipped_test_is_skipped_with_its_reason() -> None:
    evidence = QueryEvidence("t", -1, "", None, skipped_reason="tagged long")
    result = classify(evidence, DEFAULT)
    assert (result.verdict, result.reason, result.fails_check) == (
        Verdict.SKIPPED,
        "skipped: tagged long",
        False,
    )


@pytest.mark.parametrize(("reference", "patched"), [(2, 15), (15, 0), (0, 0), (MIN_RUNS - 1, 3)])
def test_too_few_runs_is_an_error_that_fails_closed(reference: int, patched: int) -> None:
    evidence = QueryEvidence("t", 0, "", None, runs_reference=reference, runs_patched=patched)
    result = classify(evidence, DEFAULT)
    assert (result.verdict, result.fails_check) == (Verdict.ERROR, True)
    assert "too few runs" in result.reason


def test_damaged_artifacts_make_an_error_with_the_problem_as_reason() -> None:
    evidence = measured(0.0, 0.01)
    damaged = QueryEvidence(
        "t", 0, "", None, problems=("runs.tsv:7: truncated line (no end of line)",),
        runs_reference=15, runs_patched=14, stats=evidence.stats,
    )  # fmt: skip
    result = classify(damaged, DEFAULT)
    assert (result.verdict, result.fails_check) == (Verdict.ERROR, True)
    assert "runs.tsv:7" in result.reason


def test_zero_reference_median_is_an_error_not_a_division_by_zero() -> None:
    result = classify(measured(None, None), DEFAULT)
    assert result.verdict is Verdict.ERROR and "reference median is 0" in result.reason


# --- several server processes a side (--processes) ------------------------------------------


def with_processes(diff: float, threshold: float, *diffs: float) -> QueryEvidence:
    evidence = measured(diff, threshold)
    assert evidence.stats is not None
    return dataclasses.replace(
        evidence, stats=dataclasses.replace(evidence.stats, process_diffs=diffs)
    )


@pytest.mark.parametrize(
    ("diffs", "expected"),
    [
        ((0.12, 0.09), Verdict.SLOWER),  # seen on both process sets
        ((0.05, 0.15), Verdict.SLOWER),  # >= the minimum effect on each
        ((0.19, 0.01), Verdict.UNCHANGED),  # one process pair alone: a process offset
        ((0.14, 0.049), Verdict.UNCHANGED),  # the second set is below the minimum effect
        ((0.128, 0.0498), Verdict.UNCHANGED),  # shown as +4.98%, not a rounded +5.0%
        ((0.30, -0.06), Verdict.UNCHANGED),  # opposite directions
        ((), Verdict.SLOWER),  # one set: nothing to require
    ],
)
def test_a_change_must_show_on_every_server_process_set(
    diffs: tuple[float, ...], expected: Verdict
) -> None:
    result = classify(with_processes(0.10, 0.03, *diffs), DEFAULT)
    assert result.verdict is expected
    if diffs and expected is Verdict.UNCHANGED:
        assert "would be slower, but not on every server process" in result.reason
        assert ", ".join(f"{d:+.2%}" for d in diffs) in result.reason
        assert not result.fails_check


def test_a_faster_change_needs_every_set_faster_and_a_noisy_one_stays_unstable() -> None:
    assert classify(with_processes(-0.2, 0.03, -0.18, -0.22), DEFAULT).verdict is Verdict.FASTER
    noisy = classify(with_processes(0.2, 0.12, 0.35, 0.02), DEFAULT)
    assert noisy.verdict is Verdict.UNSTABLE
    assert "not on every server process" in noisy.reason


def test_a_max_ignored_relative_change_of_one_or_more_never_fails_the_check() -> None:
    result = classify(measured(1.5, 0.03, max_ignored=1.0), DEFAULT)
    assert result.verdict is Verdict.SLOWER
    assert not result.fails_check
    assert "does not fail the check" in result.reason
    assert classify(measured(1.5, 0.03, max_ignored=0.99), DEFAULT).fails_check


def too_long(*sides: str) -> QueryEvidence:
    failures = tuple(Failure(s, "too long", f"the run1 run was stopped on {s}") for s in sides)
    return QueryEvidence("t", 0, "SELECT 1", None, failures=failures, runs_reference=2)


@pytest.mark.parametrize(
    ("sides", "fails", "where"),
    [
        (("patched",), True, "the patched side only"),
        (("reference",), False, "the reference side only"),
        (("reference", "patched"), False, "both sides"),
    ],
)
def test_a_query_over_its_time_limit_is_too_long_and_fails_only_on_the_patched_side(
    sides: tuple[str, ...], fails: bool, where: str
) -> None:
    result = classify(too_long(*sides), DEFAULT)
    assert result.verdict is Verdict.TOO_LONG
    assert result.fails_check is fails
    assert f"too long on {where}" in result.reason


def test_a_query_not_run_is_neither_failed_nor_judged_even_with_runs_and_errors() -> None:
    evidence = QueryEvidence(
        "t", 0, "SELECT 1", None, runs_reference=2, runs_patched=2,
        failures=(Failure("both", "not run", "terminated (SIGTERM)"),
                  Failure("patched", "run", "Code: 241")),
    )  # fmt: skip
    result = classify(evidence, DEFAULT)
    assert result.verdict is Verdict.NOT_RUN and not result.fails_check
    assert result.reason == "not run: terminated (SIGTERM)"
    whole = QueryEvidence("t", 0, "SELECT 1", None, not_run_reason="the suite budget ran out")
    assert classify(whole, DEFAULT).verdict is Verdict.NOT_RUN
