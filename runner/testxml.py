"""A minimal XML element tree that remembers line numbers (stdlib ElementTree does not), for
the test parser (runner/testdef.py). expat bounds entity expansion (billion laughs is an
error); nothing here recurses, so deep nesting cannot exhaust the stack."""

from __future__ import annotations

import xml.parsers.expat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)
    text_line: int = 0  # line where the element's own text starts
    source: Path | None = None  # the file it came from when not the test file (<include>)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


class XmlError(Exception):
    """Malformed XML, at a line of the document."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class ElementError(ValueError):
    """A bad element of an optional feature (<load>, <protocols>), raised by its parser;
    testdef.py turns it into a TestDefError at `line`."""

    def __init__(self, line: int, message: str, hint: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message
        self.hint = hint


def parse_xml(data: bytes) -> Element:
    """The document's root element; XmlError when it is not well-formed."""
    parser = xml.parsers.expat.ParserCreate()
    stack: list[Element] = []
    root: list[Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = Element(tag, attrs, parser.CurrentLineNumber)
        (stack[-1].children if stack else root).append(element)
        stack.append(element)

    def end(_tag: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            if not stack[-1].text_parts:
                stack[-1].text_line = parser.CurrentLineNumber
            stack[-1].text_parts.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        message = xml.parsers.expat.errors.messages[e.code]
        raise XmlError(e.lineno, f"malformed XML: {message} (column {e.offset + 1})") from e
    return root[0]


def walk(element: Element) -> Iterator[Element]:
    """Every element below `element`, depth first, in document order."""
    stack = list(reversed(element.children))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(reversed(child.children))
