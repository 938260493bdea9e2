"""Test definitions in ClickHouse's tests/performance XML format (docs/tests.md).
Placeholders expand as runner/substitution.py says; an undeclared `{identifier}` is an error:
almost always a typo. A test that would expand past MAX_QUERIES_PER_TEST queries or
MAX_EXPANDED_CHARS of SQL is an error naming the element, found before expanding it.
Everything user-supplied in a message (paths, file names) is made safe for the console here.

Format history: 1 -- the ClickHouse format as of 2024, plus `Statement` locations for the linter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from artifacts.console import console_text
from artifacts.errors import ChperfError
from artifacts.files import read_regular_file
from runner.loaddef import LoadSpec, parse_load
from runner.protocols import ProtocolSpec, parse_protocols
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
from runner.testxml import Element, ElementError, XmlError, parse_xml, walk

# Paths and messages as shown: long enough for any real path, bounded for a hostile one.
MAX_SHOWN_PATH_CHARS = 1000
MAX_MESSAGE_CHARS = 2000
# A file a test reads (<query file>, <settings file>) larger than a whole test may expand to is
# a mistake (a data file, /dev/zero), and is not read into memory.
MAX_INCLUDED_FILE_BYTES = MAX_EXPANDED_CHARS
# A test file itself: the XML parser holds all of it; real tests are a few KB.
MAX_TEST_FILE_BYTES = MAX_EXPANDED_CHARS

T = TypeVar("T")


@dataclass(frozen=True)
class Location:
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{console_text(str(self.path), MAX_SHOWN_PATH_CHARS)}:{self.line}"


@dataclass(frozen=True)
class Diagnostic:
    """A warning about a test file (an unknown legacy element, say) that does not stop it."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {console_text(self.message, MAX_MESSAGE_CHARS)}"


@dataclass(frozen=True)
class TestQuery:
    index: int  # position after substitution; (test, index) is the query's identity
    sql: str
    location: Location  # the <query> element it came from
    name: str = ""  # its tag="..." attribute, substituted: a display name


@dataclass(frozen=True)
class Statement:
    """One expanded statement of any kind, with the element it came from (for the linter)."""

    kind: str  # "create_query", "fill_query", "query" or "drop_query"
    sql: str
    location: Location
    name: str = ""  # a <query>'s tag="..." attribute, substituted


@dataclass(frozen=True)
class TestDef:
    name: str  # file stem, e.g. "sum" for sum.xml
    path: Path
    settings: tuple[tuple[str, str], ...]  # session settings, document order
    create_queries: tuple[str, ...]  # substituted, document order
    fill_queries: tuple[str, ...]
    drop_queries: tuple[str, ...]
    queries: tuple[TestQuery, ...]
    tags: frozenset[str]
    max_ignored_relative_change: float | None  # 1.0 or more: never fails the check
    warnings: tuple[Diagnostic, ...]
    # Every expanded statement in document order, create/fill interleaved as written.
    statements: tuple[Statement, ...] = ()
    max_query_seconds: float | None = None  # limit of each prewarm and measured run
    required_tables: tuple[str, ...] = ()  # <preconditions><table_exists>: else skipped
    profile_all_queries: bool = False  # profile every query, not only the changed ones
    skip_reason: str = ""  # needs what chperf does not provide (requires_s3): skipped
    load: LoadSpec | None = None  # <load>: the queries are a mix run by concurrent clients
    protocols: ProtocolSpec | None = None  # <protocols>: also timed per interface and phase

    @property
    def is_long(self) -> bool:
        return "long" in self.tags


class TestDefError(ChperfError):
    """A test file that cannot be used; names file:line."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, location: Location, message: str, hint: str = "") -> None:
        message = console_text(message, MAX_MESSAGE_CHARS)  # it may quote paths and values
        super().__init__(f"{location}: {message}", hint=hint)
        self.location = location
        self.reason = message


STATEMENT_KINDS = ("create_query", "fill_query", "query", "drop_query")
# Elements real ClickHouse tests still carry that no runner uses any more.
LEGACY_ELEMENTS = frozenset(
    {"stop_conditions", "main_metric", "type", "metrics", "name", "comment"}
)
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
UNSUPPORTED_ELEMENTS = {
    "include": "<include> fragments are not supported; inline the fragment",
}


def _check_placeholders(
    path: Path, element: Element, substitutions: Mapping[str, Sequence[str]]
) -> None:
    for name, offset in placeholders(element.text):
        if name not in substitutions:
            line = element.text_line + element.text[:offset].count("\n")
            declared = ", ".join(sorted(substitutions)) or "none"
            raise TestDefError(
                Location(path, line),
                f"unknown placeholder {{{name}}} in <{element.tag}>",
                hint=f"declare it in <substitutions> (declared: {declared}), "
                f"or write a literal brace as {{{{ and }}}}",
            )


def _settings_file(path: Path, element: Element) -> list[tuple[str, str]]:
    """<settings file="x.json">: a JSON object of settings, relative to the test file; the
    element's own children come after it, so they win."""
    file = element.attrs.get("file")
    if file is None:
        return []
    source = path.parent / file
    location = Location(path, element.line)
    text = _included_text(location, f"<settings file={file!r}>", source)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:  # RecursionError: nested too deep
        raise TestDefError(location, f"<settings file={file!r}>: {source}: not JSON: {e}") from e
    if not isinstance(data, dict) or not all(
        isinstance(v, str | int | float | bool) for v in data.values()
    ):
        raise TestDefError(
            location, f"<settings file={file!r}>: expected an object of setting: value"
        )
    return [(str(k), _setting_value(v)) for k, v in data.items()]


