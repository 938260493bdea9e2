"""Test definitions in ClickHouse's tests/performance XML format (docs/tests.md).
Placeholders expand as runner/substitution.py says; an undeclared `{identifier}` is an error:
almost always a typo. A test that would expand past MAX_QUERIES_PER_TEST queries or
MAX_EXPANDED_CHARS of SQL is an error naming the element, found before expanding it.
Single elements are parsed in runner/testelements.py; the parsed types and TestDefError, which
makes everything user-supplied in a message safe for the console, are in runner/testtypes.py.

Format history: 1 -- the ClickHouse format as of 2024, plus `Statement` locations for the linter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from artifacts.console import console_text
from artifacts.errors import ChperfError
from artifacts.files import read_regular_file
from runner.loaddef import parse_load
from runner.protocols import parse_protocols
from runner.substitution import (
    MAX_EXPANDED_CHARS,
    MAX_QUERIES_PER_TEST,
    combinations,
    expansion_size,
    over_limits,
    placeholders,
    render,
    render_name,
)
from runner.testelements import (
    check_statement,
    expand_includes,
    flag,
    located,
    parse_max_query_seconds,
    parse_ram_size,
    parse_settings,
    parse_substitutions,
    parse_threshold,
    statement_text,
    unprovided,
)
from runner.testtypes import (
    MAX_SHOWN_PATH_CHARS,
    Diagnostic,
    Location,
    Statement,
    TestDef,
    TestDefError,
    TestQuery,
)
from runner.testxml import Element, ElementError, XmlError, parse_xml, walk

# The types a test parses into live in runner/testtypes.py; these are their usual import path.
__all__ = [
    "TEST_ATTRIBUTES",
    "Diagnostic",
    "Location",
    "Statement",
    "TestDef",
    "TestDefError",
    "TestQuery",
    "check_unique_names",
    "discover",
    "load_test",
    "parse_test",
]

# A test file itself: the XML parser holds all of it; real tests are a few KB.
MAX_TEST_FILE_BYTES = MAX_EXPANDED_CHARS

T = TypeVar("T")


STATEMENT_KINDS = ("create_query", "fill_query", "query", "drop_query")
# Elements real ClickHouse tests still carry that no runner uses any more: how ClickHouse's old
# performance-test tool ran and scored a test.
LEGACY_ELEMENTS = frozenset({"stop_conditions", "main_metric", "type", "metrics"})
# Documentation inside the file: a test is named by its file name.
DESCRIPTIVE_ELEMENTS = frozenset({"name", "comment"})
PRECONDITIONS = frozenset({"table_exists", "ram_size"})
# Cache resets of ClickHouse's old performance-test tool, before each run.
LEGACY_PRECONDITIONS = frozenset({"flush_disk_cache", "reset_cpu_cache"})
KNOWN_ELEMENTS = frozenset(
    {"settings", "substitutions", "tags", "preconditions", "load", "protocols", *STATEMENT_KINDS}
)
TEST_ATTRIBUTES = frozenset(
    {
        "max_ignored_relative_change",
        "max_query_seconds",
        "run_all_queries",  # chperf always runs every query
        "profile_all_queries",
        "requires_s3",
        "requires_s3_read_dataset",
    }
)
# short: ClickHouse's old hint for short queries (run counts are adaptive here); tag: a display
# name; file: the statement's text in a file; do_not_check_in_pr: ClickHouse's CI only.
QUERY_ATTRIBUTES = frozenset({"short", "tag", "file", "do_not_check_in_pr"})


def _check_placeholders(
    path: Path, element: Element, substitutions: Mapping[str, Sequence[str]]
) -> None:
    for name, offset in placeholders(element.text):
        if name not in substitutions:
            line = element.text_line + element.text[:offset].count("\n")
            declared = ", ".join(sorted(substitutions)) or "none"
            raise TestDefError(
                located(path, element, line),
                f"unknown placeholder {{{name}}} in <{element.tag}>",
                hint=f"declare it in <substitutions> (declared: {declared}), "
                f"or write a literal brace as {{{{ and }}}}",
            )


def _warnings(path: Path, root: Element) -> list[Diagnostic]:
    found = []
    for name in sorted(set(root.attrs) - TEST_ATTRIBUTES):
        found.append(Diagnostic(Location(path, root.line), f"unknown attribute {name} ignored"))
    legacy = [child for child in root.children if child.tag in LEGACY_ELEMENTS]
    if legacy:
        names = ", ".join(dict.fromkeys(f"<{child.tag}>" for child in legacy))
        found.append(
            Diagnostic(
                located(path, legacy[0]),
                f"legacy {names} ignored: run counts and time limits are chperf's own "
                "(adaptive runs, --max-query-seconds, --query-budget, --test-budget, --budget)",
            )
        )
    for child in root.children:
        location = located(path, child)
        if child.tag in LEGACY_ELEMENTS:
            continue
        if child.tag == "name" and child.text.strip() != path.stem:
            named = " ".join(child.text.split())[:80]
            found.append(
                Diagnostic(location, f"<name> {named} ignored: the test is named {path.stem}")
            )
        elif child.tag in DESCRIPTIVE_ELEMENTS:
            continue
        elif child.tag not in KNOWN_ELEMENTS:
            found.append(Diagnostic(location, f"unknown element <{child.tag}> ignored"))
        elif child.tag == "preconditions":
            found.extend(_precondition_warnings(path, child))
        elif child.tag in STATEMENT_KINDS:
            for name in sorted(set(child.attrs) - QUERY_ATTRIBUTES):
                found.append(Diagnostic(location, f"unknown attribute {name} ignored"))
    return found


def _precondition_warnings(path: Path, preconditions: Element) -> list[Diagnostic]:
    found = []
    for c in preconditions.children:
        location = located(path, c)
        if c.tag in LEGACY_PRECONDITIONS:
            why = "chperf measures every query warm, after a prewarm run on each server"
            found.append(Diagnostic(location, f"legacy precondition <{c.tag}> ignored: {why}"))
        elif c.tag not in PRECONDITIONS:
            found.append(Diagnostic(location, f"unknown precondition <{c.tag}> ignored"))
    return found


def _statements(
    path: Path, root: Element, substitutions: Mapping[str, Sequence[str]], max_queries: int
) -> list[Statement]:
    statements: list[Statement] = []
    chars = 0
    for element in root.children:
        if element.tag not in STATEMENT_KINDS:
            continue
        text = statement_text(path, element)
        if not text:
            raise TestDefError(located(path, element), f"empty <{element.tag}>")
        check_statement(path, element, text)
        if "file" not in element.attrs:
            _check_placeholders(path, element, substitutions)
        location = located(path, element)
        tag = element.attrs.get("tag", "")
        from_file = "file" in element.attrs  # a file's text is used as it is
        template = ("" if from_file else text) + " " + tag
        size = expansion_size(template, substitutions)
        chars += size.chars + (size.count * len(text) if from_file else 0)
        problem = over_limits(element.tag, size, len(statements), chars, max_queries)
        if problem:
            raise TestDefError(
                location, problem, hint="use fewer values, or split the test into several files"
            )
        for values in combinations(template, substitutions):
            sql = text if from_file else render(text, values)
            statements.append(Statement(element.tag, sql, location, render_name(tag, values)))
    return statements


def _unused_substitutions(
    path: Path, root: Element, substitutions: Mapping[str, Sequence[str]]
) -> list[Diagnostic]:
    used = {
        name
        for element in root.children
        if element.tag in STATEMENT_KINDS
        for name, _ in placeholders(element.text)
    }
    return [
        Diagnostic(Location(path, root.line), f"substitution {{{name}}} is never used")
        for name in sorted(set(substitutions) - used)
    ]


def parse_test(path: Path, data: bytes, *, max_queries: int = MAX_QUERIES_PER_TEST) -> TestDef:
    """Parse a test from bytes; `path` names it (test name = file stem) and its locations.
    A test expanding to more than `max_queries` queries (of every kind) is an error."""
    try:
        root = parse_xml(data)
    except XmlError as e:
        raise TestDefError(Location(path, e.line), e.message) from e
    if root.tag != "test":
        raise TestDefError(Location(path, root.line), f"root element is <{root.tag}>, not <test>")
    expand_includes(path, root)
    settings: list[tuple[str, str]] = []
    substitutions: dict[str, list[str]] = {}
    for child in root.children:
        if child.tag == "settings":
            settings += parse_settings(path, child)
        elif child.tag == "substitutions":
            substitutions.update(parse_substitutions(path, child))
    statements = _statements(path, root, substitutions, max_queries)
    queries = [s for s in statements if s.kind == "query"]
    if not queries:
        raise TestDefError(
            Location(path, root.line), "no <query> in this test", hint="add at least one <query>"
        )
    tags = {t.text.strip() for t in walk(root) if t.tag == "tag"}
    required = tuple(
        t.text.strip()
        for p in root.children
        if p.tag == "preconditions"
        for t in p.children
        if t.tag == "table_exists" and t.text.strip()
    )
    return TestDef(
        name=path.stem,
        path=path,
        settings=tuple(settings),
        create_queries=tuple(s.sql for s in statements if s.kind == "create_query"),
        fill_queries=tuple(s.sql for s in statements if s.kind == "fill_query"),
        drop_queries=tuple(s.sql for s in statements if s.kind == "drop_query"),
        queries=tuple(TestQuery(i, q.sql, q.location, q.name) for i, q in enumerate(queries)),
        tags=frozenset(tags),
        max_ignored_relative_change=parse_threshold(path, root),
        max_query_seconds=parse_max_query_seconds(path, root),
        required_tables=required,
        required_ram_bytes=parse_ram_size(path, root),
        profile_all_queries=flag(root, "profile_all_queries"),
        skip_reason=unprovided(root),
        load=_optional(path, root, parse_load),
        protocols=_optional(path, root, parse_protocols),
        warnings=tuple(_warnings(path, root) + _unused_substitutions(path, root, substitutions)),
        statements=tuple(statements),
    )


def _optional(path: Path, root: Element, parse: Callable[[Path, Element], T]) -> T:
    """An optional feature's element (<load>, <protocols>): its ElementError at file:line."""
    try:
        return parse(path, root)
    except ElementError as e:
        raise TestDefError(Location(path, e.line), e.message, hint=e.hint) from e


