"""Which tests and queries a run measures: the test files loaded, named filters applied. A
name or a query index that selects nothing is an error, never a silently smaller run."""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from artifacts.errors import ChperfError
from runner.options import RunOptions
from runner.testdef import Location, TestDef, TestDefError, TestQuery, discover, load_test
from runner.testelements import ram_shortfall


@dataclass(frozen=True)
class LoadedTests:
    tests: tuple[TestDef, ...]
    problems: tuple[tuple[str, Path, TestDefError], ...]  # (test name, file, error)


def load_tests(options: RunOptions) -> LoadedTests:
    tests: list[TestDef] = []
    problems: list[tuple[str, Path, TestDefError]] = []
    seen: dict[str, Path] = {}
    paths = discover(list(options.tests))
    check_test_names(options.test_names, {p.stem for p in paths}, options.tests)
    if options.shard is not None:
        chosen = set(options.shard.files)
        paths = [p for p in paths if p in chosen]
    for path in paths:
        name = path.stem
        if options.test_names and name not in options.test_names:
            continue
        try:
            test = load_test(path)
        except TestDefError as e:
            problems.append((name, path, e))
            continue
        if test.required_ram_bytes is not None and not test.skip_reason:
            test = replace(test, skip_reason=ram_shortfall(test.required_ram_bytes, machine_ram()))
        if test.name in seen:
            problems.append((test.name, path, _duplicate(test, seen[test.name])))
            continue
        seen[test.name] = path
        tests.append(test)
    check_query_indices(options.query_indices, tests, named=bool(options.test_names))
    return LoadedTests(tuple(tests), tuple(problems))


def machine_ram() -> int:
    """The machine's physical RAM in bytes, as <ram_size> means it."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_test_names(
    wanted: Collection[str], names: Collection[str], where: Sequence[Path]
) -> None:
    """Every --test names a test file (its stem) of the --tests paths; the closest names when
    one does not."""
    unknown = sorted(set(wanted) - set(names))
    if not unknown:
        return
    guesses = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(names), n=3)
        guesses.append(f"--test {name}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    paths = ", ".join(str(p) for p in where)
    raise ChperfError(
        f"no such test in {paths}: {'; '.join(guesses)}",
        hint="a test's name is its file name without .xml; check --test and --tests",
    )


def check_query_indices(indices: Collection[int], tests: Sequence[TestDef], named: bool) -> None:
    """Every --query-index is a query of each test named with --test, or, without --test, of
    at least one loaded test."""
    if not indices or not tests:
        return
    for index in sorted(indices):
        lacking = [t for t in tests if index not in {q.index for q in t.queries}]
        if lacking and (named or len(lacking) == len(tests)):
            counts = ", ".join(f"{t.name} has {_queries(t)}" for t in lacking[:5])
            raise ChperfError(
                f"--query-index {index}: no such query ({counts})",
                hint="query indices count from 0 in the order of the test's <query> elements",
            )


def _queries(test: TestDef) -> str:
    indices = sorted(q.index for q in test.queries)
    if len(indices) < 2:
        return f"query {indices[0]} only" if indices else "no queries"
    return f"{len(indices)} queries, {indices[0]} to {indices[-1]}"


def _duplicate(test: TestDef, first: Path) -> TestDefError:
    return TestDefError(
        Location(test.path, 1),
        f"duplicate test name {test.name!r} (also {first})",
        hint="test names are file names; rename one of the files",
    )


def selected_queries(test: TestDef, options: RunOptions) -> tuple[TestQuery, ...]:
    if not options.query_indices:
        return test.queries
    return tuple(q for q in test.queries if q.index in options.query_indices)
