"""The `<load>` element of a test (docs/load.md): the test's `<query>` elements become a query
mix that concurrent clients run for a fixed time, in blocks alternating between the servers.

    <load>
        <concurrency>1 2 4</concurrency>        clients, one level after another
        <block_seconds>1</block_seconds>         each block's duration (0.2 .. 60)
        <blocks>8</blocks>                       blocks a side per level (6 .. 40)
        <insert_table>t</insert_table>           optional: an insert test; the table is
                                                 truncated before every block, and its rows
                                                 and bytes are counted after it
    </load>

Format history: 1 -- first version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.testxml import Element, ElementError

# A block shorter than this holds too few queries of a 10-100 ms mix to give a throughput.
MIN_BLOCK_SECONDS = 0.2
MAX_BLOCK_SECONDS = 60.0
# The paired statistic (compare/blocked.py) reaches its 1% level from 6 pairs (3 blocks of
# two pairs: 2/216); 40 bounds a test's time.
MIN_BLOCKS = 6
MAX_BLOCKS = 40
DEFAULT_BLOCKS = 8
DEFAULT_BLOCK_SECONDS = 1.0
# More clients than this are threads a 2-core harness cannot drive honestly.
MAX_CONCURRENCY = 64
LOAD_ELEMENTS = frozenset({"concurrency", "block_seconds", "blocks", "insert_table"})


@dataclass(frozen=True)
class LoadSpec:
    concurrency: tuple[int, ...]  # increasing, without repeats
    block_seconds: float
    blocks: int  # per side and level
    insert_table: str = ""  # an insert test's target table; "" for a query mix
    line: int = 0  # of the <load> element

    @property
    def is_insert(self) -> bool:
        return bool(self.insert_table)

    def seconds(self) -> float:
        """The measured time of the whole test: both sides' blocks at every level."""
        return 2 * self.blocks * self.block_seconds * len(self.concurrency)


class LoadDefError(ElementError):
    """A bad <load> element."""


def parse_load(path: Path, root: Element) -> LoadSpec | None:
    """The test's <load> element, or None; LoadDefError names the line and the expected form."""
    elements = [c for c in root.children if c.tag == "load"]
    if not elements:
        return None
    if len(elements) > 1:
        raise LoadDefError(elements[1].line, "a second <load>", "a test has one <load>")
    load = elements[0]
    values: dict[str, Element] = {}
    for child in load.children:
        if child.tag not in LOAD_ELEMENTS:
            known = ", ".join(f"<{t}>" for t in sorted(LOAD_ELEMENTS))
            raise LoadDefError(child.line, f"unknown element <{child.tag}> in <load>", known)
        if child.tag in values:
            raise LoadDefError(child.line, f"<{child.tag}> twice in <load>", "write it once")
        values[child.tag] = child
    if "concurrency" not in values:
        raise LoadDefError(load.line, "<load> without <concurrency>", "e.g. <concurrency>1 4 16")
    return LoadSpec(
        concurrency=_concurrency(values["concurrency"]),
        block_seconds=_block_seconds(values.get("block_seconds")),
        blocks=_blocks(values.get("blocks")),
        insert_table=_table(values.get("insert_table")),
        line=load.line,
    )


def _concurrency(element: Element) -> tuple[int, ...]:
    words = element.text.split()
    hint = f"client counts from 1 to {MAX_CONCURRENCY}, separated by spaces: 1 4 16"
    if not words or not all(
        re.fullmatch(r"[0-9]{1,3}", w) and 1 <= int(w) <= MAX_CONCURRENCY for w in words
    ):
        raise LoadDefError(element.line, f"<concurrency>{element.text.strip()!r}", hint)
    levels = tuple(int(w) for w in words)
    if list(levels) != sorted(set(levels)):
        raise LoadDefError(element.line, "<concurrency> levels not increasing", hint)
    return levels


def _block_seconds(element: Element | None) -> float:
    if element is None:
        return DEFAULT_BLOCK_SECONDS
    raw = element.text.strip()
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not MIN_BLOCK_SECONDS <= value <= MAX_BLOCK_SECONDS:
        hint = f"seconds from {MIN_BLOCK_SECONDS:g} to {MAX_BLOCK_SECONDS:g}, e.g. 2"
        raise LoadDefError(element.line, f"<block_seconds>{raw!r}", hint)
    return value


def _blocks(element: Element | None) -> int:
    if element is None:
        return DEFAULT_BLOCKS
    raw = element.text.strip()
    if not re.fullmatch(r"[0-9]{1,3}", raw) or not MIN_BLOCKS <= int(raw) <= MAX_BLOCKS:
        hint = f"blocks a side from {MIN_BLOCKS} (the paired test's 1% level) to {MAX_BLOCKS}"
        raise LoadDefError(element.line, f"<blocks>{raw!r}", hint)
    return int(raw)


def _table(element: Element | None) -> str:
    if element is None:
        return ""
    name = element.text.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        hint = "a table name of the test's database: letters, digits and _"
        raise LoadDefError(element.line, f"<insert_table>{name!r}", hint)
    return name
