"""Which tests and queries a run measures: the test files loaded, named filters applied."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.options import RunOptions
from runner.testdef import Location, TestDef, TestDefError, TestQuery, discover, load_test


@dataclass(frozen=True)
class LoadedTests:
    tests: tuple[TestDef, ...]
    problems: tuple[tuple[str, Path, TestDefError], ...]  # (test name, file, error)


def load_tests(options: RunOptions) -> LoadedTests:
    tests: list[TestDef] = []
    problems: list[tuple[str, Path, TestDefError]] = []
    seen: dict[str, Path] = {}
    paths = discover(list(options.tests))
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
        if test.name in seen:
            problems.append((test.name, path, _duplicate(test, seen[test.name])))
            continue
        seen[test.name] = path
        tests.append(test)
    return LoadedTests(tuple(tests), tuple(problems))


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