def _included_text(location: Location, what: str, source: Path) -> str:
    """The text of a file a test names (newlines as in text mode); any problem, a size over
    MAX_INCLUDED_FILE_BYTES included, is a TestDefError at the element's `location`."""
    try:
        data = read_regular_file(source, MAX_INCLUDED_FILE_BYTES + 1)
    except (OSError, ValueError) as e:  # ValueError: a NUL in the name
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise TestDefError(location, f"{what}: {source}: {reason}") from e
    if len(data) > MAX_INCLUDED_FILE_BYTES:
        raise TestDefError(
            location, f"{what}: {source}: larger than {MAX_INCLUDED_FILE_BYTES:,} bytes"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TestDefError(location, f"{what}: {source}: not UTF-8 text") from e
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _setting_value(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _parse_settings(path: Path, element: Element) -> list[tuple[str, str]]:
    settings = _settings_file(path, element)
    for child in element.children:
        if child.children:
            raise TestDefError(
                Location(path, child.line),
                f"setting <{child.tag}> has child elements",
                hint="a setting is <name>value</name>",
            )
        settings.append((child.tag, child.text.strip()))
    return settings


def _only_child(path: Path, element: Element, tag: str) -> Element:
    found = [c for c in element.children if c.tag == tag]
    if len(found) != 1:
        raise TestDefError(
            Location(path, element.line),
            f"<{element.tag}> needs exactly one <{tag}>, found {len(found)}",
        )
    return found[0]


def _parse_substitution(path: Path, element: Element) -> tuple[str, list[str]]:
    name = _only_child(path, element, "name").text.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise TestDefError(
            Location(path, element.line),
            f"substitution name {name!r} is not an identifier",
        )
    wrappers = [c for c in element.children if c.tag == "values"]
    if not wrappers and any(c.tag == "value" for c in element.children):
        values_element = element  # <value> elements without a <values> wrapper
    else:
        values_element = _only_child(path, element, "values")
    values = [v.text.strip() for v in values_element.children if v.tag == "value"]
    if not values:
        raise TestDefError(
            Location(path, values_element.line),
            f"substitution {{{name}}} has no values",
            hint="add <value>...</value> elements or remove the substitution",
        )
    return name, values


def _parse_substitutions(path: Path, element: Element) -> dict[str, list[str]]:
    substitutions: dict[str, list[str]] = {}
    for child in element.children:
        if child.tag != "substitution":
            raise TestDefError(
                Location(path, child.line),
                f"unexpected <{child.tag}> in <substitutions>",
                hint="expected <substitution> elements",
            )
        name, values = _parse_substitution(path, child)
        if name in substitutions:
            raise TestDefError(
                Location(path, child.line), f"substitution {{{name}}} declared twice"
            )
        substitutions[name] = values
    return substitutions


def _number_attribute(
    path: Path, root: Element, name: str, *, positive: bool, hint: str
) -> float | None:
    raw = root.attrs.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0.0 if positive else value >= 0.0) or value == float("inf"):
        kind = "a positive number" if positive else "a non-negative number"
        raise TestDefError(Location(path, root.line), f"{name}={raw!r} is not {kind}", hint=hint)
    return value


def _parse_threshold(path: Path, root: Element) -> float | None:
    """Changes up to this fraction are ignored; 1.0 or more: the test never fails the check."""
    return _number_attribute(
        path,
        root,
        "max_ignored_relative_change",
        positive=False,
        hint="write a relative change, e.g. 0.1 for 10% (1.0 or more: never fail on this test)",
    )


def _flag(root: Element, name: str) -> bool:
    return root.attrs.get(name, "0").strip().lower() in ("1", "true", "yes")


def _unprovided(root: Element) -> str:
    """Why the test cannot run here: it needs S3 storage, which chperf's servers do not have."""
    needs = [name for name in ("requires_s3", "requires_s3_read_dataset") if _flag(root, name)]
    if not needs:
        return ""
    return f"needs S3 storage ({', '.join(needs)}=1), which chperf does not provide"


def _parse_max_query_seconds(path: Path, root: Element) -> float | None:
    return _number_attribute(
        path, root, "max_query_seconds", positive=True, hint="write seconds, e.g. 30"
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
                Location(path, legacy[0].line),
                f"legacy {names} ignored: run counts and time limits are chperf's own "
                "(adaptive runs, --max-query-seconds, --query-budget, --test-budget, --budget)",
            )
        )
    for child in root.children:
        location = Location(path, child.line)
        if child.tag in LEGACY_ELEMENTS:
            continue
        if child.tag not in KNOWN_ELEMENTS:
            found.append(Diagnostic(location, f"unknown element <{child.tag}> ignored"))
        elif child.tag == "preconditions":
            found.extend(
                Diagnostic(Location(path, c.line), f"unknown precondition <{c.tag}> ignored")
                for c in child.children
                if c.tag != "table_exists"
            )
        elif child.tag in STATEMENT_KINDS:
            for name in sorted(set(child.attrs) - QUERY_ATTRIBUTES):
                found.append(Diagnostic(location, f"unknown attribute {name} ignored"))
    return found


