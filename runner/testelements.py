"""The elements of a test file one at a time: settings (and the JSON file they may name),
substitutions, numeric attributes, and the text of a statement (inline or from a file).
runner/testdef.py puts them together; each problem is a TestDefError at the element's line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from artifacts.console import console_text
from artifacts.files import read_regular_file
from runner.substitution import MAX_EXPANDED_CHARS
from runner.testtypes import Location, TestDefError
from runner.testxml import Element, XmlError, parse_xml, walk

# A file a test reads (<query file>, <settings file>) larger than a whole test may expand to is
# a mistake (a data file, /dev/zero), and is not read into memory.
MAX_INCLUDED_FILE_BYTES = MAX_EXPANDED_CHARS


def _settings_file(path: Path, element: Element) -> list[tuple[str, str]]:
    """<settings file="x.json">: a JSON object of settings, relative to the test file; the
    element's own children come after it, so they win."""
    file = element.attrs.get("file")
    if file is None:
        return []
    source = path.parent / file
    location = located(path, element)
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


def parse_settings(path: Path, element: Element) -> list[tuple[str, str]]:
    settings = _settings_file(path, element)
    for child in element.children:
        if child.children:
            raise TestDefError(
                located(path, child),
                f"setting <{child.tag}> has child elements",
                hint="a setting is <name>value</name>",
            )
        settings.append((child.tag, child.text.strip()))
    return settings


def _only_child(path: Path, element: Element, tag: str) -> Element:
    found = [c for c in element.children if c.tag == tag]
    if len(found) != 1:
        raise TestDefError(
            located(path, element),
            f"<{element.tag}> needs exactly one <{tag}>, found {len(found)}",
        )
    return found[0]


def _parse_substitution(path: Path, element: Element) -> tuple[str, list[str]]:
    name = _only_child(path, element, "name").text.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise TestDefError(
            located(path, element),
            f"substitution name {name!r} is not an identifier",
        )
    wrappers = [c for c in element.children if c.tag == "values"]
    if not wrappers and any(c.tag == "value" for c in element.children):
        values_element = element  # <value> elements without a <values> wrapper
    else:
        values_element = _only_child(path, element, "values")
    # As written, spaces included, as ClickHouse's perf.py reads them: a value may end in the
    # space that keeps it apart from what follows its placeholder (`trim(BOTH 'x' FROM `).
    values = [v.text for v in values_element.children if v.tag == "value"]
    if not values:
        raise TestDefError(
            located(path, values_element),
            f"substitution {{{name}}} has no values",
            hint="add <value>...</value> elements or remove the substitution",
        )
    return name, values


def parse_substitutions(path: Path, element: Element) -> dict[str, list[str]]:
    substitutions: dict[str, list[str]] = {}
    for child in element.children:
        if child.tag != "substitution":
            raise TestDefError(
                located(path, child),
                f"unexpected <{child.tag}> in <substitutions>",
                hint="expected <substitution> elements",
            )
        name, values = _parse_substitution(path, child)
        if name in substitutions:
            raise TestDefError(located(path, child), f"substitution {{{name}}} declared twice")
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


def parse_threshold(path: Path, root: Element) -> float | None:
    """Changes up to this fraction are ignored; 1.0 or more: the test never fails the check."""
    return _number_attribute(
        path,
        root,
        "max_ignored_relative_change",
        positive=False,
        hint="write a relative change, e.g. 0.1 for 10% (1.0 or more: never fail on this test)",
    )


def flag(root: Element, name: str) -> bool:
    return root.attrs.get(name, "0").strip().lower() in ("1", "true", "yes")


def unprovided(root: Element) -> str:
    """Why the test cannot run here: it needs S3 storage, which chperf's servers do not have."""
    needs = [name for name in ("requires_s3", "requires_s3_read_dataset") if flag(root, name)]
    if not needs:
        return ""
    return f"needs S3 storage ({', '.join(needs)}=1), which chperf does not provide"


def parse_ram_size(path: Path, root: Element) -> int | None:
    """<preconditions><ram_size>BYTES</ram_size>: the RAM the machine must have; the largest
    when given more than once."""
    sizes = []
    for element in (c for p in root.children if p.tag == "preconditions" for c in p.children):
        if element.tag != "ram_size":
            continue
        text = element.text.strip()
        if not re.fullmatch(r"[0-9]{1,30}", text):
            raise TestDefError(
                located(path, element),
                f"<ram_size> {console_text(text, 40)!r} is not a whole number of bytes "
                "(at most 30 digits)",
                hint="write bytes, e.g. <ram_size>16000000000</ram_size>",
            )
        sizes.append(int(text))
    return max(sizes, default=None)


def ram_shortfall(required: int | None, available: int) -> str:
    """Why a test whose <ram_size> is `required` bytes cannot run on a machine with
    `available` bytes of RAM; "" when it can."""
    if required is None or required <= available:
        return ""
    return (
        f"precondition not met: needs {required / 1e9:.1f} GB of RAM (<ram_size>), "
        f"this machine has {available / 1e9:.1f} GB"
    )


def parse_max_query_seconds(path: Path, root: Element) -> float | None:
    return _number_attribute(
        path, root, "max_query_seconds", positive=True, hint="write seconds, e.g. 30"
    )


def statement_text(path: Path, element: Element) -> str:
    """The element's SQL: its text, or the file its file="..." names (relative to the test
    file), which must hold one statement."""
    file = element.attrs.get("file")
    if file is None:
        return element.text.strip()
    source = path.parent / file
    location = located(path, element)
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


def check_statement(path: Path, element: Element, sql: str) -> None:
    location = located(path, element)
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


def located(path: Path, element: Element, line: int | None = None) -> Location:
    """Where an element is: its line in the test file, or in the fragment it was included
    from."""
    return Location(element.source or path, element.line if line is None else line)


def expand_includes(path: Path, root: Element) -> None:
    """<include file="x.xml.inc"/> directly under <test>: the children of the file's
    <fragment> root take its place, in order (ClickHouse shares query lists between tests
    this way). The file is relative to the test file; a fragment does not include others."""
    children: list[Element] = []
    for child in root.children:
        if child.tag != "include":
            children.append(child)
            continue
        location = located(path, child)
        file = child.attrs.get("file")
        if not file:
            raise TestDefError(location, "<include> without a file attribute")
        source = path.parent / file
        text = _included_text(location, f"<include file={file!r}>", source)
        try:
            fragment = parse_xml(text.encode("utf-8"))
        except XmlError as e:
            raise TestDefError(Location(source, e.line), e.message) from e
        if fragment.tag != "fragment":
            raise TestDefError(
                Location(source, fragment.line),
                f"root element is <{fragment.tag}>, not <fragment>",
                hint="an included file holds <fragment> with the elements it adds to the test",
            )
        for element in [fragment, *walk(fragment)]:
            if element.tag == "include":
                raise TestDefError(
                    Location(source, element.line),
                    "<include> inside an included fragment is not supported",
                    hint="include every fragment from the test file itself",
                )
            element.source = source
        children.extend(fragment.children)
    root.children = children