def load_test(path: Path) -> TestDef:
    """Read and parse one test file; any problem is a TestDefError naming file:line."""
    try:
        data = read_regular_file(path, MAX_TEST_FILE_BYTES + 1)
    except OSError as e:
        raise TestDefError(
            Location(path, 0),
            f"cannot read test file: {e.strerror}",
            hint="check the path and mode",
        ) from e
    if len(data) > MAX_TEST_FILE_BYTES:
        raise TestDefError(Location(path, 0), f"larger than {MAX_TEST_FILE_BYTES:,} bytes")
    return parse_test(path, data)


def discover(paths: Sequence[Path]) -> list[Path]:
    """Test files named by `paths` (files, or directories of *.xml), sorted, without repeats.
    A directory's *.xml entry that is not itself a directory counts even when it cannot be
    read (a dangling symlink, a FIFO): loading it then names the problem instead of the test
    going missing unnoticed."""
    found: dict[Path, Path] = {}  # resolved -> as given, so a file named twice counts once
    for path in paths:
        if path.is_dir():
            files = [p for p in path.glob("*.xml") if not p.is_dir()]
        elif path.is_file():
            files = [path]
        else:
            raise ChperfError(
                f"{console_text(str(path), MAX_SHOWN_PATH_CHARS)}: no such test file or directory",
                hint="pass test files or directories of *.xml files",
            )
        for file in files:
            found.setdefault(file.resolve(), file)
    return sorted(found.values())


def check_unique_names(paths: Sequence[Path]) -> None:
    """Raise if two files share a test name (file stem): (test, index) must identify a query."""
    first_by_name: dict[str, Path] = {}
    for path in paths:
        first = first_by_name.setdefault(path.stem, path)
        if first != path:
            raise TestDefError(
                Location(path, 1),
                f"test name {path.stem!r} is also the name of {first}",
                hint="rename one of the files: the file stem is the test's identity",
            )