def _statement_text(path: Path, element: Element) -> str:
    """The element's SQL: its text, or the file its file="..." names (relative to the test
    file), which must hold one statement."""
    file = element.attrs.get("file")
    if file is None:
        return element.text.strip()
    source = path.parent / file
    location = Location(path, element.line)
    if element.text.strip():
        raise TestDefError(location, f"<{element.tag}> has both file={file!r} and text")
    text = _included_text(location, f"<{element.tag} file={file!r}>", source).strip()
    text = text.rstrip(";").rstrip()
    if ";" in _without_literals(text).rstrip(";"):
        raise TestDefError(
            location,
            f"<{element.tag} file={file!r}> holds several statements",
            hint="chperf measures one statement per query: one file per statement",
        )
    return text


def _without_literals(sql: str) -> str:
    """SQL with quoted strings and comments removed, to look for statement separators."""
    return re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|--[^\n]*|/\*.*?\*/", "", sql, flags=re.S)


def _check_statement(path: Path, element: Element, sql: str) -> None:
    location = Location(path, element.line)
    if element.attrs.get("type") == "shell":
        raise TestDefError(
            location,
            'shell queries (<query type="shell">) are not supported',
            hint="measure SQL statements; a client-side benchmark needs its own tool",
        )
    if re.match(r"\s*CREATE\s+TEMPORARY\s+TABLE\b", sql, re.I):
        raise TestDefError(
            location,
            "CREATE TEMPORARY TABLE: a temporary table lives in one session, and chperf runs "
            "each statement in its own",
            hint="create a regular table and drop it in <drop_query>",
        )


def _statements(
    path: Path, root: Element, substitutions: Mapping[str, Sequence[str]], max_queries: int
) -> list[Statement]:
    statements: list[Statement] = []
    chars = 0
    for element in root.children:
        if element.tag not in STATEMENT_KINDS:
            continue
        text = _statement_text(path, element)
        if not text:
            raise TestDefError(Location(path, element.line), f"empty <{element.tag}>")
        _check_statement(path, element, text)
        if "file" not in element.attrs:
            _check_placeholders(path, element, substitutions)
        location = Location(path, element.line)
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
    settings: list[tuple[str, str]] = []
    substitutions: dict[str, list[str]] = {}
    for child in root.children:
        if child.tag in UNSUPPORTED_ELEMENTS:
            raise TestDefError(Location(path, child.line), UNSUPPORTED_ELEMENTS[child.tag])
        if child.tag == "settings":
            settings += _parse_settings(path, child)
        elif child.tag == "substitutions":
            substitutions.update(_parse_substitutions(path, child))
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
        max_ignored_relative_change=_parse_threshold(path, root),
        max_query_seconds=_parse_max_query_seconds(path, root),
        required_tables=required,
        profile_all_queries=_flag(root, "profile_all_queries"),
        skip_reason=_unprovided(root),
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
        raise TestDefError(Location(path, 0), f"cannot read test file: {e.strerror}") from e
    if len(data) > MAX_TEST_FILE_BYTES:
        raise TestDefError(Location(path, 0), f"larger than {MAX_TEST_FILE_BYTES:,} bytes")
    return parse_test(path, data)


def discover(paths: Sequence[Path]) -> list[Path]:
    """Test files named by `paths` (files, or directories of *.xml), sorted, without repeats."""
    found: dict[Path, Path] = {}  # resolved -> as given, so a file named twice counts once
    for path in paths:
        if path.is_dir():
            files = [p for p in path.glob("*.xml") if p.is_file()]
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
